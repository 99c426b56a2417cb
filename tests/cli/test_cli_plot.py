#!/usr/bin/env python3
"""Figures of traces (tools/plot_trace.py, ternion.plot) at real sizes: a T = 3000 trace of a
25 000-neuron layer, plus small traces for the exact raster, the node order and bad input.

The checks look at the figures, not only at the files: tick counts, how dark the raster and
its tick strip render, the binned spike counts against the trace's events, membrane lines
against the recorded values, rates against a recount, and node order against `ternion run
--json`. Times are measured by bench/plot_speed.py, not here.
"""
import importlib.util
import os
import re
import shutil
import subprocess
import sys

import h5py
import numpy as np

from harness import finish, path, run_json, test
from nirfile import Nir, layered_lif, spikes_file

if importlib.util.find_spec("matplotlib") is None:
    print("skipped: no matplotlib (python3-matplotlib)")
    sys.exit(77)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "tools", "plot_trace.py")
sys.path.insert(0, os.path.join(ROOT, "python"))  # the source tree's package, compiled part unused
import ternion  # noqa: E402
from ternion import plotting  # noqa: E402

T, N = 3000, 25000
BIG_MODEL, BIG_INPUT, BIG = path("big.h5"), path("big_in.h5"), path("big_trace.h5")
layered_lif(BIG_MODEL, BIG_INPUT, N, T)
BIG_RUN = run_json("run", BIG_MODEL, "--input", BIG_INPUT, "--trace", BIG,
                   "--record", "spikes,membrane,energy")
GRAPH = [layer["name"] for layer in BIG_RUN["layers"]]
SPIKING = [n for n in GRAPH if n in ("sensory", "assoc", "motor")]
BUNDLED = os.path.join(ROOT, "models", "bundled", "bsa_digits.h5")
DIGITS = os.path.join(ROOT, "models", "bundled", "digits_test.h5")


def events(trace, node, row=0):
    """(step, neuron) of one row's spikes, read as docs/traces.md describes."""
    with h5py.File(trace, "r") as f:
        o = f[f"nodes/{node}/observables/spikes"]
        idx, tim, dt = o["idx"][row], o["time"][row], float(o.attrs["dt"])
    keep = idx >= 0
    return np.floor(tim[keep] / dt).astype(int), idx[keep].astype(int)


def title(ax):
    return ax.get_title(loc="left")


def suptitle(fig):
    return fig._suptitle.get_text() if fig._suptitle else ""  # Figure.get_suptitle is matplotlib 3.8+


def visible_ticks(axis):
    lo, hi = sorted(axis.get_view_interval())
    return [t for t in axis.get_majorticklocs() if lo - 1e-9 <= t <= hi + 1e-9]


def assert_sparse_ticks(ax):
    for axis in (ax.xaxis, ax.yaxis):
        n = len(visible_ticks(axis))
        assert 2 <= n <= 15, (title(ax), n)


