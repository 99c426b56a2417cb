#!/usr/bin/env python3
"""The figure of a mesh placement (tools/plot_mesh.py, ternion.plot_mesh; docs/chips.md): the
bundled BSA digits Transformer on loihi-like and generic-45nm, from `ternion map --json` and
from a run's own spikes (`ternion run --chip --json`, read from stdin).

Checked: the files are PNGs of a sensible size; the numbers the figure is drawn from
(`routing.links`, each core's `packets_sent`, `routing.input_packets`) add up to the report's
totals (packets x hops); the packets per link equal an independent recount of the XY routes
on a 2 x 2 mesh; the figure has one colour per layer placed, grey unused cores and an arrow per
link with traffic; the output rules (a non-regular target, the input as output, a missing
folder) and bad inputs are one error line each.
"""
import importlib.util
import json
import os
import shutil
import subprocess
import sys

import numpy as np

from harness import TERNION, finish, path, run, test
from nirfile import Nir

if importlib.util.find_spec("matplotlib") is None:
    print("skipped: no matplotlib (python3-matplotlib)")
    sys.exit(77)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "tools", "plot_mesh.py")
sys.path.insert(0, os.path.join(ROOT, "python"))  # the source tree's package, compiled part unused
import ternion  # noqa: E402
from ternion import mesh_plot  # noqa: E402

BUNDLED = os.path.join(ROOT, "models", "bundled", "bsa_digits.h5")
DIGITS = os.path.join(ROOT, "models", "bundled", "digits_test.h5")
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def plot_cli(*args, script=SCRIPT, stdin=None, cwd=None, env=None):
    return subprocess.run(["/usr/bin/python3", script, *map(str, args)], capture_output=True,
                          text=True, input=stdin, cwd=cwd, env=env)


def map_json(model, chip, *extra, name=None):
    """`ternion map --json` written to a file; (its path, the placement)."""
    out = path(name or f"{os.path.basename(model)}_{os.path.basename(chip)}.json")
    p = run("map", model, "--chip", chip, "--json", *extra)
    open(out, "w").write(p.stdout)
    return out, json.loads(p.stdout)


def png_size(png):
    import matplotlib.image

    assert open(png, "rb").read(8) == PNG_MAGIC, png
    h, w = matplotlib.image.imread(png).shape[:2]
    return w, h


def check_totals(j):
    """What the figure draws, against the report's own totals."""
    d = mesh_plot.mesh_data(j)
    r = j["routing"]
    assert abs(d["link_sum"] - r["hops"]) <= 1e-9 * max(1.0, r["hops"]), (d["link_sum"], r["hops"])
    sent = sum(c["packets_sent"] for layer in j["layers"] for c in layer["cores"])
    assert abs(sent + r["input_packets"] - r["packets"]) <= 1e-9 * max(1.0, r["packets"])
    W, H = j["chip"]["mesh"]
    assert len(r["links"]) == 2 * ((W - 1) * H + W * (H - 1))  # every directed link, once
    for link in r["links"]:
        (x0, y0), (x1, y1) = link["from"], link["to"]
        assert abs(x1 - x0) + abs(y1 - y0) == 1 and link["packets"] >= 0, link
    assert len(d["core_layer"]) == j["cores_used"]
    return d


def check_figure(fig, d):
    """One legend colour per layer placed (and grey for unused cores), every core's square
    coloured by its layer, an arrow per link with traffic."""
    from matplotlib.colors import to_rgb

    ax = fig.axes[0]
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    placed = [layer for layer in d["layers"] if layer["cores"]]
    assert len(labels) == len(placed) + 1 and labels[-1] == "unused core", labels
    assert [s.split(" (")[0] for s in labels[:-1]] == [layer["name"] for layer in placed]
    colours = {}
    for p in ax.patches:
        gid = p.get_gid() or ""
        if gid.startswith("core "):
            colours[int(gid.split()[1])] = to_rgb(p.get_facecolor())
    assert len(colours) == d["cores"], len(colours)
    used = {colours[k] for k in d["core_layer"]}
    assert len(used) == len(placed), (len(used), len(placed))
    unused = {colours[k] for k in colours if k not in d["core_layer"]}
    assert unused <= {mesh_plot.UNUSED} and not used & unused
    for k, layer in d["core_layer"].items():
        assert colours[k] == colours[d["layers"][layer]["cores"][0]], k
    arrows = [p.get_gid() for p in ax.patches if (p.get_gid() or "").startswith("link ")]
    assert len(arrows) == sum(1 for *_, p in d["links"] if p > 0) > 0
    drawn = sum(float(g.rsplit(": ", 1)[1]) for g in arrows)
    assert abs(drawn - d["hops"]) <= 1e-6 * d["hops"], (drawn, d["hops"])


