"""The figure of a mesh placement (docs/chips.md): the chip's W x H tiles with their cores,
each used core coloured by the layer placed on it, and the spike packets per step on every
directed link between tiles, as `ternion map --json` (rates given or every rate 1) or `ternion
run --chip CHIP --json` (the run's own spikes) report them.

    fig = ternion.plot_mesh("map.json", "mesh.png")     # or ternion.map(...), Result.chip
    /usr/bin/python3 tools/plot_mesh.py map.json -o mesh.png [--model NAME] [--dpi N]

The numbers come from the placement JSON only: each layer's `cores` (core, tile,
`packets_sent`), `routing.links` (packets per directed link, the XY routes of every spike,
summing to `routing.hops`) and `routing.input_packets` (the host's, injected at tile (0, 0)).
`mesh_data` returns what the figure draws. matplotlib's object API is used, not pyplot, and
matplotlib is imported only when a figure is drawn.
"""
import json
import math
import os
import sys
import tempfile

from .plotting import PlotError

LINK_CMAP = "plasma"  # packets per link: dark (few) to orange (many), both visible on white
UNUSED = (0.85, 0.85, 0.85)  # a core no layer uses
MAX_WIDTH = 7.0  # points: the busiest link; the others in proportion
TILE = 0.64  # a tile's side, in units of the tile pitch; the rest is the links' lane


def _read(placement):
    """The mesh placement as a dict, from a path ("-": stdin), a dict (ternion.map, a run
    report with its `chip` section, Result.chip) or a Result. Returns (dict, path or None)."""
    where = None
    if hasattr(placement, "chip") and not isinstance(placement, dict):
        placement = placement.chip
        if placement is None:
            raise PlotError("the run has no chip placement (run with chip=...)")
    if isinstance(placement, (str, os.PathLike)):
        where = os.fspath(placement)
        try:
            text = sys.stdin.read() if where == "-" else open(where, encoding="utf-8").read()
            placement = json.loads(text)
        except OSError as e:
            raise PlotError(f"{where}: cannot read ({e.strerror})") from None
        except (UnicodeDecodeError, ValueError) as e:
            raise PlotError(f"{where}: not JSON ({str(e).splitlines()[0]})") from None
    if not isinstance(placement, dict):
        raise PlotError(f"{where or 'placement'}: expected a mesh placement (JSON object)")
    if "routing" not in placement and isinstance(placement.get("chip"), dict) and \
            "routing" in placement["chip"]:  # a run report: its chip section
        placement = dict(placement["chip"], model=placement.get("model"))
    return placement, where


def mesh_data(placement):
    """The numbers the figure draws, from a mesh placement (see plot_mesh for what it takes):
    {"chip", "width", "height", "cores_per_tile", "cores", "layers": [{"name", "kind",
    "cores"}], "core_layer": {core: layer index}, "core_packets": {core: packets sent per step},
    "links": [((x0, y0), (x1, y1), packets)], "link_sum", "hops", "packets", "input_packets",
    "cores_used", "tiles_used", "steps", "band_pj" (per inference, cumulative), "rates",
    "rates_source", "model"}. Raises PlotError for anything but a mesh placement with links."""
    j, where = _read(placement)
    name = where or "placement"
    chip = j.get("chip") if isinstance(j.get("chip"), dict) else {}
    if chip.get("family") != "mesh":
        raise PlotError(f"{name}: not a mesh placement (chip family {chip.get('family')!r}); the "
                        f"figure is drawn for loihi-like, generic-45nm and other mesh chips")
    routing = j.get("routing") or {}
    if "links" not in routing:
        raise PlotError(f"{name}: no packets per link (routing.links); written by an older "
                        f"ternion? map it again with `ternion map --json`")
    try:
        return _data(j, chip, routing)
    except (KeyError, TypeError, ValueError, IndexError) as e:
        raise PlotError(f"{name}: not a complete mesh placement ({type(e).__name__}: {e})") from None


def _rates_source(j):
    r = j["rates"]
    rates = f"input {r['input']:.3g}, hidden {r['hidden']:.3g}, output {r['output']:.3g}"
    if j.get("measured"):
        return f"rates measured by a run ({rates})"
    if j.get("rates_given"):
        return f"rates given ({rates})"
    return "every rate 1 (none given: the worst case)"


