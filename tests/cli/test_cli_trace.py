#!/usr/bin/env python3
"""End-to-end tests of `ternion run --trace` and `ternion trace info`.

The trace is read back by a reader written here from docs/traces.md alone (read_trace below
follows the NIRGraphData rules of nir.read_data: root __type__, nodes/<n>/observables/<o> with
__type__ TimeGriddedData / EventData / ValuedEventData). Values are checked against what the
run itself reports (--json) and against numpy recomputations, never against the trace itself.
"""
import hashlib
import os
import signal
import subprocess
import time

import h5py
import numpy as np

from harness import TERNION, finish, path, run, run_json, test

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MODEL = os.path.join(ROOT, "models", "bundled", "bsa_digits.h5")
DATA = os.path.join(ROOT, "models", "bundled", "digits_test.h5")
S = 12  # samples of the bundled model per test run: fast, still varied
rng = np.random.default_rng(7)


def s(x):
    return x.decode() if isinstance(x, bytes) else str(x)


def read_trace(fname):
    """Independent reader: {node: {obs: ("grid", data, dt) | ("events", idx, time, value, n, t_max)}}."""
    out = {}
    with h5py.File(fname, "r") as f:
        assert s(f.attrs["__type__"]) == "NIRGraphData"
        for name, g in f["nodes"].items():
            assert s(g.attrs["__type__"]) == "NIRNodeData"
            out[name] = {}
            for obs, o in g["observables"].items():
                typ = s(o.attrs["__type__"])
                if typ == "TimeGriddedData":
                    out[name][obs] = ("grid", o["data"][()], float(o.attrs["dt"]))
                else:
                    assert typ in ("EventData", "ValuedEventData"), typ
                    val = o["value"][()] if typ == "ValuedEventData" else None
                    out[name][obs] = ("events", o["idx"][()], o["time"][()], val,
                                      int(o.attrs["n_neurons"]), float(o.attrs["t_max"]))
    return out


def events_to_grid(idx, tim, val, n, t_max, dt):
    """NIR's rule for valued events: step = floor(time / dt); padding is idx -1, time inf."""
    T = int(round(t_max / dt))
    g = np.zeros((idx.shape[0], T, n), np.int8)
    for k in range(idx.shape[0]):
        m = idx[k] >= 0
        assert np.all(np.isinf(tim[k][~m])) and np.all(idx[k][~m] == -1)
        steps = np.floor(tim[k][m] / dt).astype(int)
        assert np.all(np.diff(steps) >= 0), "events are in time order"
        g[k, steps, idx[k][m]] = val[k][m]
    return g


def bundled(*extra):
    return run_json("run", MODEL, "--input", DATA, "--samples", S, *extra)


@test
def events_decode_to_the_grid_and_to_the_engine_counts():
    ev, gr = path("ev.h5"), path("gr.h5")
    j = bundled("--trace", ev, "--threads", 2)
    bundled("--trace", gr, "--spike-format", "grid")
    a, b = read_trace(ev), read_trace(gr)
    layers = {l["name"]: l for l in j["layers"]}
    spiking = [l["name"] for l in j["layers"] if l["firing_rate"] is not None]
    assert sorted(a) == sorted(b) == sorted(spiking), (sorted(a), spiking)
    dt = j["load_options"]["dt"]
    total_neg = 0
    for name in spiking:
        kind, idx, tim, val, n, t_max = a[name]["spikes"]
        assert kind == "events" and n == layers[name]["neurons"]
        assert abs(t_max - 4 * dt) < 1e-15
        grid = b[name]["spikes"][1]
        assert grid.shape == (S, 4, n) and grid.dtype == np.int8
        assert (events_to_grid(idx, tim, val, n, t_max, dt) == grid).all(), name
        assert (grid == 1).sum() == layers[name]["positive_spikes"], name
        assert (grid == -1).sum() == layers[name]["negative_spikes"], name
        total_neg += (grid == -1).sum()
    assert total_neg > 0, "the BSA model's ternary neurons emit -1 spikes"


@test
def selected_samples_are_the_same_rows_as_a_full_trace():
    full, sel = path("full.h5"), path("sel.h5")
    bundled("--trace", full, "--spike-format", "grid", "--record", "spikes,membrane")
    bundled("--trace", sel, "--spike-format", "grid", "--record", "spikes,membrane",
            "--record-samples", "1,4-6", "--record-nodes", "conv_lif,b0_fc1_lif")
    a, b = read_trace(full), read_trace(sel)
    assert sorted(b) == ["b0_fc1_lif", "conv_lif"]
    rows = [1, 4, 5, 6]
    for name in b:
        for obs in ("spikes", "v"):
            assert (b[name][obs][1] == a[name][obs][1][rows]).all(), (name, obs)
    with h5py.File(sel, "r") as f:
        assert list(f["ternion/samples"][()]) == rows
    # Membrane of a neuron that spiked was at or above threshold 1 before its reset to 0:
    # stored v is after the step, so spiking neurons show v = v_reset = 0.
    spk, v = a["conv_lif"]["spikes"][1], a["conv_lif"]["v"][1]
    assert np.all(v[spk != 0] == 0.0)
    assert np.all(v[spk == 0] < 1.0)