@test
def bundled_model_on_both_mesh_chips_draws_a_png_from_the_reports_numbers():
    for chip, tiles, cpt in (("loihi-like", (8, 4), 4), ("generic-45nm", (8, 8), 1)):
        src, j = map_json(BUNDLED, chip)
        png = path(f"mesh_{chip}.png")
        p = plot_cli(src, "-o", png)
        assert p.returncode == 0 and p.stdout.strip() == png, (p.returncode, p.stderr)
        w, h = png_size(png)
        assert 900 <= w <= 2000 and 500 <= h <= 1600, (chip, w, h)
        assert 20_000 < os.path.getsize(png) < 400_000, os.path.getsize(png)
        d = check_totals(j)
        assert (d["width"], d["height"], d["cores_per_tile"]) == (*tiles, cpt)
        assert len(d["layers"]) == 10 and d["cores_used"] == {"loihi-like": 23, "generic-45nm": 22}[chip]
        fig = ternion.plot_mesh(src, None)
        check_figure(fig, d)
        title = fig.axes[0].get_title(loc="left")
        band = j["band"]["inference_pj"]["static"] * 1e-6
        for part in ("bsa_digits.h5", chip, f"{d['cores_used']} of {d['cores']} cores",
                     f"{band:.4g} µJ", "every rate 1"):
            assert part in title, (part, title)
        # No rows below the used tiles carry traffic: the layers sit on the first tiles.
        rows = {y for (_, y), (_, y1), p in d["links"] if p > 0 for y in (y, y1)}
        assert max(rows) <= (d["tiles_used"] - 1) // d["width"], rows


@test
def a_runs_own_traffic_from_stdin():
    p = run("run", BUNDLED, "--input", DIGITS, "--samples", 20, "--chip", "loihi-like", "--json",
            "--no-progress")
    report = json.loads(p.stdout)
    png = path("mesh_run.png")
    q = plot_cli("-", "-o", png, stdin=p.stdout)
    assert q.returncode == 0, q.stderr
    png_size(png)
    d = check_totals(report["chip"])
    fig = ternion.plot_mesh(report, None)  # a run report: its chip section
    check_figure(fig, d)
    title = fig.axes[0].get_title(loc="left")
    assert "rates measured by a run" in title and "4 step(s)" in title, title
    assert mesh_plot.mesh_data(report)["link_sum"] < mesh_plot.mesh_data(
        map_json(BUNDLED, "loihi-like")[1])["link_sum"]  # measured rates below 1


def chain_2x2():
    """Input [6] -> Linear 10 -> LIF -> Linear 7 -> LIF -> Output on a 2 x 2 mesh of 2 cores a
    tile and 4 neurons a core: l0 on cores 0-2, l1 on cores 3-4."""
    c = json.load(open(os.path.join(ROOT, "hw", "chips", "loihi-like.json")))
    c["name"] = "mesh2"
    c["mesh"].update(width=2, height=2, cores_per_tile=2)
    c["core"].update(neurons=4, synapse_memory_bytes=1 << 20, state_memory_bytes=1 << 20,
                     max_fanin=1 << 20, max_fanout=1 << 20)
    json.dump(c, open(path("mesh2.json"), "w"))
    f = np.float32
    lif = (lambda n: dict(tau=np.full(n, 0.02, f), r=np.ones(n, f), v_leak=np.zeros(n, f),
                          v_threshold=np.ones(n, f)))
    (Nir().node("input", "Input", shape=np.array([6]))
     .node("l0", "Linear", weight=np.ones((10, 6), f)).node("n0", "LIF", **lif(10))
     .node("l1", "Linear", weight=np.ones((7, 10), f)).node("n1", "LIF", **lif(7))
     .node("output", "Output", shape=np.array([7]))
     .edge("input", "l0").edge("l0", "n0").edge("n0", "l1").edge("l1", "n1").edge("n1", "output")
     .write(path("m2.h5")))
    return map_json(path("m2.h5"), path("mesh2.json"), "--rates", "0.5,0.25,0.125", name="m2.json")


