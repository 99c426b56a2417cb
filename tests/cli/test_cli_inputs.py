#!/usr/bin/env python3
"""`ternion run` on models with several Input nodes (docs/inputs.md, "Several Input nodes").

A two-stream network: Input a (spikes, an event stream) -> Linear -> LIF la, Input b (analog
data, direct encoding) -> Linear -> LIF lb, la + lb summed by a ternion.Identity -> LIF lo ->
Output. The spikes are compared with a numpy implementation of the documented update
(docs/model-format.md, "Neurons": with euler discretisation, dt = 1e-4, tau = dt/(1-beta) and
r = tau/dt it is v <- beta v + I, a spike where v > threshold, zero reset). Weights and data
are multiples of 1/64, so every sum is exact in float32 and the comparison is exact.
"""
import json

import h5py
import numpy as np

import harness
from harness import finish, path, run, run_json, test
from nirfile import Nir, spikes_file, trace_spikes

DT = 1e-4
rng = np.random.default_rng(19)
NA, NB, NH, S, T = 5, 3, 4, 6, 12


def dyadic(shape, scale=1.0):
    return (np.round(rng.uniform(-scale, scale, shape) * 64) / 64).astype(np.float32)


def leaky(beta, thr, n):
    beta = np.full(n, beta, np.float32)
    tau = (DT / (1 - beta.astype(np.float64))).astype(np.float32)
    return dict(tau=tau, r=(tau / DT).astype(np.float32), v_leak=np.zeros(n, np.float32),
                v_threshold=np.full(n, thr, np.float32), v_reset=np.zeros(n, np.float32))


def lif(mem, inp, beta, thr):
    mem = (np.float32(beta) * mem + inp).astype(np.float32)
    spk = (mem > np.float32(thr)).astype(np.float32)
    return np.where(spk > 0, np.float32(0), mem).astype(np.float32), spk


WA, WB = dyadic((NH, NA)) * 2, dyadic((NH, NB)) * 2


def two_stream_model(fname, shape_b=(NB,)):
    (Nir().node("a", "Input", shape=np.array([NA])).node("b", "Input", shape=np.array(shape_b))
     .node("fa", "Linear", weight=WA).node("la", "LIF", **leaky(0.75, 0.5, NH))
     .node("fb", "Linear", weight=WB).node("lb", "LIF", **leaky(0.5, 0.5, NH))
     .node("join", "ternion.Identity").node("lo", "LIF", **leaky(0.875, 0.75, NH))
     .node("output", "Output", shape=np.array([NH]))
     .edge("a", "fa").edge("fa", "la").edge("b", "fb").edge("fb", "lb")
     .edge("la", "join").edge("lb", "join").edge("join", "lo").edge("lo", "output")
     .write(fname))


def two_stream_input(fname, xa, xb, labels=None, kinds=("spikes", "data")):
    with h5py.File(fname, "w") as f:
        f[f"inputs/a/{kinds[0]}"] = xa
        f[f"inputs/b/{kinds[1]}"] = xb
        if labels is not None:
            f["labels"] = np.asarray(labels, np.int64)


def reference(xa, xb):
    """numpy spikes of la, lb, lo: [S, T, NH] each."""
    out = {k: np.zeros((xa.shape[0], xa.shape[1], NH), np.float32) for k in ("la", "lb", "lo")}
    for s in range(xa.shape[0]):
        ma, mb, mo = (np.zeros(NH, np.float32) for _ in range(3))
        for t in range(xa.shape[1]):
            ma, sa = lif(ma, (WA @ xa[s, t].astype(np.float32)).astype(np.float32), 0.75, 0.5)
            mb, sb = lif(mb, (WB @ xb[s]).astype(np.float32), 0.5, 0.5)
            mo, so = lif(mo, sa + sb, 0.875, 0.75)
            out["la"][s, t], out["lb"][s, t], out["lo"][s, t] = sa, sb, so
    return out


