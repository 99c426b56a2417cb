"""Figures of a ternion trace (docs/traces.md), readable at any size.

    figs = ternion.plot("run.h5", "figs")      # {name: matplotlib Figure}, PNGs in figs/
    /usr/bin/python3 tools/plot_trace.py run.h5 --out figs [--sample K] [--nodes a,b]
        [--neurons 0,5,10-19] [--figures raster,membrane] [--time steps|ms] [--dpi N]

Figures, each drawn when the trace holds its data:
  raster            spikes of one sample, one panel per spiking node in graph order; exact
                    (+1 red, -1 blue) up to 800 steps x 150 neurons, above that a heat map of
                    spikes per (neuron group, time bin) whose title says the bin sizes
  rates             fraction of each node's neurons spiking per step, mean over all samples
                    (and over time bins above 500 steps)
  membrane          recorded membrane potential of a few neurons per node, one sample
                    (default: the most active neurons; --neurons picks them)
  energy            energy per inference per node, stacked by kind, ANN equivalent beside
  attention_<node>  attention scores and weights per head of one sample and step

Only what a figure draws is read: one sample row of spikes or membranes, event rows and grids
in blocks, binned with np.bincount. matplotlib's object API is used, not pyplot, so calling
this from a notebook or a GUI leaves the user's backend and figures alone.
Needs only Debian's python3-matplotlib, python3-h5py and python3-numpy.
"""
import argparse
import os
import sys

import numpy as np

FIGURES = ("raster", "rates", "membrane", "energy", "attention")
MAX_TICKS = 8  # MaxNLocator bins: at most about 10 labelled ticks on any numeric axis
RASTER_COLS = 800  # time bins per raster panel, about its width in pixels at dpi 90
RASTER_ROWS = 150  # neuron bins per raster panel, about its height in pixels
RATE_POINTS = 500  # the rates figure averages longer runs over time bins
DEFAULT_NEURONS = 4  # membrane neurons per node when none are given...
MEMBRANE_PANELS = 16  # ...fewer when there are many nodes, to keep about this many panels
PANEL_LINES = 6  # a panel per neuron up to this many neurons per node, one per node above
LEGEND_LINES = 12  # more lines than this get no legend
BLOCK_BYTES = 64 << 20  # grids and event rows are read in blocks of about this size


class PlotError(ValueError):
    """Bad input. The message is one line that names the file or the option."""


def _text(x):
    return x.decode() if isinstance(x, bytes) else str(x)


def nice(x):
    """Smallest 1, 2 or 5 times a power of ten at or above x: bin widths that read well."""
    x, k = max(1, int(np.ceil(x))), 1
    while True:
        for m in (1, 2, 5):
            if m * k >= x:
                return m * k
        k *= 10


def parse_indices(spec, what):
    """'0,3,10-19' (or a list of ints) -> sorted unique ints; PlotError naming `what`."""
    if not isinstance(spec, str):
        try:
            return sorted({int(i) for i in spec})
        except (TypeError, ValueError):
            raise PlotError(f"{what}: expected integers, got {spec!r}") from None
    out = set()
    for part in spec.split(","):
        a, _, b = part.strip().partition("-")
        try:
            lo, hi = int(a), int(b) if b else int(a)
        except ValueError:
            raise PlotError(f"{what} {spec}: '{part}' is not an index or a range a-b") from None
        if hi < lo:
            raise PlotError(f"{what} {spec}: range '{part}' is empty")
        out.update(range(lo, hi + 1))
    return sorted(out)


# --- node order ---------------------------------------------------------------------------

def graph_order(f, trace_path=None):
    """(node names in graph order, where the order came from): /ternion/node_order, which
    `ternion run --trace` writes in the engine's evaluation order; traces without it (HDF5 lists
    groups by name) fall back to alphabetical order, and figure titles say so."""
    groups = [f[p] for p in ("nodes", "ternion/energy", "ternion/ops", "ternion/attention") if p in f]
    names = sorted({n for g in groups for n in g})
    if "ternion/node_order" in f:
        order = [_text(n) for n in f["ternion/node_order"][()]]
        return [n for n in order if n in names] + [n for n in names if n not in order], "graph order"
    return names, "alphabetical order (the trace stores no node order)"


# --- reading ------------------------------------------------------------------------------