@test
def ops_per_step_sum_to_the_run_totals_and_energy_to_the_report():
    tr = path("ops.h5")
    j = bundled("--trace", tr, "--record", "ops,energy")
    with h5py.File(tr, "r") as f:
        kinds = [s(k) for k in f["ternion/kinds"][()]]
        unit = f["ternion/unit_pj"][()]
        for l in j["layers"]:
            c = f[f"ternion/ops/{l['name']}"][()]
            assert c.shape == (S, 4, len(kinds))
            tot = c.sum(axis=(0, 1))
            for k, v in l["ops"].items():
                assert tot[kinds.index(k)] == v, (l["name"], k)
            e = f[f"ternion/energy/{l['name']}/per_step_pj"][()]
            assert np.allclose(e, c * np.nan_to_num(unit), rtol=1e-12)
            assert abs(e.sum() / S - l["energy_pj"]) <= 1e-9 * max(1.0, l["energy_pj"]), l["name"]
            assert abs(f[f"ternion/energy/{l['name']}"].attrs["ann_pj_per_inference"] - l["ann_energy_pj"]) < 1e-6
        assert abs(f["ternion/energy"].attrs["per_inference_pj"] - j["per_inference"]["energy_pj"]) < 1e-6
        # default profile: 0.9 pJ per AC, 4.6 pJ per MAC
        assert unit[kinds.index("ac")] == 0.9 and unit[kinds.index("mac")] == 4.6


@test
def bsa_attention_maps_are_integer_scores_and_row_stochastic_weights():
    tr = path("att.h5")
    bundled("--trace", tr, "--record", "attention,spikes", "--record-samples", "0,3",
            "--record-steps", "1-2")
    with h5py.File(tr, "r") as f:
        names = list(f["ternion/attention"])
        assert names, "the bundled model has BSA attention nodes"
        for name in names:
            g = f[f"ternion/attention/{name}"]
            assert list(g["samples"][()]) == [0, 3] and list(g["steps"][()]) == [1, 2]
            sc, w = g["scores"][()], g["weights"][()]
            assert sc.shape == (2, 2, 4, 16, 16) == w.shape
            assert g["present"][()].all(), "every requested map was delivered"
            assert np.all(sc == np.round(sc)), "BSA scores are integer ternary products"
            assert np.all(np.abs(sc) <= 16), "|q.k| <= head dim"
            # Shiftmax (docs/bsa.md): w = 2^(x - gamma), gamma = ceil(log2 sum_j 2^x_j)
            x = sc.astype(np.float64)
            gamma = np.ceil(np.log2(np.exp2(x).sum(-1, keepdims=True)) - 1e-12)
            assert np.array_equal(w, np.exp2(x - gamma).astype(np.float32)), name
            rows = w.sum(-1)
            assert np.all(rows > 0.5) and np.all(rows <= 1.0)


@test
def ssa_attention_maps_are_spike_coincidence_counts_times_the_scale():
    tr = path("ssa.h5")
    run("run", os.path.join(ROOT, "models", "bundled", "ssa_digits.h5"), "--input", DATA, "--samples", 3,
        "--trace", tr, "--record", "attention", "--no-progress")
    with h5py.File(tr, "r") as f:
        for name, g in f["ternion/attention"].items():
            sc, w = g["scores"][()], g["weights"][()]
            assert g["present"][()].all()
            assert np.all(sc == np.round(sc)) and sc.min() >= 0 and sc.max() <= 16, name
            assert sc.max() > 0, "Q and K spikes coincide somewhere"
            ratio = w[sc > 0] / sc[sc > 0]
            assert np.all(ratio == ratio[0]) and 0 < ratio[0] < 1, name  # Spikformer's scale


def write_softmax_model(fname, n, d, heads, causal=False):
    w = {k: rng.normal(0, 0.4, (d, d)).astype(np.float32) for k in ("W_Q", "W_K", "W_V", "W_O")}
    with h5py.File(fname, "w") as f:
        f["version"] = "1.0.0"
        g = f.create_group("node")
        g["type"] = "NIRGraph"
        nodes = g.create_group("nodes")
        nodes.create_group("input")["type"] = "Input"
        nodes["input/shape"] = np.array([n, d])
        a = nodes.create_group("attn")
        a["type"] = "ternion.SoftmaxAttention"
        for k, v in w.items():
            a[k] = v
        a["heads"] = heads
        a["causal"] = int(causal)
        nodes.create_group("output")["type"] = "Output"
        g["edges"] = np.array([("input", "attn"), ("attn", "output")], dtype=h5py.string_dtype())
    return w