def render(fig):
    """The figure as an RGB array (as savefig draws it) and a function giving the dark
    fraction of a display-space box."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    img = np.asarray(canvas.buffer_rgba())[..., :3].astype(float) / 255
    H = img.shape[0]

    def dark(x0, y0, x1, y1):
        box = img[int(H - y1):int(H - y0), int(x0):int(x1)]
        return float((box.mean(axis=2) < 0.35).mean())
    return img, dark


def bins_of(title):
    nb = re.search(r"neurons 0\.\.\d+ binned by (\d+)", title)
    tb = re.search(r"steps binned by (\d+)", title)
    return (int(nb.group(1)) if nb else 1), (int(tb.group(1)) if tb else 1)


@test
def raster_of_25000_neurons_and_3000_steps_is_binned_and_readable():
    figs = ternion.plot(BIG, path("figs"), figures="raster", dpi=80)
    fig = figs["raster"]
    axes = [ax for ax in fig.axes if title(ax)]
    assert [title(ax).split(":")[0] for ax in axes] == SPIKING, [title(ax) for ax in axes]
    img, dark = render(fig)
    for ax, node in zip(axes, SPIKING):
        assert_sparse_ticks(ax)
        step, idx = events(BIG, node)
        counts = ax.images[0].get_array()
        assert counts.sum() == len(idx) > 0, (node, counts.sum(), len(idx))  # every spike is in a bin
        nb, tb = bins_of(title(ax))
        assert tb == 5 and nb == {"sensory": 200, "assoc": 2, "motor": 1}[node], (node, title(ax))
        want = np.zeros((-(-{"sensory": N, "assoc": 200, "motor": 10}[node] // nb), T // tb), np.int64)
        np.add.at(want, (idx // nb, step // tb), 1)
        assert np.array_equal(np.asarray(counts), want), node
        bb = ax.get_window_extent()
        assert dark(bb.x0, bb.y0, bb.x1, bb.y1) < 0.6, node  # a picture, not a solid block
    bottom = axes[-1].get_window_extent()
    strip = dark(bottom.x0, bottom.y0 - 30, bottom.x1, bottom.y0 - 1)  # ticks and their labels
    assert strip < 0.08, strip
    assert "neurons 0..24999 binned by 200" in title(axes[0])
    png = os.path.join(path("figs"), "raster.png")
    assert open(png, "rb").read(8) == b"\x89PNG\r\n\x1a\n"
    import matplotlib.image

    h, w = matplotlib.image.imread(png).shape[:2]
    assert w == 800 and h < 1200, (w, h)


@test
def membrane_lines_are_the_recorded_values():
    with h5py.File(BIG, "r") as f:
        v = {n: f[f"nodes/{n}/observables/v/data"][0] for n in SPIKING}
    fig = ternion.plot(BIG, None, figures="membrane")["membrane"]
    seen = {n: [] for n in SPIKING}
    node = None
    for ax in fig.axes:
        node = title(ax).split(":")[0] if title(ax) else node
        assert_sparse_ticks(ax)
        for line in ax.get_lines():
            i = int(re.match(r"neuron (\d+), (\d+) spikes", line.get_label()).group(1))
            spikes = int(re.match(r"neuron (\d+), (\d+) spikes", line.get_label()).group(2))
            assert spikes == int((events(BIG, node)[1] == i).sum()), (node, i)
            assert np.array_equal(line.get_ydata(), v[node][:, i]), (node, i)
            assert np.array_equal(line.get_xdata(), np.arange(T))
            seen[node].append((i, spikes))
    for n in SPIKING:  # the defaults: 4 neurons, from the most to the least active that spiked
        assert len(seen[n]) == 4, (n, seen[n])
    counts = [c for _, c in seen["sensory"]]
    assert counts == sorted(counts, reverse=True) and 0 < counts[-1] < counts[0] <= T // 2, counts
    fig = ternion.plot(BIG, None, figures="membrane", nodes="sensory", neurons="0,7,24998-24999")["membrane"]
    got = [(int(line.get_label().split()[1].rstrip(",")), line.get_ydata()) for ax in fig.axes
           for line in ax.get_lines()]
    assert [i for i, _ in got] == [0, 7, 24998, 24999]
    for i, y in got:
        assert np.array_equal(y, v["sensory"][:, i]), i


@test
def rates_are_spike_fractions_per_time_bin():
    fig = ternion.plot(BIG, None, figures="rates")["rates"]
    ax = fig.axes[0]
    assert_sparse_ticks(ax)
    lines = ax.get_lines()
    assert [line.get_label().split()[0] for line in lines] == SPIKING
    n = {"sensory": N, "assoc": 200, "motor": 10}
    for line, node in zip(lines, SPIKING):
        step, _ = events(BIG, node)
        per_step = np.bincount(step, minlength=T) / n[node]
        want = per_step.reshape(-1, 10).mean(axis=1)  # 3000 steps: 300 bins of 10
        assert np.allclose(line.get_ydata(), want), node
        assert np.allclose(line.get_xdata(), np.arange(0, T, 10) + 4.5)
    assert "10-step bins" in ax.get_ylabel()


@test
def nodes_come_in_graph_order_even_where_alphabetical_differs():
    assert sorted(SPIKING) != SPIKING
    figs = ternion.plot(BIG, None, figures="raster,rates,energy,membrane")
    assert [title(a).split(":")[0] for a in figs["raster"].axes if title(a)] == SPIKING
    assert [title(a).split(":")[0] for a in figs["membrane"].axes if title(a)] == SPIKING
    energy_nodes = [t.get_text() for t in figs["energy"].axes[0].get_yticklabels()]
    assert energy_nodes == ["w_in", "w1", "w2"], energy_nodes  # alphabetical: w1, w2, w_in
    assert "graph order" in suptitle(figs["raster"])
    # A trace without /ternion/node_order (another writer's): alphabetical, and the figures
    # say so.
    shutil.copy(BIG, path("no_order.h5"))
    with h5py.File(path("no_order.h5"), "a") as f:
        del f["ternion/node_order"]
    fig = ternion.plot(path("no_order.h5"), None, figures="raster")["raster"]
    assert [title(a).split(":")[0] for a in fig.axes if title(a)] == sorted(SPIKING)
    assert "alphabetical" in suptitle(fig)


@test
def order_of_a_nested_recurrent_model_matches_the_engine():
    """A subgraph with a cycle (flattened, one edge delayed) and names out of alphabetical order."""
    rng = np.random.default_rng(3)
    lif = dict(tau=np.full(6, 0.02, np.float32), r=np.ones(6, np.float32), v_leak=np.zeros(6, np.float32),
               v_threshold=np.ones(6, np.float32), v_reset=np.zeros(6, np.float32))
    rnn = (Nir().node("input", "Input", shape=np.array([6])).node("lif", "LIF", **lif)
           .node("a_rec", "Linear", weight=rng.standard_normal((6, 6)).astype(np.float32))
           .node("output", "Output", shape=np.array([6]))
           .edge("input", "lif").edge("lif", "a_rec").edge("a_rec", "lif").edge("lif", "output"))
    (Nir().node("input", "Input", shape=np.array([4]))
     .node("z_fc", "Linear", weight=rng.standard_normal((6, 4)).astype(np.float32))
     .node("b_rnn", rnn).node("readout", "LIF", **lif).node("output", "Output", shape=np.array([6]))
     .edge("input", "z_fc").edge("z_fc", "b_rnn").edge("b_rnn", "readout").edge("readout", "output")
     .write(path("rnn.h5")))
    spikes_file(path("rnn_in.h5"), rng.random((2, 20, 4)) < 0.5)
    j = run_json("run", path("rnn.h5"), "--input", path("rnn_in.h5"), "--trace", path("rnn_tr.h5"),
                 "--record", "spikes,ops")
    with h5py.File(path("rnn_tr.h5"), "r") as f:
        order, source = plotting.graph_order(f, path("rnn_tr.h5"))
    assert source == "graph order"
    engine = [layer["name"] for layer in j["layers"]]
    assert engine[0] == "b_rnn.a_rec" and order == engine, (order, engine)  # the delay moved


@test
def membrane_columns_read_alike_from_every_chunk_layout():
    """The threaded reader of shuffled, deflated chunks and h5py's own reads agree."""
    x = np.random.default_rng(0).standard_normal((3, 50, 2, 4)).astype(np.float32)
    layouts = {"contiguous": {}, "shuffle+gzip": dict(chunks=(2, 9, 2, 4), compression="gzip", shuffle=True),
               "gzip": dict(chunks=(1, 50, 2, 4), compression="gzip"),
               "partial chunks": dict(chunks=(1, 9, 1, 4), compression="gzip", shuffle=True),
               "lzf": dict(chunks=(2, 9, 2, 4), compression="lzf"), "plain chunks": dict(chunks=(3, 7, 2, 4))}
    with h5py.File(path("layouts.h5"), "w") as f:
        for name, kw in layouts.items():
            d = f.create_dataset(name, data=x, **kw)
            for row in range(3):
                got = plotting.read_columns(d, row, [7, 0, 3])
                assert np.array_equal(got, x[row].reshape(50, 8)[:, [7, 0, 3]]), (name, row)


