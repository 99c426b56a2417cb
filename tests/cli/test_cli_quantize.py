#!/usr/bin/env python3
"""`ternion quantize` end to end. A float network (SpikingJelly LIF and BSA's ternary neuron
behind Linear layers, an Affine readout) is quantised with two profiles; the integer model's
spikes and outputs must equal, at every step, a numpy reference written here from the rule in
docs/fixed-point.md (power-of-two scale per population, gain folded into the weights, round
half to even, threshold and bias in membrane units) and the FixedLIF equations, on both engines
and 1 and 3 threads. Also: the bundled BSA model quantised keeps its accuracy within a few
points, and bad requests fail with one line naming the file and field.
"""
import json
import os

import h5py
import numpy as np

from harness import expect_error, finish, path, run, run_json, test
from nirfile import Nir, spikes_file, trace_spikes

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUNDLED = os.path.join(ROOT, "models", "bundled")
rng = np.random.default_rng(381)

# The two profiles' datapaths (hw/profiles/*.json "formats"), as the reference needs them.
LOIHI = dict(bits=8, ishift=6, tshift=6, du_off=1, cur=24, cur_wrap=True, mem=24, mem_sym=True,
             chip_ge=False, max_scale=False, per_channel=False)
INT8 = dict(bits=8, ishift=0, tshift=0, du_off=0, cur=32, cur_wrap=True, mem=16, mem_sym=False,
            chip_ge=None, max_scale=True, per_channel=True)  # None: the model's comparator


def floor_log2_fit(x, limit):
    """Largest e with x 2^e <= limit."""
    if x <= 0:
        return 0
    e = int(np.floor(np.log2(limit / x)))
    while x * 2.0**e > limit:
        e -= 1
    return e


def rtz(x, s):
    return np.sign(x) * (np.abs(x) >> s)


def wrap(x, bits):
    half, period = 2 ** (bits - 1), 2**bits
    return np.where((x > -half) & (x <= half), x, (x + half - 1) % period - half + 1)


def saturate(x, bits, symmetric):
    hi = 2 ** (bits - 1) - 1
    return np.clip(x, -hi if symmetric else -hi - 1, hi)


def fit(x, limit, dp):
    """The scale that brings x to at most limit: a power of two, or limit / x."""
    return limit / x if dp["max_scale"] else 2.0 ** floor_log2_fit(x, limit)


def population(W, g, a, theta, model_ge, ternary, dp):
    """Integer weights and neuron constants of one population, from docs/fixed-point.md: a
    scale per row (output channel) or one for the population, the smaller of what fills the
    weights and what keeps twice the threshold within the membrane."""
    qmax = 2 ** (dp["bits"] - 1) - 1
    vmax = 2 ** (dp["mem"] - 1) - 1
    wmax = np.abs(W).max(axis=1) if dp["per_channel"] else np.full(W.shape[0], np.abs(W).max())
    s = np.array([min(fit(m * abs(g), qmax, dp), fit(2 * theta * 2.0 ** dp["ishift"], vmax, dp))
                  for m in wmax])
    Wi = np.round(W * g * s[:, None]).astype(np.int64)  # numpy rounds half to even
    X = theta * s * 2.0 ** dp["ishift"]
    chip_ge = model_ge if dp["chip_ge"] is None else dp["chip_ge"]
    if dp["tshift"] > 0:
        vth = np.round(X / 2 ** dp["tshift"])
        vlo = np.round(-X / 2 ** dp["tshift"])
    elif chip_ge:
        vth = np.ceil(X) if model_ge else np.floor(X) + 1
        vlo = np.floor(-X) if model_ge else np.ceil(-X) - 1
    else:
        vth = np.ceil(X) - 1 if model_ge else np.floor(X)
        vlo = np.floor(-X) + 1 if model_ge else np.ceil(-X)
    dv = int(np.round(4096 * (1 - a)))
    return dict(W=Wi, vth=vth.astype(np.int64), vlo=vlo.astype(np.int64) if ternary else None,
                dv=dv, ge=chip_ge)