def _data(j, chip, routing):
    W, H = (int(v) for v in chip["mesh"])
    d = {"chip": chip["name"], "width": W, "height": H, "cores_per_tile": int(chip["cores_per_tile"]),
         "cores": int(chip["cores"]), "layers": [], "core_layer": {}, "core_packets": {},
         "links": [], "hops": float(routing["hops"]), "packets": float(routing["packets"]),
         "input_packets": float(routing.get("input_packets", 0)), "cores_used": int(j["cores_used"]),
         "tiles_used": int(j["tiles_used"]), "steps": int(j["latency"]["steps"]),
         "band_pj": dict(j["band"]["inference_pj"]), "rates": dict(j["rates"]),
         "rates_source": _rates_source(j), "model": j.get("model")}
    for i, layer in enumerate(j["layers"]):
        cores = [int(c["core"]) for c in layer["cores"]]
        d["layers"].append({"name": layer["name"], "kind": layer["kind"], "cores": cores})
        for c in layer["cores"]:
            d["core_layer"][int(c["core"])] = i
            d["core_packets"][int(c["core"])] = float(c.get("packets_sent", 0))
    for link in routing["links"]:
        d["links"].append((tuple(link["from"]), tuple(link["to"]), float(link["packets"])))
    d["link_sum"] = sum(p for _, _, p in d["links"])
    return d


def layer_colours(n):
    """n distinct colours, none of them grey (grey is an unused core)."""
    from matplotlib import colormaps

    pool = []
    for name in ("tab10", "tab20b", "tab20c", "tab20"):
        for c in colormaps[name].colors:
            if max(c[:3]) - min(c[:3]) > 0.08 and c[:3] not in pool:  # not grey
                pool.append(tuple(c[:3]))
    if n > len(pool):
        hsv = colormaps["hsv"]
        pool += [tuple(hsv(k / (n - len(pool)))[:3]) for k in range(n - len(pool))]
    return pool[:n]