def write_nir_trace(fname, T, dt, a, b):
    """A trace as NIR's own writer lays it out (no /ternion group): node a as ValuedEventData
    with -1 and +1, node b as plain EventData; a and b are [T, n] int8 grids of one sample."""
    with h5py.File(fname, "w") as f:
        f.attrs["__type__"] = "NIRGraphData"
        for name, g, valued in (("a", a, True), ("b", b, False)):
            node = f.create_group(f"nodes/{name}")
            node.attrs["__type__"] = "NIRNodeData"
            o = node.create_group("observables/spikes")
            o.attrs.update({"__type__": "ValuedEventData" if valued else "EventData", "dt": dt,
                            "n_neurons": g.shape[1], "t_max": T * dt})
            s, i = np.nonzero(g)
            o["idx"], o["time"] = i[None].astype(np.int32), ((s + 0.5) * dt)[None]
            if valued:
                o["value"] = g[s, i][None].astype(np.int8)


@test
def small_traces_show_every_spike_with_its_sign_and_ms_axes():
    rng = np.random.default_rng(1)
    a = rng.choice(np.array([-1, 0, 1], np.int8), size=(50, 30), p=[0.1, 0.8, 0.1])
    b = (rng.random((50, 40)) < 0.2).astype(np.int8)
    write_nir_trace(path("nir.h5"), 50, 2e-4, a, b)
    figs = ternion.plot(path("nir.h5"), None, time="ms")
    assert set(figs) == {"raster", "rates"}, set(figs)
    axes = [ax for ax in figs["raster"].axes if title(ax)]
    for ax, grid in zip(axes, (a, b)):
        assert "every neuron and step" in title(ax), title(ax)
        assert np.array_equal(ax.images[0].get_array(), grid.T)
        assert np.allclose(ax.get_xlim(), (0, 10.0))  # 50 steps of 0.2 ms
        assert "ms" in figs["raster"].axes[-1].get_xlabel() or "ms" in axes[-1].get_xlabel()
        assert_sparse_ticks(ax)
    neg = [line for line in figs["rates"].axes[0].get_lines() if line.get_linestyle() == ":"]
    assert len(neg) == 1 and np.allclose(neg[0].get_ydata(), (a < 0).mean(axis=1))