@test
def packets_per_link_on_a_2x2_mesh_equal_an_independent_count():
    src, j = chain_2x2()
    W = 2

    def xy(core):
        t = core // 2
        return t % W, t // W

    dest = {}
    for layer in j["layers"]:
        for s in layer["sources"]:
            dest.setdefault(s, set()).update(c["core"] for c in layer["cores"])
    want = {}

    def send(start, spikes, targets):  # x first along the source's row, then y
        for d in targets:
            (x, y), (dx, dy) = start, xy(d)
            while x != dx:
                nx = x + (1 if dx > x else -1)
                want[(x, y), (nx, y)] = want.get(((x, y), (nx, y)), 0) + spikes
                x = nx
            while y != dy:
                ny = y + (1 if dy > y else -1)
                want[(x, y), (x, ny)] = want.get(((x, y), (x, ny)), 0) + spikes
                y = ny

    send((0, 0), j["rates"]["input"] * j["input_neurons"], dest["input"])
    for layer in j["layers"]:
        for c in layer["cores"]:
            send(xy(c["core"]), layer["rate_out"] * c["out_neurons"], dest.get(layer["name"], ()))
    got = {(tuple(link["from"]), tuple(link["to"])): link["packets"] for link in j["routing"]["links"]}
    assert set(got) == {((0, 0), (1, 0)), ((1, 0), (0, 0)), ((0, 1), (1, 1)), ((1, 1), (0, 1)),
                        ((0, 0), (0, 1)), ((0, 1), (0, 0)), ((1, 0), (1, 1)), ((1, 1), (1, 0))}
    for k, v in got.items():
        assert abs(v - want.get(k, 0)) < 1e-12, (k, v, want.get(k, 0))
    # By hand: the input (6 x 0.5 a step) from tile (0, 0) to cores 0, 1 (there) and 2 (tile
    # (1, 0)); l0's 10 x 0.25 to core 3 (tile (1, 0)) and 4 (tile (0, 1)): cores 0 and 1 send
    # 2 each over (0,0)->(1,0) and (0,0)->(0,1), core 2 (tile (1, 0)) 0.5 over (1,0)->(0,0)
    # then (0,0)->(0,1).
    assert got[(0, 0), (1, 0)] == 3 + 2 and got[(1, 0), (0, 0)] == 0.5
    assert got[(0, 0), (0, 1)] == 2 + 0.5
    check_totals(j)
    png = path("m2.png")
    assert plot_cli(src, "-o", png, "--model", "chain").returncode == 0
    fig = ternion.plot_mesh(j, None, model="chain")
    check_figure(fig, mesh_plot.mesh_data(j))
    assert fig.axes[0].get_title(loc="left").startswith("chain on mesh2: 5 of 8 cores")
    assert "rates given (input 0.5, hidden 0.25, output 0.125)" in fig.axes[0].get_title(loc="left")


def one_error(p, *needles):
    lines = [line for line in p.stderr.splitlines() if line.strip()]
    assert p.returncode == 1 and len(lines) == 1, (p.returncode, p.stderr)
    assert lines[0].startswith("plot_mesh: "), lines[0]
    for n in needles:
        assert n in lines[0], (n, lines[0])


@test
def outputs_follow_the_output_rules_and_bad_inputs_are_one_line():
    src, j = map_json(BUNDLED, "loihi-like")
    os.makedirs(path("adir"), exist_ok=True)
    os.symlink("/dev/null", path("null.png"))
    one_error(plot_cli(src, "-o", path("adir")), "adir", "not a regular file")
    one_error(plot_cli(src, "-o", path("null.png")), "null.png", "not a regular file")
    assert os.path.islink(path("null.png"))
    one_error(plot_cli(src, "-o", src), "is the input")
    os.link(src, path("hard.json"))
    one_error(plot_cli(src, "-o", path("hard.json")), "is the input")
    assert json.load(open(src)) == j
    one_error(plot_cli(src, "-o", path("nodir/mesh.png")), "nodir")
    # An existing PNG is replaced whole; no temporary is left beside it.
    open(path("old.png"), "w").write("old")
    assert plot_cli(src, "-o", path("old.png")).returncode == 0
    assert open(path("old.png"), "rb").read(8) == PNG_MAGIC
    assert not [f for f in os.listdir(path("")) if f.startswith(".old.png.tmp-")]
    open(path("text.json"), "w").write("not json\n")
    old = json.loads(json.dumps(j))
    del old["routing"]["links"]
    json.dump(old, open(path("old.json"), "w"))
    notmesh = json.loads(json.dumps(j))
    notmesh["chip"]["family"] = "dynapcnn"
    json.dump(notmesh, open(path("notmesh.json"), "w"))
    for args, needles in (([path("nothere.json")], ["nothere.json", "cannot read"]),
                          ([path("text.json")], ["text.json", "not JSON"]),
                          ([path("old.json")], ["old.json", "routing.links", "older ternion"]),
                          ([path("notmesh.json")], ["notmesh.json", "not a mesh placement"])):
        one_error(plot_cli(*args, "-o", path("bad.png")), *needles)
    one_error(plot_cli(src), "-o")


@test
def the_installed_script_finds_the_installed_package():
    prefix = path("prefix")
    pkg = os.path.join(prefix, "lib", f"python3.{sys.version_info.minor}", "dist-packages", "ternion")
    shutil.copytree(os.path.join(ROOT, "python", "ternion"), pkg)
    share = os.path.join(prefix, "share", "ternion")
    os.makedirs(share)
    for s in ("plot_mesh.py", "plot_trace.py"):
        shutil.copy(os.path.join(ROOT, "tools", s), share)
    src, _ = map_json(BUNDLED, "generic-45nm")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    p = plot_cli(src, "-o", "mesh.png", script=os.path.join(share, "plot_mesh.py"), cwd=prefix, env=env)
    assert p.returncode == 0, p.stderr
    png_size(os.path.join(prefix, "mesh.png"))


assert os.path.exists(TERNION), TERNION
finish()