class Trace:
    """The parts of a trace file that the figures read: read on demand, one sample row at a time."""

    def __init__(self, path):
        import h5py

        self.path = os.fspath(path)
        if not os.path.isfile(self.path):
            raise PlotError(f"{self.path}: no such file")
        try:
            self.f = h5py.File(self.path, "r")
        except OSError as e:
            raise PlotError(f"{self.path}: not an HDF5 file ({e})") from None
        if _text(self.f.attrs.get("__type__", "")) != "NIRGraphData" or "nodes" not in self.f:
            self.f.close()
            raise PlotError(f"{self.path}: not a trace (root __type__ is not NIRGraphData)")
        self.order, self.order_source = graph_order(self.f, self.path)
        obs = {n: set(self.f["nodes"][n]["observables"]) if "observables" in self.f["nodes"][n] else set()
               for n in self.f["nodes"]}
        self.spiking = [n for n in self.order if "spikes" in obs.get(n, ())]
        self.membranes = [n for n in self.order if "v" in obs.get(n, ())]
        self._shape_and_time()
        self._events, self._counts = {}, {}  # per (node, row)

    def _shape_and_time(self):
        t = self.f["ternion"] if "ternion" in self.f else None
        first = next((self.obs(n, "spikes") for n in self.spiking), None) or \
            next((self.obs(n, "v") for n in self.membranes), None)
        self.dt = float(t.attrs["dt"]) if t is not None and "dt" in t.attrs else \
            float(first.attrs["dt"]) if first is not None else 0.001
        if t is not None and "timesteps" in t.attrs:
            self.T = int(t.attrs["timesteps"])
        elif first is not None:
            self.T = int(first["data"].shape[1]) if "data" in first else \
                int(round(float(first.attrs["t_max"]) / float(first.attrs["dt"])))
        else:
            self.T = 0
        if t is not None and "samples" in t:
            self.samples = t["samples"][()]
        else:
            rows = first[("data" if "data" in first else "idx")].shape[0] if first is not None else 0
            self.samples = np.arange(rows)
        self.rows = len(self.samples)

    def close(self):
        self.f.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def obs(self, node, what):
        return self.f["nodes"][node]["observables"][what]

    def n_neurons(self, node):
        o = self.obs(node, "spikes") if node in self.spiking else self.obs(node, "v")
        if "data" in o:
            return int(np.prod(o["data"].shape[2:], dtype=np.int64))
        return int(o.attrs["n_neurons"])

    def events(self, node, row):
        """One sample row's spikes of `node`: (step, neuron, value) int arrays in step order."""
        if (node, row) not in self._events:
            o = self.obs(node, "spikes")
            self._events[(node, row)] = _grid_events(o["data"], row) if "data" in o else \
                _row_events(o, row, float(o.attrs["dt"]), self.T)
        return self._events[(node, row)]

    def neuron_counts(self, node, row):
        """Spikes per neuron of one row, [n]."""
        if (node, row) not in self._counts:
            o = self.obs(node, "spikes")
            if (node, row) in self._events or "data" in o:
                idx = self.events(node, row)[1]
            else:  # events: the neuron indices alone are enough
                idx = o["idx"][row]
                idx = idx[idx >= 0]
            self._counts[(node, row)] = np.bincount(idx, minlength=self.n_neurons(node))
        return self._counts[(node, row)]

    def step_counts(self, node):
        """Spiking neurons per step summed over every row: (positive, negative), each [T]."""
        o = self.obs(node, "spikes")
        if "data" in o:
            return _grid_step_counts(o["data"], self.T)
        return _event_step_counts(o, float(o.attrs["dt"]), self.T)

    def membrane(self, node, row, neurons):
        """[T, len(neurons)] recorded membrane of the given neurons of one row."""
        return read_columns(self.obs(node, "v")["data"], row, neurons)


def read_columns(d, row, cols):
    """d[row, :, cols] of a [S, T, ...] dataset, trailing axes flattened: [T, len(cols)]."""
    cols = np.asarray(cols, np.int64)
    out = _columns_by_chunk(d, row, cols)
    if out is None:  # a layout the fast path does not know: read through h5py
        n = int(np.prod(d.shape[2:], dtype=np.int64))
        out = np.empty((d.shape[1], len(cols)), d.dtype)
        for t0, t1 in _blocks(d, n):
            out[t0:t1] = d[row, t0:t1].reshape(t1 - t0, n)[:, cols]
    return out