def run_population(p, x, dp, state):
    """One step of FixedLIF (decay_then_add, single compartment) for input sums x."""
    u = (x.astype(np.int64)) << dp["ishift"]  # du clears the current: u = the input
    u = wrap(u, dp["cur"]) if dp["cur_wrap"] else saturate(u, dp["cur"], False)
    v = saturate(rtz(state * (4096 - p["dv"]), 12) + u, dp["mem"], dp["mem_sym"])
    th = p["vth"] << dp["tshift"]
    s = (v >= th) if p["ge"] else (v > th)
    s = s.astype(np.int64)
    if p["vlo"] is not None:
        lo = p["vlo"] << dp["tshift"]
        s -= ((v <= lo) if p["ge"] else (v < lo)).astype(np.int64)
    v = np.where(s != 0, 0, v)
    return s, v


def float_net():
    n_in, h1, h2, n_out = 20, 16, 12, 5
    return dict(W1=rng.normal(0, 0.6, (h1, n_in)), W2=rng.normal(0, 0.5, (h2, h1)),
                W3=rng.normal(0, 0.4, (n_out, h2)), b3=rng.normal(0, 0.2, n_out),
                tau=2.0, th1=1.0, decay=0.5, th2=0.7)


def write_float(fname, net, tokens=0):
    shape = [tokens, net["W1"].shape[1]] if tokens else [net["W1"].shape[1]]
    out = [tokens, net["W3"].shape[0]] if tokens else [net["W3"].shape[0]]
    (Nir().node("input", "Input", shape=np.array(shape))
     .node("fc1", "Linear", weight=net["W1"].astype(np.float32))
     .node("lif", "ternion.SJLIF", tau=np.float64(net["tau"]), decay_input=np.int64(1),
           v_threshold=np.float64(net["th1"]), v_reset=np.float64(0.0))
     .node("fc2", "Linear", weight=net["W2"].astype(np.float32))
     .node("tsn", "ternion.TernaryLIF", decay=np.float64(net["decay"]),
           v_threshold=np.float64(net["th2"]))
     .node("head", "Affine", weight=net["W3"].astype(np.float32), bias=net["b3"].astype(np.float32))
     .node("output", "Output", shape=np.array(out))
     .edge("input", "fc1").edge("fc1", "lif").edge("lif", "fc2").edge("fc2", "tsn")
     .edge("tsn", "head").edge("head", "output").write(fname))


def reference(net, spikes, dp):
    """Spikes of lif and tsn and the readout per step, all integers."""
    W1, W2, W3 = (net[k].astype(np.float32).astype(np.float64) for k in ("W1", "W2", "W3"))
    p1 = population(W1, 1.0 / net["tau"], 1 - 1.0 / net["tau"], net["th1"], True, False, dp)
    p2 = population(W2, 1.0, net["decay"], net["th2"], True, True, dp)
    s3 = fit(np.abs(W3).max(), 2 ** (dp["bits"] - 1) - 1, dp)  # one scale: a readout
    W3i = np.round(W3 * s3).astype(np.int64)
    b3i = np.round(net["b3"].astype(np.float32).astype(np.float64) * s3).astype(np.int64)
    # Token layers ([tokens, features] per step) apply each layer to every token: the neuron of
    # token t and channel o has the constants of channel o.
    tok = spikes.shape[1] if spikes.ndim == 3 else 0
    x_shape = (tok,) if tok else ()
    v1 = np.zeros(x_shape + (W1.shape[0],), np.int64)
    v2 = np.zeros(x_shape + (W2.shape[0],), np.int64)
    s1s, s2s, outs = [], [], []
    for t in range(spikes.shape[0]):
        s1, v1 = run_population(p1, spikes[t].astype(np.int64) @ p1["W"].T, dp, v1)
        s2, v2 = run_population(p2, s1 @ p2["W"].T, dp, v2)
        s1s.append(s1.reshape(-1))
        s2s.append(s2.reshape(-1))
        outs.append((s2 @ W3i.T + b3i).reshape(-1))
    return np.array(s1s), np.array(s2s), np.array(outs)


def trace_of(model, spikes, name, engine, threads):
    spikes_file(path(f"{name}_in.h5"), spikes[None])
    tr = path(f"{name}_{engine}{threads}.h5")
    run("run", model, "--input", path(f"{name}_in.h5"), "--engine", engine, "--threads", threads,
        "--trace", tr, "--record", "spikes", "--record-nodes", "lif,tsn")
    return trace_spikes(tr, "lif")[0], trace_spikes(tr, "tsn")[0]