@test
def ann_softmax_attention_maps_match_numpy():
    n, d, H, T = 6, 8, 2, 2
    w = write_softmax_model(path("soft.h5"), n, d, H)
    x = rng.normal(0, 1, (3, n, d)).astype(np.float32)
    with h5py.File(path("soft_in.h5"), "w") as f:
        f["data"] = x
    tr = path("soft_tr.h5")
    run("run", path("soft.h5"), "--input", path("soft_in.h5"), "-T", T, "--trace", tr,
        "--record", "attention", "--no-progress")
    with h5py.File(tr, "r") as f:
        sc, wt = f["ternion/attention/attn/scores"][()], f["ternion/attention/attn/weights"][()]
    assert sc.shape == (3, T, H, n, n)
    dh = d // H
    for k in range(3):
        q, kk = x[k].astype(np.float64) @ w["W_Q"], x[k].astype(np.float64) @ w["W_K"]
        for h in range(H):
            z = q[:, h * dh:(h + 1) * dh] @ kk[:, h * dh:(h + 1) * dh].T / np.sqrt(dh)
            p = np.exp(z - z.max(1, keepdims=True))
            p /= p.sum(1, keepdims=True)
            for t in range(T):  # direct encoding: the same input every step
                assert np.allclose(sc[k, t, h], z, atol=1e-4), (k, t, h)
                assert np.allclose(wt[k, t, h], p, atol=1e-5), (k, t, h)


@test
def metadata_names_the_run():
    tr = path("meta.h5")
    j = bundled("--trace", tr, "--seed", 5, "--profile", "horowitz45-fp32")
    with h5py.File(tr, "r") as f:
        m = {k: s(v) for k, v in f["ternion/metadata"].attrs.items()}
    assert m["model_sha256"] == hashlib.sha256(open(MODEL, "rb").read()).hexdigest()
    assert m["input_sha256"] == hashlib.sha256(open(DATA, "rb").read()).hexdigest()
    assert m["seed"] == "5" and m["profile"] == "horowitz45-fp32" and m["count_mode"] == "exact"
    assert m["engine"] == "event" and m["discretization"] == j["load_options"]["discretization"]
    assert float(m["dt"]) == j["load_options"]["dt"] and m["timesteps"] == "4"
    assert "--seed 5" in m["command_line"]
    for k in ("version", "threads", "samples"):
        assert m[k], k
    assert "git_revision" in m


def run_json_plain(*args):
    import json
    return json.loads(run(*args).stdout)


@test
def trace_info_reports_nodes_totals_and_metadata():
    tr = path("info.h5")
    j = bundled("--trace", tr, "--record", "all", "--record-samples", "0-1", "--record-steps", "0")
    info = run_json_plain("trace", "info", tr, "--json")
    names = {n["name"] for n in info["nodes"]}
    assert "conv_lif" in names
    conv = next(n for n in info["nodes"] if n["name"] == "conv_lif")["observables"]["spikes"]
    assert conv["type"] == "ValuedEventData" and conv["n_neurons"] == 4096
    assert info["metadata"]["model_sha256"] == hashlib.sha256(open(MODEL, "rb").read()).hexdigest()
    assert set(info["ops"]["nodes"]) == {l["name"] for l in j["layers"]}
    text = run("trace", "info", tr).stdout
    for part in ("conv_lif", "ValuedEventData", "model_sha256", "ops", "energy", "attention"):
        assert part in text, part