XA = (rng.random((S, T, NA)) < 0.4).astype(np.int8)
XB = (np.round(rng.uniform(-0.5, 1.0, (S, NB)) * 64) / 64).astype(np.float32)
LABELS = np.arange(S) % NH
two_stream_model(path("two.h5"))
two_stream_input(path("two_in.h5"), XA, XB, LABELS)


def expect_error(args, *parts):
    return harness.expect_error([*args, "--dt", DT], *parts)


@test
def two_streams_match_numpy_on_both_engines_and_thread_counts():
    ref = reference(XA, XB)
    assert all(ref[k].sum() > 5 for k in ref), {k: ref[k].sum() for k in ref}
    seen = []
    for engine in ("event", "dense"):
        for threads in (1, 2):
            tr = path(f"two_{engine}_{threads}.h5")
            j = run_json("run", path("two.h5"), "--input", path("two_in.h5"), "--dt", DT,
                         "--engine", engine, "--threads", threads, "--trace", tr)
            assert j["samples"] == S and j["timesteps"] == T
            layers = {l["name"]: l for l in j["layers"]}
            for k in ("la", "lb", "lo"):
                assert (trace_spikes(tr, k) == ref[k]).all(), (engine, threads, k)
                assert layers[k]["spikes"] == int(ref[k].sum())
            pred = ref["lo"].sum(1).argmax(1)
            assert j["predictions"] == pred.tolist()
            assert abs(j["accuracy"] - float((pred == LABELS).mean())) < 1e-12
            # a's spikes cost the non-zero weights of their columns; b's direct values are MACs
            assert layers["fa"]["ops"]["ac"] == int((XA * (WA != 0).sum(0)).sum())
            assert layers["fb"]["ops"]["mac"] == int(T * ((XB != 0) * (WB != 0).sum(0)).sum())
            j.pop("timing")
            j.pop("engine", None)
            j.pop("threads", None)
            seen.append(json.dumps(j["layers"], sort_keys=True))
    assert len(set(seen)) == 1  # event == dense, 1 == 2 threads, every count


@test
def text_report_names_each_input_kind():
    out = run("run", path("two.h5"), "--input", path("two_in.h5"), "--dt", DT, "--no-progress").stdout
    assert "a: replayed spikes (samples-first), b: direct encoding" in out, out


@test
def info_lists_both_inputs():
    out = run("info", path("two.h5"), "--dt", DT).stdout
    assert "a" in out and "b" in out and "Input" in out, out


@test
def subrange_equals_the_whole_runs_rows():
    tr = path("two_sub.h5")
    j = run_json("run", path("two.h5"), "--input", path("two_in.h5"), "--dt", DT,
                 "--first", 2, "--samples", 3, "--trace", tr)
    ref = reference(XA[2:5], XB[2:5])
    assert (trace_spikes(tr, "lo") == ref["lo"]).all()
    assert j["predictions"] == ref["lo"].sum(1).argmax(1).tolist()


@test
def spike_inputs_of_different_lengths_need_timesteps():
    xb = (rng.random((S, T + 3, NB)) < 0.5).astype(np.int8)
    two_stream_input(path("two_len.h5"), XA, xb, kinds=("spikes", "spikes"))
    expect_error(["run", path("two.h5"), "--input", path("two_len.h5")],
                 "two_len.h5", "/inputs/b/spikes", str(T + 3), "/inputs/a/spikes", "--timesteps")
    expect_error(["run", path("two.h5"), "--input", path("two_len.h5"), "-T", T + 1],
                 "timesteps", "/inputs/a/spikes")
    j = run_json("run", path("two.h5"), "--input", path("two_len.h5"), "--dt", DT, "-T", T)
    assert j["timesteps"] == T