@test
def quantised_network_equals_the_documented_rule():
    for profile, dp in (("loihi-like", LOIHI), ("horowitz45-int8", INT8)):
        fired = 0
        for k in range(4):
            net = float_net()
            fm, qm = path(f"f{k}.h5"), path(f"q{k}_{profile}.h5")
            write_float(fm, net)
            rep = json.loads(run("quantize", fm, "-o", qm, "--profile", profile, "--json").stdout)
            actions = {n["name"]: n["action"] for n in rep["nodes"]}
            assert actions == {"fc1": "integer weights", "lif": "FixedLIF", "fc2": "integer weights",
                               "tsn": "FixedLIF", "head": "integer weights"}, actions
            T = 30
            spikes = (rng.random((T, net["W1"].shape[1])) < 0.4).astype(np.int8)
            s1, s2, _ = reference(net, spikes, dp)
            fired += int(np.abs(s1).sum() + np.abs(s2).sum())
            assert (s2 < 0).any() and (s2 > 0).any(), "both polarities of the ternary neuron"
            with h5py.File(qm, "r") as f:
                assert f["node/nodes/fc1/weight"].dtype == np.int64
                assert f["node/nodes/lif/type"][()].decode() == "ternion.FixedLIF"
            for engine in ("event", "dense"):
                for threads in (1, 3):
                    a, b = trace_of(qm, spikes, f"q{k}{profile}", engine, threads)
                    assert np.array_equal(a, s1), (profile, k, engine, threads, "lif")
                    assert np.array_equal(b, s2), (profile, k, engine, threads, "tsn")
        assert fired > 200, fired


@test
def token_layers_take_their_channel_constants():
    # Linear layers on [tokens, features]: with a scale per output channel, the neuron of
    # token t and channel o gets channel o's threshold (channels last, unlike convolutions).
    for profile, dp in (("horowitz45-int8", INT8), ("loihi-like", LOIHI)):
        net = float_net()
        fm, qm = path("tok_f.h5"), path(f"tok_q_{profile}.h5")
        write_float(fm, net, tokens=4)
        run("quantize", fm, "-o", qm, "--profile", profile)
        spikes = (rng.random((25, 4, net["W1"].shape[1])) < 0.4).astype(np.int8)
        s1, s2, _ = reference(net, spikes, dp)
        assert (s2 != 0).sum() > 20
        for engine in ("event", "dense"):
            a, b = trace_of(qm, spikes, f"tok{profile}", engine, 2)
            assert np.array_equal(a.reshape(a.shape[0], -1), s1), (profile, engine, "lif")
            assert np.array_equal(b.reshape(b.shape[0], -1), s2), (profile, engine, "tsn")


def quantized_case(tag, samples, steps):
    """A float_net() in f<tag>.h5, quantized with the defaults into q<tag>.h5, and random input
    spikes [samples, steps, inputs] in <tag>_in.h5; returns the net and the spikes."""
    net = float_net()
    write_float(path(f"f{tag}.h5"), net)
    run("quantize", path(f"f{tag}.h5"), "-o", path(f"q{tag}.h5"))
    spikes = (rng.random((samples, steps, net["W1"].shape[1])) < 0.4).astype(np.int8)
    spikes_file(path(f"{tag}_in.h5"), spikes)
    return net, spikes


@test
def integer_weights_are_read_at_their_width():
    # 8-bit weights: one byte per synaptic event, against the float model's four.
    quantized_case("w", 2, 10)
    f = {l["name"]: l["ops"] for l in run_json("run", path("fw.h5"), "--input", path("w_in.h5"))["layers"]}
    q = {l["name"]: l["ops"] for l in run_json("run", path("qw.h5"), "--input", path("w_in.h5"))["layers"]}
    assert f["fc1"]["weight_read_bytes"] == 4 * f["fc1"]["ac"] > 0
    # (weights rounded to 0 are no synapses any more: at most the float model's events)
    assert q["fc1"]["weight_read_bytes"] == q["fc1"]["ac"] and 0 < q["fc1"]["ac"] <= f["fc1"]["ac"]
    assert q["fc2"]["weight_read_bytes"] == q["fc2"]["ac"]