def _core_box(d, core):
    """(x, y, side) of a core's square inside its tile, in data units (tile pitch 1)."""
    per = d["cores_per_tile"]
    cols = math.ceil(math.sqrt(per))
    rows = math.ceil(per / cols)
    tile, k = divmod(core, per)
    tx, ty = tile % d["width"], tile // d["width"]
    pad = 0.04
    side = (TILE - 2 * pad - 0.02 * (max(cols, rows) - 1)) / max(cols, rows)
    x0 = tx - TILE / 2 + pad + (k % cols) * (side + 0.02)
    y0 = ty - TILE / 2 + pad + (k // cols) * (side + 0.02)
    return x0, y0, side


def _short(v):
    for div, unit in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(v) >= div:
            return f"{v / div:.3g}{unit}"
    return f"{v:.3g}"


def _draw_cores(ax, d, colours):
    from matplotlib.patches import Rectangle

    per = d["cores_per_tile"]
    fs = max(3.5, min(7.0, 11.0 / math.ceil(math.sqrt(per))))
    for t in range(d["width"] * d["height"]):
        tx, ty = t % d["width"], t // d["width"]
        ax.add_patch(Rectangle((tx - TILE / 2, ty - TILE / 2), TILE, TILE, facecolor="white",
                               edgecolor="0.35", linewidth=0.8, zorder=2))
        for k in range(t * per, (t + 1) * per):
            x0, y0, side = _core_box(d, k)
            layer = d["core_layer"].get(k)
            colour = UNUSED if layer is None else colours[layer]
            ax.add_patch(Rectangle((x0, y0), side, side, facecolor=colour, edgecolor="white",
                                   linewidth=0.4, zorder=3, gid=f"core {k}"))
            label = str(k) if layer is None else f"{k}\n{_short(d['core_packets'].get(k, 0))}"
            dark = 0.299 * colour[0] + 0.587 * colour[1] + 0.114 * colour[2] < 0.45
            ax.text(x0 + side / 2, y0 + side / 2, label, ha="center", va="center", fontsize=fs,
                    color="0.55" if layer is None else "white" if dark else "black", zorder=4,
                    linespacing=0.9)


def _draw_links(ax, d):
    """Each directed link as an arrow beside the line between its tiles (keeping to the right
    of its direction), its width and colour the packets per step; links without traffic a
    thin grey line. Returns the colour scale."""
    from matplotlib.cm import ScalarMappable
    from matplotlib.colors import Normalize
    from matplotlib.patches import FancyArrowPatch

    top = max((p for _, _, p in d["links"]), default=0)
    norm, cmap = Normalize(0, top if top > 0 else 1), _link_cmap()
    for (x0, y0), (x1, y1), p in d["links"]:
        ux, uy = x1 - x0, y1 - y0
        off = 0.08 * TILE
        sx, sy = x0 + ux * (TILE / 2 + 0.02) - uy * off, y0 + uy * (TILE / 2 + 0.02) + ux * off
        ex, ey = x1 - ux * (TILE / 2 + 0.02) - uy * off, y1 - uy * (TILE / 2 + 0.02) + ux * off
        if p <= 0:
            ax.plot([sx, ex], [sy, ey], color="0.85", linewidth=0.5, zorder=1)
            continue
        w = 0.8 + (MAX_WIDTH - 0.8) * p / top
        ax.add_patch(FancyArrowPatch((sx, sy), (ex, ey), arrowstyle="-|>", linewidth=w,
                                     mutation_scale=6 + 0.9 * w, color=cmap(norm(p)),
                                     shrinkA=0, shrinkB=0, zorder=5,
                                     gid=f"link {x0},{y0}->{x1},{y1}: {p:g}"))
    return ScalarMappable(norm=norm, cmap=cmap)


def _link_cmap():
    from matplotlib import colormaps
    from matplotlib.colors import ListedColormap

    base = colormaps[LINK_CMAP]
    return ListedColormap([base(0.05 + 0.8 * k / 255) for k in range(256)])  # no pale yellow


def _title(d, model):
    band = d["band_pj"]
    uj = band["static"] * 1e-6
    who = model or d["model"] or "model"
    return (f"{os.path.basename(str(who))} on {d['chip']}: {d['cores_used']} of {d['cores']} cores "
            f"on {d['tiles_used']} tiles ({d['width']} x {d['height']} tiles x {d['cores_per_tile']})\n"
            f"energy per inference of {d['steps']} step(s), the band's total (+static): {uj:.4g} µJ "
            f"(ops {band['ops'] * 1e-6:.4g}, +memory {band['memory'] * 1e-6:.4g}, "
            f"+routing {band['routing'] * 1e-6:.4g})\n"
            f"{d['rates_source']}; per step {_short(d['packets'])} packets, {_short(d['hops'])} "
            f"link crossings (XY routes)")


def _legend(ax, d, colours):
    from matplotlib.patches import Patch

    def span(cores):
        return str(cores[0]) if len(cores) == 1 else f"{cores[0]}-{cores[-1]}" \
            if cores == list(range(cores[0], cores[-1] + 1)) else ",".join(map(str, cores))

    handles = [Patch(facecolor=colours[i], label=f"{L['name']} ({L['kind']}): cores {span(L['cores'])}")
               for i, L in enumerate(d["layers"]) if L["cores"]]
    handles.append(Patch(facecolor=UNUSED, label="unused core"))
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=7,
              title="layer (kind): cores\n(in a core: its number and\nthe packets it sends a step)",
              title_fontsize=7, frameon=False)