@test
def poisson_inputs_draw_their_own_numbers():
    # Both Inputs analog with the same data: a's spikes are the single-input model's (the same
    # key as before), b's differ from a's; any thread count gives the same.
    x = np.full((S, NA), 0.5, np.float32)
    (Nir().node("a", "Input", shape=np.array([NA])).node("b", "Input", shape=np.array([NA]))
     .node("ja", "ternion.Identity").node("jb", "ternion.Identity")
     .node("join", "ternion.Identity").node("output", "Output", shape=np.array([NA]))
     .edge("a", "ja").edge("b", "jb").edge("ja", "join").edge("jb", "join").edge("join", "output")
     .write(path("pois2.h5")))
    (Nir().node("a", "Input", shape=np.array([NA])).node("ja", "ternion.Identity")
     .node("output", "Output", shape=np.array([NA])).edge("a", "ja").edge("ja", "output")
     .write(path("pois1.h5")))
    two_stream_input(path("pois2_in.h5"), x, x, kinds=("data", "data"))
    with h5py.File(path("pois1_in.h5"), "w") as f:
        f["data"] = x
    args = ["--encoding", "poisson", "-T", 16, "--seed", 7, "--no-progress", "--record", "spikes"]
    got = {}
    for threads in (1, 2):
        run("run", path("pois2.h5"), "--input", path("pois2_in.h5"), *args, "--threads", threads,
            "--record-nodes", "ja,jb", "--trace", path(f"pois2_{threads}.h5"))
        got[threads] = {k: trace_spikes(path(f"pois2_{threads}.h5"), k) for k in ("ja", "jb")}
    run("run", path("pois1.h5"), "--input", path("pois1_in.h5"), *args, "--record-nodes", "ja",
        "--trace", path("pois1_t.h5"))
    one = trace_spikes(path("pois1_t.h5"), "ja")
    assert (got[1]["ja"] == one).all()
    assert (got[1]["jb"] != got[1]["ja"]).any()
    for k in ("ja", "jb"):
        assert (got[1][k] == got[2][k]).all()
        assert 0.35 < got[1][k].mean() < 0.65  # Bernoulli(0.5)


@test
def one_input_in_its_inputs_group_equals_spikes():
    (Nir().node("a", "Input", shape=np.array([NA])).node("fa", "Linear", weight=WA)
     .node("la", "LIF", **leaky(0.75, 0.5, NH)).node("output", "Output", shape=np.array([NH]))
     .edge("a", "fa").edge("fa", "la").edge("la", "output").write(path("one.h5")))
    spikes_file(path("one_flat.h5"), XA, LABELS)
    with h5py.File(path("one_group.h5"), "w") as f:
        f["inputs/a/spikes"] = XA
        f["labels"] = LABELS
    flat = run_json("run", path("one.h5"), "--input", path("one_flat.h5"), "--dt", DT)
    grouped = run_json("run", path("one.h5"), "--input", path("one_group.h5"), "--dt", DT)
    for j in (flat, grouped):
        j.pop("timing")
        j.pop("input")
    assert flat == grouped
    assert flat["layers"][2]["spikes"] == int(reference(XA, XB)["la"].sum())


@test
def each_broken_input_is_one_error_naming_file_and_dataset():
    m = path("two.h5")
    with h5py.File(path("no_b.h5"), "w") as f:
        f["inputs/a/spikes"] = XA
    expect_error(["run", m, "--input", path("no_b.h5")], "no_b.h5", "/inputs/b/spikes",
                 "/inputs/b/data", "'b'")
    spikes_file(path("flat.h5"), XA)  # a one-input file for a two-input model
    expect_error(["run", m, "--input", path("flat.h5")], "flat.h5", "/inputs/a/spikes")
    two_stream_input(path("samples.h5"), XA, XB[:-1])
    expect_error(["run", m, "--input", path("samples.h5")], "samples.h5", "/inputs/b/data",
                 f"{S - 1} samples", "/inputs/a/spikes", str(S))
    two_stream_input(path("shape.h5"), XA, np.zeros((S, NB + 1), np.float32))
    expect_error(["run", m, "--input", path("shape.h5")], "shape.h5", "/inputs/b/data",
                 f"[{NB + 1}]", f"[{NB}]", "'b'")
    two_stream_input(path("labels.h5"), XA, XB, labels=np.arange(S + 1))
    expect_error(["run", m, "--input", path("labels.h5")], "labels.h5", "/labels")
    with h5py.File(path("both.h5"), "w") as f:
        f["inputs/a/spikes"] = XA
        f["inputs/b/data"] = XB
        f["inputs/b/spikes"] = XA[:, :, :NB]
    expect_error(["run", m, "--input", path("both.h5")], "both.h5", "/inputs/b", "keep one")
    bad = XA.copy()
    bad[1, 2, 3] = 2
    two_stream_input(path("value.h5"), bad, XB)
    expect_error(["run", m, "--input", path("value.h5")], "value.h5", "/inputs/a/spikes",
                 "sample 1, step 2, element 3")
    nan = XB.copy()
    nan[4, 1] = np.nan
    two_stream_input(path("nan.h5"), XA, nan)
    expect_error(["run", m, "--input", path("nan.h5")], "nan.h5", "/inputs/b/data", "sample 4")
    np.save(path("a.npy"), XA)
    expect_error(["run", m, "--input", path("a.npy")], "a.npy", "2 Input nodes", "/inputs/<node>")