@test
def grid_and_events_give_the_same_figures():
    grid = path("big_grid.h5")
    run_json("run", BIG_MODEL, "--input", BIG_INPUT, "--trace", grid, "--record", "spikes",
             "--spike-format", "grid")
    ev = ternion.plot(BIG, None, figures="raster,rates")
    gr = ternion.plot(grid, None, figures="raster,rates")
    for a, b in zip(ev["raster"].axes, gr["raster"].axes):
        if a.images:
            assert np.array_equal(a.images[0].get_array(), b.images[0].get_array())
    for a, b in zip(ev["rates"].axes[0].get_lines(), gr["rates"].axes[0].get_lines()):
        assert np.array_equal(a.get_ydata(), b.get_ydata())


def plot_cli(*args, script=SCRIPT, cwd=None, env=None):
    return subprocess.run(["/usr/bin/python3", script, *map(str, args)], capture_output=True, text=True,
                          cwd=cwd, env=env)


@test
def command_line_draws_every_figure_also_when_installed():
    tr = path("digits.h5")
    run_json("run", BUNDLED, "--input", DIGITS, "--samples", 3, "--trace", tr, "--record", "all",
             "--record-steps", "0")
    names = ["raster", "rates", "membrane", "energy", "attention_b0_attn"]
    p = plot_cli(tr, "--out", path("digits_figs"), "--sample", 1)
    assert p.returncode == 0, p.stderr
    assert p.stdout.split() == [os.path.join(path("digits_figs"), f"{n}.png") for n in names], p.stdout
    # The installed layout: share/ternion/plot_trace.py and lib/python3.X/dist-packages/ternion.
    prefix = path("prefix")
    pkg = os.path.join(prefix, "lib", f"python3.{sys.version_info.minor}", "dist-packages", "ternion")
    shutil.copytree(os.path.join(ROOT, "python", "ternion"), pkg)
    os.makedirs(os.path.join(prefix, "share", "ternion"))
    script = shutil.copy(SCRIPT, os.path.join(prefix, "share", "ternion"))
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    p = plot_cli(tr, "--out", "figs", "--figures", "raster,energy", script=script, cwd=prefix, env=env)
    assert p.returncode == 0, p.stderr
    for n in ("raster", "energy"):
        assert os.path.getsize(os.path.join(prefix, "figs", f"{n}.png")) > 5000, n