@test
def readout_is_the_integer_sum():
    net, spikes = quantized_case("r", 1, 12)
    tr = path("r_tr.h5")
    run("run", path("qr.h5"), "--input", path("r_in.h5"), "--trace", tr, "--record", "membrane",
        "--record-nodes", "head")
    with h5py.File(tr, "r") as f:
        head = f["nodes/head/observables/v/data"][()][0]
    _, _, outs = reference(net, spikes[0], LOIHI)
    assert np.array_equal(head, outs.astype(np.float32)), (head[:2], outs[:2])


@test
def bundled_bsa_keeps_its_accuracy():
    model = os.path.join(BUNDLED, "bsa_digits.h5")
    data = os.path.join(BUNDLED, "digits_test.h5")
    rep = json.loads(run("quantize", model, "-o", path("bsa_q.h5"), "--json").stdout)
    kept = [n["name"] for n in rep["nodes"] if n["action"] == "kept float"]
    assert kept == [], kept
    attn = [n for n in rep["nodes"] if n["name"] == "b0_attn"][0]
    assert attn["action"] == "integer attention", attn
    f = run_json("run", model, "--input", data)
    q = run_json("run", path("bsa_q.h5"), "--input", data)
    assert q["accuracy"] >= f["accuracy"] - 0.03, (f["accuracy"], q["accuracy"])
    q3 = run_json("run", path("bsa_q.h5"), "--input", data, "--threads", 3, "--engine", "dense")
    assert q3["predictions"] == q["predictions"]
    # --arith fixed runs the same integer model without a file of its own.
    arith = run_json("run", model, "--input", data, "--arith", "fixed", "--profile", "loihi-like")
    q_priced = run_json("run", path("bsa_q.h5"), "--input", data, "--profile", "loihi-like")
    assert arith["predictions"] == q["predictions"]
    assert arith["per_inference"] == q_priced["per_inference"]
    assert any("--arith fixed: 4 neuron populations" in n for n in arith["notes"]), arith["notes"]
    two = json.loads(run("quantize", model, "-o", path("bsa_q2.h5"), "--weight-bits", 2,
                         "--json").stdout)
    assert all(abs(n["max_weight"]) <= 1 for n in two["nodes"]), two


@test
def bad_requests_name_the_field():
    model = os.path.join(BUNDLED, "bsa_digits.h5")
    expect_error(["quantize", model, "-o", model], "--output", "never writes over its input")
    expect_error(["quantize", model], "--output")
    data = os.path.join(BUNDLED, "digits_test.h5")
    expect_error(["run", model, "--input", data, "--arith", "fixed"], "horowitz45-fp32.json",
                 "formats", "missing")
    expect_error(["run", model, "--input", data, "--arith", "int"], "--arith", "float")
    expect_error(["quantize", model, "-o", path("x.h5"), "--weight-bits", 17], "--weight-bits")
    expect_error(["quantize", model, "-o", path("x.h5"), "--profile", "horowitz45-fp32"],
                 "horowitz45-fp32.json", "formats", "missing")
    prof = json.load(open(os.path.join(ROOT, "hw", "profiles", "loihi-like.json")))
    prof["formats"]["neuron"]["membrane_bits"] = 40
    json.dump(prof, open(path("p1.json"), "w"))
    expect_error(["quantize", model, "-o", path("x.h5"), "--profile", path("p1.json")],
                 "p1.json", "formats.neuron.membrane_bits", "[2, 32]")
    prof["formats"]["neuron"] = {"datapath": "loihi", "membrane_bitz": 16}
    json.dump(prof, open(path("p2.json"), "w"))
    expect_error(["quantize", model, "-o", path("x.h5"), "--profile", path("p2.json")],
                 "p2.json", "formats.neuron.membrane_bitz", "unknown key")
    prof["formats"]["neuron"] = {"datapath": "xylo"}
    json.dump(prof, open(path("p3.json"), "w"))
    expect_error(["quantize", model, "-o", path("x.h5"), "--profile", path("p3.json")],
                 "p3.json", "formats.neuron", "bit-shift")
    assert not os.path.exists(path("x.h5"))


finish()