def latency(x, T):
    """docs/inputs.md: one spike of polarity sign(x) at step round((1 - min(|x|, 1)) (T - 1)),
    in float32 as ternion computes it (lround: halves away from zero); x = 0 never fires."""
    a = np.minimum(np.abs(x), np.float32(1)).astype(np.float32)
    step = np.floor((np.float32(1) - a) * np.float32(T - 1) + np.float32(0.5)).astype(int)
    out = np.zeros((x.shape[0], T, *x.shape[1:]), np.int8)
    for t in range(T):
        out[:, t] = np.where((a > 0) & (step == t), np.sign(x), 0)
    return out


XA_ANALOG = (np.round(rng.uniform(-1.0, 1.0, (S, NA)) * 64) / 64).astype(np.float32)
XA_ANALOG[0, 0] = 0  # never fires
two_stream_input(path("two_analog.h5"), XA_ANALOG, XB, LABELS, kinds=("data", "data"))


@test
def encoding_per_input_node():
    """--encoding a=latency: a latency-coded, b direct (the default); the same as a's latency
    spikes given as spikes, computed from the closed form."""
    ref = reference(latency(XA_ANALOG, T), XB)
    assert latency(XA_ANALOG, T).any() and ref["lo"].sum() > 5
    for enc in (["a=latency"], ["latency", "b=direct"], ["b=direct", "a=latency"]):
        args = [x for e in enc for x in ("--encoding", e)]
        tr = path("enc_node.h5")
        out = run("run", path("two.h5"), "--input", path("two_analog.h5"), "--dt", DT, "-T", T,
                  *args, "--trace", tr, "--no-progress").stdout
        assert "a: latency encoding, b: direct encoding" in out, (enc, out)
        for k in ("la", "lb", "lo"):
            assert (trace_spikes(tr, k) == ref[k]).all(), (enc, k)
    # One kind for all: both latency-coded, as when each is named.
    out = run("run", path("two.h5"), "--input", path("two_analog.h5"), "--dt", DT, "-T", T,
              "--encoding", "latency", "--no-progress").stdout
    assert "a: latency encoding, b: latency encoding" in out, out
    both = [run_json("run", path("two.h5"), "--input", path("two_analog.h5"), "--dt", DT, "-T", T,
                     *e)["layers"]
            for e in (["--encoding", "latency"], ["--encoding", "a=latency", "--encoding", "b=latency"])]
    assert both[0] == both[1] and both[0] != run_json(
        "run", path("two.h5"), "--input", path("two_analog.h5"), "--dt", DT, "-T", T)["layers"]
    # The report names each node's encoding; `encoding` stays the default for unnamed nodes.
    j = run_json("run", path("two.h5"), "--input", path("two_analog.h5"), "--dt", DT, "-T", T,
                 "--encoding", "poisson", "--encoding", "a=latency")
    assert j["input_encodings"] == {"a": "latency", "b": "poisson"} and j["encoding"] == "poisson"
    j = run_json("run", path("two.h5"), "--input", path("two_in.h5"), "--dt", DT,
                 "--encoding", "latency")
    assert j["input_encodings"] == {"a": "spikes", "b": "latency"}, j["input_encodings"]