def _blocks(d, n):
    """Step ranges [t0, t1) of a [S, T, ...] dataset, about BLOCK_BYTES each, chunk-aligned."""
    T = d.shape[1]
    step = max(1, BLOCK_BYTES // max(1, n * d.dtype.itemsize))
    if d.chunks:  # whole chunks: each is decompressed once
        step = max(d.chunks[1], step // d.chunks[1] * d.chunks[1])
    return [(t0, min(T, t0 + step)) for t0 in range(0, T, step)]


def _columns_by_chunk(d, row, cols):
    """d[row, :, cols] (trailing axes flattened) as [T, len(cols)], or None when d's layout is
    not chunks spanning whole trailing rows, filtered by shuffle and deflate (how ternion writes
    them). A 20 000-neuron, 10 000-step membrane is 800 MB to inflate; h5py inflates one chunk
    at a time under its lock, so here the raw chunks are inflated on several threads (zlib lets
    go of the GIL) and only the bytes of the chosen columns are un-shuffled."""
    import zlib
    from concurrent.futures import ThreadPoolExecutor

    pl = d.id.get_create_plist()
    filters = [pl.get_filter(k)[0] for k in range(pl.get_nfilters())]
    if d.chunks is None or tuple(d.chunks[2:]) != tuple(d.shape[2:]) or filters not in ([2, 1], [1], []):
        return None
    c0, c1 = d.chunks[:2]
    n, es = int(np.prod(d.shape[2:], dtype=np.int64)), d.dtype.itemsize
    m = c0 * c1 * n  # elements per chunk
    shuffled = filters and filters[0] == 2

    def one(t0):
        mask, raw = d.id.read_direct_chunk((row - row % c0, t0) + (0,) * (d.ndim - 2))
        if mask:  # a filter was skipped for this chunk: not the layout assumed here
            raise LookupError
        buf = np.frombuffer(zlib.decompress(raw) if filters else raw, np.uint8)
        steps = (row % c0) * c1 + np.arange(min(c1, d.shape[1] - t0))
        e = (steps[:, None] * n + cols[None, :]).ravel()  # the wanted elements of the chunk
        # Shuffled, byte j of element e is at j * m + e; otherwise bytes are in element order.
        idx = np.arange(es)[None, :] * m + e[:, None] if shuffled else e[:, None] * es + np.arange(es)[None, :]
        return buf[idx].copy().view(d.dtype).reshape(-1, len(cols))

    try:
        with ThreadPoolExecutor(max_workers=min(8, os.cpu_count() or 2)) as pool:
            parts = list(pool.map(one, range(0, d.shape[1], c1)))
    except (LookupError, OSError, ValueError, zlib.error):
        return None
    return np.concatenate(parts) if parts else np.zeros((0, len(cols)), d.dtype)


def _grid_events(d, row):
    n = int(np.prod(d.shape[2:], dtype=np.int64))
    steps, idx, val = [], [], []
    for t0, t1 in _blocks(d, n):
        g = d[row, t0:t1].reshape(t1 - t0, n)
        s, i = np.nonzero(g)
        steps.append(s + t0)
        idx.append(i)
        val.append(g[s, i])
    cat = (lambda a, t: np.concatenate(a).astype(t)) if steps else (lambda a, t: np.zeros(0, t))
    return cat(steps, np.int64), cat(idx, np.int64), cat(val, np.int16)


def _row_events(o, row, dt, T):
    idx = o["idx"][row]
    keep = idx >= 0  # padding is idx -1, time +inf
    step = np.minimum(np.floor(o["time"][row][keep] / dt).astype(np.int64), max(T - 1, 0))
    val = o["value"][row][keep].astype(np.int16) if "value" in o else np.ones(keep.sum(), np.int16)
    return step, idx[keep].astype(np.int64), val


def _grid_step_counts(d, T):
    n = int(np.prod(d.shape[2:], dtype=np.int64))
    pos, neg = np.zeros(T, np.int64), np.zeros(T, np.int64)
    for row in range(d.shape[0]):
        for t0, t1 in _blocks(d, n):
            g = d[row, t0:t1].reshape(t1 - t0, n)
            pos[t0:t1] += (g > 0).sum(axis=1)
            neg[t0:t1] += (g < 0).sum(axis=1)
    return pos, neg


def _event_step_counts(o, dt, T):
    tim = o["time"]
    per = max(1, BLOCK_BYTES // max(1, 9 * tim.shape[1]))  # rows per block: 8 B time + 1 B value
    pos, neg = np.zeros(T, np.int64), np.zeros(T, np.int64)
    for r0 in range(0, tim.shape[0], per):
        t = tim[r0:r0 + per]
        keep = np.isfinite(t)
        steps = np.minimum(np.floor(t[keep] / dt).astype(np.int64), max(T - 1, 0))
        if "value" in o:
            v = o["value"][r0:r0 + per][keep]
            pos += np.bincount(steps[v > 0], minlength=T)
            neg += np.bincount(steps[v < 0], minlength=T)
        else:
            pos += np.bincount(steps, minlength=T)
    return pos, neg


def bin_spikes(step, idx, T, n, tb, nb):
    """Spikes per (group of nb neurons, bin of tb steps): int64 [ceil(n/nb), ceil(T/tb)]."""
    rows, cols = -(-n // nb), -(-T // tb)
    flat = (idx // nb) * cols + step // tb
    return np.bincount(flat, minlength=rows * cols).reshape(rows, cols)


# --- figures ------------------------------------------------------------------------------

class _Time:
    """The time axis: steps, or milliseconds from the trace's dt."""

    def __init__(self, unit, dt):
        self.ms = unit == "ms"
        self.scale = dt * 1e3 if self.ms else 1.0
        self.label = f"time (ms, dt = {dt * 1e3:g} ms)" if self.ms else "time step"


def _figure(w, h):
    from matplotlib.figure import Figure

    return Figure(figsize=(w, h), layout="constrained")


def _locator(nbins, integer=False):
    from matplotlib.ticker import MaxNLocator

    return MaxNLocator(nbins=nbins, integer=integer)


def _sparse_ticks(ax, x_integer=True, y_integer=True):
    ax.xaxis.set_major_locator(_locator(MAX_TICKS, x_integer))
    ax.yaxis.set_major_locator(_locator(MAX_TICKS, y_integer))
    ax.tick_params(labelsize=7)


def _panels(n, height, ratios=None):
    """A figure with n stacked panels sharing the time axis, `height` inches each on average
    (less when there are many), split by `ratios` when given."""
    each = min(height, max(0.7, 16.0 / max(n, 1)))
    fig = _figure(10, each * n + 0.9)
    axes = fig.subplots(n, 1, squeeze=False, sharex=True,
                        gridspec_kw={"height_ratios": ratios} if ratios else None)[:, 0]
    return fig, axes


def _sample_name(tr, row):
    return f"sample {int(tr.samples[row])}" + (f" (row {row} of the trace)" if row else "")


def raster_figure(tr, row, nodes, tm):
    """Spikes of one sample row, one panel per node."""
    # Panels grow with the log of the node's size: a 10-neuron node needs less room.
    ratios = [float(np.clip(np.log10(max(tr.n_neurons(n), 1)) + 1, 1.5, 4)) for n in nodes]
    fig, axes = _panels(len(nodes), 1.7, ratios)
    for ax, node in zip(axes, nodes):
        _raster_panel(fig, ax, tr, node, row, tm)
    axes[-1].set_xlabel(tm.label, fontsize=8)
    fig.suptitle(f"spikes of {_sample_name(tr, row)}; nodes in {tr.order_source}", fontsize=9)
    return fig


def _raster_panel(fig, ax, tr, node, row, tm):
    from matplotlib.colors import ListedColormap

    step, idx, val = tr.events(node, row)
    T, n = tr.T, tr.n_neurons(node)
    tb = 1 if T <= RASTER_COLS else nice(T / RASTER_COLS)
    nb = 1 if n <= RASTER_ROWS else nice(n / RASTER_ROWS)
    if tb == nb == 1:  # small enough to show every spike with its sign
        grid = np.zeros((n, T), np.int8)
        grid[idx, step] = np.clip(val, -1, 1)
        im = ax.imshow(grid, aspect="auto", interpolation="nearest", vmin=-1, vmax=1,
                       cmap=ListedColormap(["#2166ac", "#ffffff", "#b2182b"]),
                       extent=(0, T * tm.scale, n, 0))
        fig.colorbar(im, ax=ax, pad=0.01, ticks=[-1, 0, 1], fraction=0.03).ax.tick_params(labelsize=6)
        how = "every neuron and step, +1 red, -1 blue"
    else:  # one pixel per spike would drop most of them: count them per bin instead
        counts = bin_spikes(step, idx, T, n, tb, nb)
        rows, cols = counts.shape
        im = ax.imshow(counts, aspect="auto", interpolation="nearest", cmap="magma_r", vmin=0,
                       vmax=max(1, int(counts.max())), extent=(0, cols * tb * tm.scale, rows * nb, 0))
        cb = fig.colorbar(im, ax=ax, pad=0.01, fraction=0.03, ticks=_locator(4, integer=True))
        cb.set_label("spikes per bin", fontsize=6)
        cb.ax.tick_params(labelsize=6)
        what = "every neuron" if nb == 1 else f"neurons 0..{n - 1} binned by {nb}"
        when = "every step" if tb == 1 else f"steps binned by {tb}"
        how = f"{what}, {when}" + (" (+1 and -1 counted alike)" if (val < 0).any() else "")
    ax.set_xlim(0, T * tm.scale)
    ax.set_ylim(n, 0)
    ax.set_ylabel("neuron", fontsize=7)
    ax.set_title(f"{node}: {n} neurons, {len(idx)} spikes; {how}", fontsize=8, loc="left")
    _sparse_ticks(ax, x_integer=not tm.ms)


def _bin_mean(x, tb):
    """Means of consecutive bins of tb values (the last bin may be shorter)."""
    sums = np.add.reduceat(x.astype(np.float64), np.arange(0, len(x), tb))
    sizes = np.diff(np.append(np.arange(0, len(x), tb), len(x)))
    return sums / sizes


def rates_figure(tr, nodes, tm):
    """Fraction of each node's neurons spiking per step, mean over every sample row."""
    fig = _figure(9, 4.2)
    ax = fig.subplots()
    T = tr.T
    tb = 1 if T <= RATE_POINTS else nice(T / RATE_POINTS)
    x = (np.arange(0, T, tb) + (tb - 1) / 2) * tm.scale
    for node in nodes:
        pos, neg = tr.step_counts(node)
        denom = max(1, tr.rows * tr.n_neurons(node))
        line, = ax.plot(x, _bin_mean(pos + neg, tb) / denom, lw=1.0, marker="o" if T <= 50 else None,
                        ms=3, label=f"{node} ({tr.n_neurons(node)})")
        if neg.any():
            ax.plot(x, _bin_mean(neg, tb) / denom, ls=":", lw=1.0, color=line.get_color())
    ax.set_xlim(x[0] if tb == 1 else 0, x[-1] if tb == 1 else T * tm.scale)
    ax.set_ylim(bottom=0)
    ax.set_xlabel(tm.label, fontsize=8)
    per = "per step" if tb == 1 else f"per step, mean over {tb}-step bins"
    ax.set_ylabel(f"fraction of neurons spiking\n{per} (dotted: -1 spikes)", fontsize=8)
    ax.set_title(f"firing rate per node, mean over {tr.rows} sample(s); nodes in {tr.order_source}",
                 fontsize=9)
    ax.legend(fontsize=6, ncol=2 if len(nodes) > 6 else 1, title="node (neurons)", title_fontsize=6)
    ax.grid(alpha=0.3)
    _sparse_ticks(ax, x_integer=not tm.ms, y_integer=False)
    return fig


def default_neurons(tr, node, row, k):
    """k neurons of one row spread over the range of activity: from the most active to the
    least active that spiked, among those that spike in at most half the steps (a neuron that
    fires at every step sits at its reset value, a flat line); topped up with evenly spaced
    neurons when fewer spiked or the node's spikes were not recorded."""
    n = tr.n_neurons(node)
    chosen = []
    if node in tr.spiking:
        counts = tr.neuron_counts(node, row)
        active = np.flatnonzero((counts > 0) & (counts <= max(1, tr.T // 2)))
        active = active[np.argsort(-counts[active], kind="stable")]
        if len(active):
            picks = np.linspace(0, len(active) - 1, k).round().astype(int)
            chosen = [int(i) for i in dict.fromkeys(active[picks])]  # most active first
    for i in np.linspace(0, n - 1, min(n, k + len(chosen))).round().astype(int):
        if len(chosen) < min(k, n) and int(i) not in chosen:
            chosen.append(int(i))
    return chosen


def _membrane_rows(tr, row, nodes, neurons):
    """[(node, neurons of one panel)]: a panel per neuron, or one per node above PANEL_LINES."""
    k = max(1, min(DEFAULT_NEURONS, MEMBRANE_PANELS // max(1, len(nodes))))
    rows = []
    for node in nodes:
        sel = neurons if neurons is not None else default_neurons(tr, node, row, k)
        rows += [(node, [i]) for i in sel] if len(sel) <= PANEL_LINES else [(node, sel)]
    return rows


def membrane_figure(tr, row, nodes, neurons, tm):
    """Membrane potential of selected neurons of one sample row: one panel per neuron (per node
    when many are chosen), the node's name over its first panel."""
    rows = _membrane_rows(tr, row, nodes, neurons)
    fig, axes = _panels(len(rows), 1.0)
    t = np.arange(tr.T) * tm.scale
    v = {node: dict(zip(sel, tr.membrane(node, row, sel).T))
         for node, sel in _group_rows(rows)}
    for j, (ax, (node, sel)) in enumerate(zip(axes, rows)):
        counts = tr.neuron_counts(node, row) if node in tr.spiking else None
        for i in sel:
            spikes = f", {counts[i]} spikes" if counts is not None else ""
            ax.plot(t, v[node][i], lw=0.7, label=f"neuron {i}{spikes}")
        ax.set_ylabel("v", fontsize=7)
        if len(sel) <= LEGEND_LINES:
            ax.legend(fontsize=6, loc="upper right", ncol=min(len(sel), 4), handlelength=1)
        if j == 0 or rows[j - 1][0] != node:
            what = "membrane potential" if node in tr.spiking else "recorded state v"
            ax.set_title(f"{node}: {what} of {len(v[node])} of its {tr.n_neurons(node)} neurons",
                         fontsize=8, loc="left")
        ax.grid(alpha=0.3)
        _sparse_ticks(ax, x_integer=not tm.ms, y_integer=False)
        ax.yaxis.set_major_locator(_locator(4))
    axes[-1].set_xlim(0, max(tr.T - 1, 1) * tm.scale)
    axes[-1].set_xlabel(tm.label, fontsize=8)
    how = "chosen neurons" if neurons is not None else "neurons from most to least active"
    fig.suptitle(f"v of {_sample_name(tr, row)}, after each step (after any reset); {how}; "
                 f"nodes in {tr.order_source}", fontsize=9)
    return fig


def _group_rows(rows):
    """[(node, all its neurons)] in the order of rows."""
    out = {}
    for node, sel in rows:
        out.setdefault(node, []).extend(sel)
    return list(out.items())


def energy_figure(tr):
    """Energy per inference per node, stacked by kind, and the ANN equivalent beside it."""
    f = tr.f
    kinds = [_text(k) for k in f["ternion/kinds"][()]]
    S = max(1, f["ternion/samples"].shape[0])
    eg = f["ternion/energy"]
    names, per_kind, ann = [], [], []
    for name in [n for n in tr.order if n in eg]:
        g = eg[name]
        e = np.zeros(len(kinds))
        for (s0, s1) in [(r, min(r + 256, S)) for r in range(0, S, 256)]:  # rows in blocks
            e += g["per_step_pj"][s0:s1].sum(axis=(0, 1))
        e /= S
        a = float(g.attrs.get("ann_pj_per_inference", 0.0))
        if e.sum() == 0 and not a:
            continue
        names.append(name)
        per_kind.append(e)
        ann.append(a)
    per_kind = np.array(per_kind).reshape(len(names), len(kinds))
    return _energy_bars(names, kinds, per_kind, ann, _text(eg.attrs.get("profile", "")), tr.order_source)


def _energy_bars(names, kinds, per_kind, ann, profile, order_source):
    from matplotlib import colormaps

    y = np.arange(len(names))
    fig = _figure(8, 0.32 * len(names) + 1.6)
    ax = fig.subplots()
    left = np.zeros(len(names))
    cmap = colormaps["tab20"]
    for k, kind in enumerate(kinds):
        if per_kind[:, k].any():
            ax.barh(y - 0.2, per_kind[:, k], 0.4, left=left, label=kind, color=cmap(k))
            left += per_kind[:, k]
    ax.barh(y + 0.2, ann, 0.4, label="ANN equivalent (all MAC)", color="#888888", hatch="//")
    ax.set_yticks(y, names, fontsize=7)
    ax.set_ylim(len(names) - 0.5, -0.5)  # first node on top
    ax.set_xscale("symlog", linthresh=1.0)
    ax.set_xlabel("pJ per inference (symlog)", fontsize=8)
    ax.tick_params(axis="x", labelsize=7)
    ax.set_title(f"energy per node by kind ({profile}); nodes in {order_source}", fontsize=9)
    ax.legend(fontsize=6, loc="lower right")
    return fig


def attention_figures(tr, row):
    """{"attention_<node>": figure} of the first recorded step with maps, per attention node."""
    figs = {}
    ag = tr.f["ternion/attention"]
    for name in [n for n in tr.order if n in ag]:
        g = ag[name]
        samples = list(g["samples"][()])
        sample = int(tr.samples[row]) if row < tr.rows else row
        k = samples.index(sample) if sample in samples else 0
        present = g["present"][k]
        if not present.any():
            continue
        s = int(np.argmax(present))
        step = int(g["steps"][s])
        figs[f"attention_{name}"] = _attention_maps(g["scores"][k, s], g["weights"][k, s],
                                                    f"{name} ({_text(g.attrs.get('type', ''))}): "
                                                    f"sample {samples[k]}, step {step}")
    return figs


def _attention_maps(sc, w, title):
    H = sc.shape[0]
    fig = _figure(2.1 * H + 0.6, 4.4)
    axes = fig.subplots(2, H, squeeze=False)
    lim = float(np.abs(sc[np.isfinite(sc)]).max()) if np.isfinite(sc).any() else 1.0
    for h in range(H):
        a = axes[0][h].imshow(sc[h], cmap="RdBu_r", vmin=-lim, vmax=lim)
        axes[0][h].set_title(f"head {h} scores", fontsize=7)
        b = axes[1][h].imshow(w[h], cmap="viridis")
        axes[1][h].set_title(f"head {h} weights", fontsize=7)
        for ax in (axes[0][h], axes[1][h]):
            _sparse_ticks(ax)
            ax.tick_params(labelsize=5)
    fig.colorbar(a, ax=list(axes[0]), shrink=0.8)
    fig.colorbar(b, ax=list(axes[1]), shrink=0.8)
    fig.suptitle(title, fontsize=9)
    return fig


# --- the entry points ---------------------------------------------------------------------

def _options(tr, sample, nodes, neurons, figures, time):
    """Checks the options against the trace: (row, nodes or None, neurons or None, figures,
    whether the figures were named)."""
    where = tr.path
    try:
        row = int(sample)
    except (TypeError, ValueError):
        raise PlotError(f"{where}: --sample {sample}: not a row number") from None
    if not 0 <= row < max(tr.rows, 1):
        raise PlotError(f"{where}: --sample {sample}: the trace has {tr.rows} sample row(s) "
                        f"(0-{tr.rows - 1})")
    if time not in ("steps", "ms"):
        raise PlotError(f"{where}: --time {time}: expected steps or ms")
    if isinstance(figures, str):
        figures = figures.split(",")
    wanted = list(FIGURES) if figures is None else [x.strip() for x in figures]
    for x in wanted:
        if x not in FIGURES:
            raise PlotError(f"{where}: --figures: unknown figure '{x}' (known: {', '.join(FIGURES)})")
    if isinstance(nodes, str):
        nodes = nodes.split(",")
    if nodes is not None:
        recorded = tr.spiking + [n for n in tr.membranes if n not in tr.spiking]
        for n in nodes:
            if n not in recorded:
                raise PlotError(f"{where}: --nodes: no recorded spikes or membrane of a node '{n}' "
                                f"(recorded: {', '.join(recorded) or 'none'})")
        nodes = [n for n in tr.order if n in set(nodes)]  # graph order, whatever order given
    if neurons is not None:
        neurons = parse_indices(neurons, f"{where}: --neurons")
    return row, nodes, neurons, [x for x in FIGURES if x in wanted], figures is not None


def _check_neurons(tr, nodes, neurons):
    for node in nodes:
        n = tr.n_neurons(node)
        bad = [i for i in neurons if not 0 <= i < n]
        if bad:
            raise PlotError(f"{tr.path}: --neurons {bad[0]}: node '{node}' has {n} neurons (0-{n - 1}); "
                            f"pick nodes with --nodes")


def _draw(tr, row, nodes, neurons, wanted, explicit, tm):
    figs = {}
    pick = (lambda have: [n for n in have if nodes is None or n in nodes])
    have = {"raster": pick(tr.spiking), "rates": pick(tr.spiking), "membrane": pick(tr.membranes),
            "energy": "ternion/energy" in tr.f and "ternion/kinds" in tr.f,
            "attention": "ternion/attention" in tr.f}
    for name in wanted:
        if not have[name]:
            if explicit:
                raise PlotError(f"{tr.path}: --figures {name}: the trace holds no data for it")
            continue
        if name == "raster":
            figs["raster"] = raster_figure(tr, row, have[name], tm)
        elif name == "rates":
            figs["rates"] = rates_figure(tr, have[name], tm)
        elif name == "membrane":
            if neurons is not None:
                _check_neurons(tr, have[name], neurons)
            figs["membrane"] = membrane_figure(tr, row, have[name], neurons, tm)
        elif name == "energy":
            figs["energy"] = energy_figure(tr)
        else:
            figs.update(attention_figures(tr, row))
    return figs


def plot(trace, out=".", *, sample=0, nodes=None, neurons=None, figures=None, time="steps", dpi=90):
    """Draws the figures of a trace file and returns them as {name: matplotlib Figure}.

    trace    path of a trace (`ternion run --trace`, docs/traces.md)
    out      directory for the PNG files <name>.png (made if missing); None: write nothing
    sample   row of the trace whose spikes, membranes and attention maps are drawn
    nodes    names (list or "a,b") for the raster, rates and membrane figures (default: all)
    neurons  membrane neurons per node (list or "0,5,10-19"; default: a few, from the most to
             the least active that spiked)
    figures  subset of "raster", "rates", "membrane", "energy", "attention" (default: every one
             the trace holds data for; a figure named here that the trace lacks is an error)
    time     "steps" or "ms" (from the trace's dt) on the time axes
    dpi      resolution of the PNG files

    Names are raster, rates, membrane, energy and attention_<node>. Nodes appear in graph
    order, taken from the model file named in the trace's metadata when it is still there
    (the trace itself does not store the order), else alphabetically; figure titles say which.
    Raises PlotError (a ValueError) with a one-line message for bad input.
    """
    tr = Trace(trace)
    try:
        row, nodes, neurons, wanted, explicit = _options(tr, sample, nodes, neurons, figures, time)
        figs = _draw(tr, row, nodes, neurons, wanted, explicit, _Time(time, tr.dt))
    finally:
        tr.close()
    if not figs:
        raise PlotError(f"{tr.path}: holds nothing to plot")
    if out is not None:
        os.makedirs(out, exist_ok=True)
        for name, fig in figs.items():
            fig.savefig(os.path.join(out, f"{name}.png"), dpi=dpi)
    return figs


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line and exit 1, like ternion's own errors
        print(f"{self.prog}: {message}", file=sys.stderr)
        sys.exit(1)


def main(argv=None, prog="plot_trace"):
    """The command line of tools/plot_trace.py (installed as share/ternion/plot_trace.py)."""
    ap = _Parser(prog=prog, description="Draws the figures of a ternion trace as PNG files.")
    ap.add_argument("trace")
    ap.add_argument("--out", default=".", help="directory for the PNG files (default: .)")
    ap.add_argument("--sample", default="0", help="row of the trace for raster, membrane, attention")
    ap.add_argument("--nodes", help="comma-separated nodes for raster, rates and membrane")
    ap.add_argument("--neurons",
                    help="membrane neurons per node, e.g. 0,5,10-19 (default: a few, most to least active)")
    ap.add_argument("--figures", help=f"comma-separated subset of {','.join(FIGURES)}")
    ap.add_argument("--time", default="steps", help="time axis unit: steps or ms (default steps)")
    ap.add_argument("--dpi", type=int, default=90)
    a = ap.parse_args(argv)
    try:
        figs = plot(a.trace, a.out, sample=a.sample, nodes=a.nodes, neurons=a.neurons,
                    figures=a.figures, time=a.time, dpi=a.dpi)
    except PlotError as e:
        print(f"{prog}: {e}", file=sys.stderr)
        return 1
    except (OSError, KeyError) as e:  # a damaged file: h5py names the object in e
        why = str(e).splitlines()[0] if str(e) else type(e).__name__
        print(f"{prog}: {a.trace}: cannot read the trace ({why})", file=sys.stderr)
        return 1
    for name in figs:
        print(os.path.join(a.out, f"{name}.png"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