def figure(placement, *, model=None):
    """The mesh figure of `placement` (see plot_mesh) as a matplotlib Figure, not written."""
    from matplotlib.figure import Figure

    d = mesh_data(placement)
    W, H = d["width"], d["height"]
    inch = min(1.15, 20 / W, 14 / H)  # per tile; a large mesh stays under about 24 x 16 inches
    fig = Figure(figsize=(inch * W + 4.2, inch * H + 1.6), layout="constrained")
    ax = fig.add_subplot()
    colours = layer_colours(len(d["layers"]))
    _draw_cores(ax, d, colours)
    scale = _draw_links(ax, d)
    if d["input_packets"] > 0:
        ax.annotate(f"input\n{_short(d['input_packets'])}", xy=(-TILE / 2, 0), xytext=(-0.92, 0),
                    ha="center", va="center", fontsize=6, zorder=5,
                    arrowprops=dict(arrowstyle="-|>", color="0.3", linewidth=1.0))
    ax.set_xlim(-1.0, W - 0.5)
    ax.set_ylim(H - 0.5, -0.5)  # tile 0 top left, tiles numbered row by row as text reads
    ax.set_aspect("equal")
    ax.set_xticks(range(W))
    ax.set_yticks(range(H))
    ax.set_xlabel("tile x")
    ax.set_ylabel("tile y")
    ax.tick_params(length=0, labelsize=7)
    for s in ax.spines.values():
        s.set_visible(False)
    fig.colorbar(scale, ax=ax, shrink=0.5, pad=0.01, location="bottom", aspect=40,
                 label="packets per step on a directed link (arrows keep to the right)")
    _legend(ax, d, colours)
    ax.set_title(_title(d, model), fontsize=8, loc="left")
    return fig


def write_png(fig, path, dpi, inputs=()):
    """Writes `fig` as a PNG at `path` as ternion writes its outputs (docs/reliability.md): a
    hidden temporary beside the target, created exclusively, renamed over it when complete; a
    target that is not a regular file, or that is one of `inputs`, is refused."""
    path = os.fspath(path)

    def check():
        if os.path.lexists(path) and not os.path.isfile(path):
            raise PlotError(f"{path}: not a regular file; refusing to replace it")
        for i in inputs:
            if i not in (None, "-") and os.path.exists(path) and os.path.exists(i) and \
                    os.path.samefile(path, i):
                raise PlotError(f"{path}: is the input {i}; refusing to overwrite it")
    check()
    folder, name = os.path.split(os.path.abspath(path))
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{name}.tmp-", dir=folder)  # O_EXCL, random suffix
    except OSError as e:
        raise PlotError(f"{path}: cannot create a file in {folder} ({e.strerror})") from None
    try:
        try:
            with os.fdopen(fd, "wb") as f:
                fig.savefig(f, format="png", dpi=dpi)
        except OSError as e:
            raise PlotError(f"{path}: write failed ({e.strerror or e}; disk full?)") from None
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp made it 0600
        check()
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def plot_mesh(placement, out=None, *, model=None, dpi=100):
    """Draws a mesh placement and returns the matplotlib Figure; writes it as a PNG at `out`
    unless None.

    placement  a `ternion map --json` or `ternion run --chip CHIP --json` file (a path; "-":
               stdin), the dict of ternion.map(..., chip) or of a run report, or a Result of
               ternion.run(..., chip=...)
    out        the PNG's path (atomic: a hidden temporary beside it, renamed when complete)
    model      the name in the title (default: the placement's `model`)
    dpi        resolution of the PNG

    Raises PlotError (a ValueError) with a one-line message for anything but a mesh placement
    with packets per link, and for an output that is not a regular file or is the input."""
    fig = figure(placement, model=model)
    if out is not None:
        src = placement if isinstance(placement, (str, os.PathLike)) else None
        write_png(fig, out, dpi, inputs=(None if src is None else os.fspath(src),))
    return fig


def main(argv=None, prog="plot_mesh"):
    """The command line of tools/plot_mesh.py (installed as share/ternion/plot_mesh.py)."""
    import argparse

    class Parser(argparse.ArgumentParser):
        def error(self, message):  # one line and exit 1, like ternion's own errors
            print(f"{self.prog}: {message}", file=sys.stderr)
            sys.exit(1)

    ap = Parser(prog=prog, description="Draws a mesh placement (ternion map --json, or ternion "
                                       "run --chip --json) as a PNG: cores by layer, packets per link.")
    ap.add_argument("placement", help="the JSON file, or - for stdin")
    ap.add_argument("-o", "--out", required=True, help="the PNG to write")
    ap.add_argument("--model", help="the model's name in the title (default: the JSON's)")
    ap.add_argument("--dpi", type=int, default=100)
    a = ap.parse_args(argv)
    try:
        plot_mesh(a.placement, a.out, model=a.model, dpi=a.dpi)
    except PlotError as e:
        print(f"{prog}: {e}", file=sys.stderr)
        return 1
    print(a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