@test
def bad_input_is_one_line_naming_the_file_and_option():
    tr, spikes_only = path("bad.h5"), path("bad_spikes.h5")
    run_json("run", BUNDLED, "--input", DIGITS, "--samples", 3, "--trace", tr, "--record", "spikes,membrane")
    run_json("run", BUNDLED, "--input", DIGITS, "--samples", 3, "--trace", spikes_only)
    open(path("text.h5"), "w").write("not hdf5\n")
    cases = [
        ([path("nothere.h5")], ["nothere.h5", "no such file"]),
        ([path("text.h5")], ["text.h5", "not an HDF5 file"]),
        ([BUNDLED], ["bsa_digits.h5", "not a trace"]),
        ([tr, "--sample", 3], ["bad.h5", "--sample 3", "0-2"]),
        ([tr, "--sample", "x"], ["bad.h5", "--sample x"]),
        ([tr, "--nodes", "conv_lif,nope"], ["bad.h5", "--nodes", "'nope'"]),
        ([tr, "--nodes", "conv_lif", "--neurons", "4096"], ["bad.h5", "--neurons 4096", "4096 neurons"]),
        ([tr, "--neurons", "3-1"], ["bad.h5", "--neurons 3-1"]),
        ([tr, "--neurons", "a"], ["bad.h5", "--neurons a"]),
        ([tr, "--figures", "raster,bogus"], ["bad.h5", "--figures", "bogus"]),
        ([spikes_only, "--figures", "membrane"], ["bad_spikes.h5", "--figures membrane"]),
        ([tr, "--time", "s"], ["bad.h5", "--time s"]),
        ([tr, "--dpi", "x"], ["--dpi"]),
    ]
    for args, needles in cases:
        p = plot_cli(*args, "--out", path("bad_figs"))
        lines = [line for line in p.stderr.splitlines() if line.strip()]
        assert p.returncode == 1 and len(lines) == 1, (args, p.returncode, p.stderr)
        assert lines[0].startswith("plot_trace: "), lines[0]
        for n in needles:
            assert n in lines[0], (args, n, lines[0])
    with h5py.File(tr, "a") as f:  # damaged: a dataset the layout requires is gone
        del f["nodes/conv_lif/observables/spikes/idx"]
    p = plot_cli(tr, "--out", path("bad_figs"))
    lines = [line for line in p.stderr.splitlines() if line.strip()]
    assert p.returncode == 1 and len(lines) == 1 and "bad.h5" in lines[0], p.stderr
    try:
        ternion.plot(path("nothere.h5"))
        raise AssertionError("no error")
    except plotting.PlotError as e:
        assert isinstance(e, ValueError) and "nothere.h5" in str(e)


finish()