@test
def encoding_per_node_errors():
    m, i = path("two.h5"), path("two_analog.h5")
    expect_error(["run", m, "--input", i, "--encoding", "c=poisson"], "option --encoding",
                 "'c' is not an Input node", "Input nodes: a, b")
    expect_error(["run", m, "--input", i, "--encoding", "a=poisson", "--encoding", "a=latency"],
                 "option --encoding", "Input node 'a' given twice")
    expect_error(["run", m, "--input", i, "--encoding", "poisson", "--encoding", "latency"],
                 "option --encoding", "given twice")
    expect_error(["run", m, "--input", i, "--encoding", "a=rate"], "option --encoding", "'rate'")
    expect_error(["run", m, "--input", i, "--encoding", "=poisson"], "option --encoding",
                 "names no Input node")


@test
def encode_writes_one_spike_dataset_per_input_node():
    out = path("two_enc.h5")
    run("encode", "--input", path("two_analog.h5"), "--output", out, "-T", T, "--encoding",
        "latency", "--encoding", "b=latency")
    with h5py.File(out, "r") as f:
        assert sorted(f["inputs"]) == ["a", "b"] and "spikes" not in f and "data" not in f
        assert (f["inputs/a/spikes"][()] == latency(XA_ANALOG, T)).all()
        assert (f["inputs/b/spikes"][()] == latency(XB, T)).all()
        assert f["inputs/a/spikes"].attrs["encoding"] == "latency"
        assert (f["labels"][()] == LABELS).all()
    # Poisson: the encoded file runs as the analog file with the same encoding and seed (the
    # file's groups are in the model's Input order, so each node draws the same numbers).
    run("encode", "--input", path("two_analog.h5"), "--output", path("two_pois.h5"), "-T", T,
        "--encoding", "poisson", "--seed", 5)
    a = run_json("run", path("two.h5"), "--input", path("two_pois.h5"), "--dt", DT)
    b = run_json("run", path("two.h5"), "--input", path("two_analog.h5"), "--dt", DT, "-T", T,
                 "--encoding", "poisson", "--seed", 5)
    # Every layer alike but the Input nodes, which count the encoder's comparisons.
    beyond = lambda j: [l for l in j["layers"] if l["name"] not in ("a", "b")]  # noqa: E731
    assert beyond(a) == beyond(b) and a["predictions"] == b["predictions"]
    with h5py.File(path("two_pois.h5"), "r") as f:
        xa = f["inputs/a/spikes"][()]
    assert 0.2 < np.abs(xa).mean() / np.abs(XA_ANALOG).mean() < 2 and (xa[0, :, 0] == 0).all()
    # A spike dataset of T steps is copied; the analog one beside it is encoded.
    two_stream_input(path("two_mixed.h5"), XA, XB, LABELS)
    run("encode", "--input", path("two_mixed.h5"), "--output", path("two_mixed_enc.h5"), "-T", T,
        "--encoding", "latency")
    with h5py.File(path("two_mixed_enc.h5"), "r") as f:
        assert (f["inputs/a/spikes"][()] == XA).all()
        assert (f["inputs/b/spikes"][()] == latency(XB, T)).all()
        assert f["inputs/a/spikes"].attrs["encoding"] == "copied"


@test
def encode_per_node_errors():
    i, o = path("two_analog.h5"), path("two_enc_err.h5")
    harness.expect_error(["encode", "--input", i, "--output", o, "-T", T, "--encoding", "c=latency"],
                         "option --encoding", "'c' is not an Input node", "a, b")
    harness.expect_error(["encode", "--input", i, "--output", o, "-T", T, "--encoding", "a=direct"],
                         "option --encoding", "direct coding is analog", "'a'")
    harness.expect_error(["encode", "--input", path("two_mixed.h5"), "--output", o, "-T", T + 1],
                         "two_mixed.h5", "/inputs/a/spikes", f"holds {T} steps")
    with h5py.File(path("one_data.h5"), "w") as f:
        f["data"] = XB
    harness.expect_error(["encode", "--input", path("one_data.h5"), "--output", o, "-T", T,
                          "--encoding", "b=latency"], "option --encoding", "/inputs/<node>/data")


finish()