@test
def plot_script_draws_every_figure():
    tr, out = path("plot.h5"), path("figs")
    bundled("--trace", tr, "--record", "spikes,energy,attention", "--record-samples", "0-2", "--record-steps", "0")
    p = subprocess.run(["/usr/bin/python3", os.path.join(ROOT, "tools", "plot_trace.py"), tr, "--out", out],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    for name in ("raster.png", "rates.png", "energy.png", "attention_b0_attn.png"):
        data = open(os.path.join(out, name), "rb").read()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 5000, name


def expect_one_line_error(args, needles):
    p = run(*args, check=False)
    assert p.returncode != 0, args
    lines = [l for l in p.stderr.splitlines() if l.strip()]
    assert len(lines) == 1, p.stderr
    for n in needles:
        assert n in lines[0], (n, lines[0])


@test
def trace_info_rejects_bad_files_with_one_line():
    good = path("good.h5")
    bundled("--trace", good, "--record-nodes", "conv_lif")
    expect_one_line_error(["trace", "info", path("nothere.h5")], ["nothere.h5"])
    open(path("text.h5"), "w").write("not hdf5\n")
    expect_one_line_error(["trace", "info", path("text.h5")], ["text.h5"])
    data = open(good, "rb").read()
    open(path("trunc.h5"), "wb").write(data[: len(data) // 2])
    expect_one_line_error(["trace", "info", path("trunc.h5")], ["trunc.h5"])
    expect_one_line_error(["trace", "info", MODEL], ["bsa_digits.h5", "__type__"])
    with h5py.File(good, "a") as f:
        del f["nodes/conv_lif/observables/spikes/idx"]
    expect_one_line_error(["trace", "info", good], ["good.h5", "nodes/conv_lif/observables/spikes/idx"])


@test
def oversized_trace_is_refused_with_the_estimate():
    tr = path("big.h5")
    p = run("run", MODEL, "--input", DATA, "--trace", tr, "--record", "membrane",
            "--max-trace-bytes", 100000, "--no-progress", check=False)
    assert p.returncode != 0 and "max-trace-bytes" in p.stderr and "estimated" in p.stderr
    est = int(p.stderr.split("estimated ")[1].split(" ")[0])
    # membrane of every spiking node: 360 samples x 4 steps x neurons x 4 bytes
    small = run_json("run", MODEL, "--input", DATA, "--samples", 1)
    neurons = sum(l["neurons"] for l in small["layers"] if l["firing_rate"] is not None)
    assert est == 360 * 4 * neurons * 4, (est, neurons)
    assert not os.path.exists(tr)


def long_run(target, extra=()):
    """A run that records a large membrane grid: both the simulation and the write take time."""
    return subprocess.Popen([TERNION, "run", MODEL, "--input", DATA, "--threads", "1", "--samples", "200",
                             "--trace", target, "--record", "all", "--spike-format", "grid",
                             "--no-progress", *extra],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def interrupt_at(sig, delay, target):
    proc = long_run(target)
    time.sleep(delay)
    finished = proc.poll() is not None
    if not finished:
        proc.send_signal(sig)
    proc.wait(timeout=60)
    return finished, proc.returncode


@test
def interrupted_or_killed_runs_keep_the_old_trace():
    target = path("keep.h5")
    bundled("--trace", target, "--record-nodes", "conv_lif")
    before = open(target, "rb").read()
    # Timings spread over the simulation and the write phase of a full run.
    t0 = time.time()
    p = long_run(path("timing.h5"))
    p.wait(timeout=120)
    full = time.time() - t0
    interrupted, killed_while_writing = 0, 0
    d = os.path.dirname(target)
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGKILL):
        for frac in (0.1, 0.35, 0.6):  # simulating, then writing (the write is most of a run)
            finished, rc = interrupt_at(sig, full * frac, target)
            if finished:  # a slow machine can finish first: the new file is the new reference
                before = open(target, "rb").read()
                continue
            interrupted += 1
            assert rc != 0
            assert open(target, "rb").read() == before, (sig, frac)
            tmps = [f for f in os.listdir(d) if f.startswith(".keep.h5.tmp-")]
            if sig != signal.SIGKILL:  # the handler removes the temporary; SIGKILL cannot
                assert not tmps, tmps
            elif tmps:  # killed halfway through writing the temporary: the target is intact
                killed_while_writing += 1
                for f in tmps:
                    os.remove(os.path.join(d, f))
    assert interrupted >= 5, interrupted
    # Deterministically in the write phase: SIGKILL the moment the temporary file appears
    # (fixed delays alone depend on the machine's speed, e.g. under sanitizers).
    for _ in range(3):
        if killed_while_writing:
            break
        proc = long_run(target)
        deadline = time.time() + 300
        tmps = []
        while proc.poll() is None and time.time() < deadline and not tmps:
            tmps = [f for f in os.listdir(d) if f.startswith(".keep.h5.tmp-")]
            time.sleep(0.001)
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=60)
        if proc.returncode == 0:  # the write finished between two polls: try again
            before = open(target, "rb").read()
            continue
        assert open(target, "rb").read() == before, "killed while writing"
        assert tmps, "the run ended before writing"
        killed_while_writing += 1
        for f in os.listdir(d):
            if f.startswith(".keep.h5.tmp-"):
                os.remove(os.path.join(d, f))
    assert killed_while_writing >= 1, "no SIGKILL landed in the write phase"


@test
def interrupted_run_without_old_file_leaves_nothing():
    target = path("fresh.h5")
    for sig in (signal.SIGTERM, signal.SIGKILL):
        proc = long_run(target)
        time.sleep(0.5)
        assert proc.poll() is None
        proc.send_signal(sig)
        proc.wait(timeout=60)
        assert not os.path.exists(target)


finish()
