#!/usr/bin/env python3
"""Import dialects (`--from`) and input traps, end to end.

Every model file here is laid out as the framework's own NIR exporter writes it (the parameter
mapping is quoted per case), and every reference is a numpy simulation of that framework's
documented update equations, in float32 and in the framework's order of operations:

- snnTorch `Leaky` (snntorch/_neurons/leaky.py: state function beta*mem + input, reset signal
  from the previous membrane, `reset_delay=True`), `Synaptic` (synaptic.py, same scheme);
  exporter (snntorch/export_nir.py): dt = 1e-4, tau = dt/(1-beta), r = tau/dt, w_in = tau_syn/dt.
- Norse `LIFBoxCell` (functional/lif_box.py), `LIFCell` (functional/lif.py), `IAFCell`
  (functional/iaf.py), `LIBoxCell` (functional/leaky_integrator_box.py), initial membranes
  from module/*.py (v_leak; IAF v_reset); exporter (utils/export_nir.py): tau = 1/tau_inv,
  r = 1, w_in = 1.
- Sinabs `IAF`, `LIF`, `ExpLeak` (layers/*.py, functional/lif.py; SingleSpike fires on
  v - threshold >= 0; MembraneSubtract); exporter (sinabs/nir.py): tau = tau_mem in steps,
  r = 1, v_leak = 0.

Weights are multiples of 1/64 and inputs spikes, so every synaptic sum is exact: equality is
exact, not approximate.
"""
import h5py
import numpy as np

from harness import expect_error, finish, path, run, run_json, test
from nirfile import Nir, spikes_file, trace_spikes

rng = np.random.default_rng(19)
f32 = np.float32


def dyadic(shape, scale=1.0):
    return (np.round(rng.uniform(-scale, scale, shape) * 64) / 64).astype(f32)


def trace_v(fname, node):
    with h5py.File(fname, "r") as f:
        return f[f"nodes/{node}/observables/v/data"][()]


def run_traced(model, inp, trace, node, spikes, membranes, *args):
    """Runs with spikes and membranes traced; node's must equal the reference bit for bit."""
    run("run", model, "--input", inp, *args, "--trace", trace, "--record", "spikes,membrane",
        "--no-progress")
    same_spikes(trace, node, spikes)
    assert (trace_v(trace, node).reshape(membranes.shape) == membranes).all()


def mlp(fname, n_in, n_h, n_out, neuron1, neuron2, meta=None):
    """Input -> Affine -> neuron1 -> Linear -> neuron2 -> Output; returns the weights."""
    w1, b1, w2 = dyadic((n_h, n_in)), dyadic(n_h, 0.25), dyadic((n_out, n_h))
    g = (Nir().node("input", "Input", shape=np.array([n_in]))
         .node("fc1", "Affine", weight=w1, bias=b1).node("n1", neuron1[0], **neuron1[1])
         .node("fc2", "Linear", weight=w2).node("n2", neuron2[0], **neuron2[1])
         .node("output", "Output", shape=np.array([n_out]))
         .edge("input", "fc1").edge("fc1", "n1").edge("n1", "fc2").edge("fc2", "n2")
         .edge("n2", "output"))
    g.write(fname)
    if meta:
        with h5py.File(fname, "a") as f:
            for k, v in meta.items():
                f[f"node/metadata/{k}"] = v
    return w1, b1, w2


def simulate(x, w1, b1, w2, step1, step2, state1, state2):
    """Runs two layers of per-step neuron functions over x [S, T, n_in]."""
    S, T = x.shape[:2]
    out1, out2, v1 = [], [], []
    for s in range(S):
        st1, st2 = state1(), state2()
        o1, o2, m1 = [], [], []
        for t in range(T):
            z1, st1 = step1((w1 @ x[s, t] + b1).astype(f32), st1)
            z2, st2 = step2((w2 @ z1).astype(f32), st2)
            o1.append(z1)
            o2.append(z2)
            m1.append(st1[0])
        out1.append(o1)
        out2.append(o2)
        v1.append(m1)
    return np.array(out1, f32), np.array(out2, f32), np.array(v1, f32)


def same_spikes(trace, node, ref):
    got = trace_spikes(trace, node).reshape(ref.shape)
    assert (got == ref).all(), (node, int(got.sum()), int(ref.sum()), int((got != ref).sum()))


# ------------------------------------------------------------------ snnTorch

DT_SNN = 1e-4


def snn_lif(beta, thr):
    tau = (DT_SNN / (1 - beta.astype(np.float64))).astype(f32)
    return "LIF", dict(tau=tau, r=(tau / DT_SNN).astype(f32), v_leak=np.zeros_like(beta),
                       v_threshold=np.full(beta.shape, thr, f32), v_reset=np.zeros_like(beta))


def snn_leaky_step(beta, thr, mechanism="subtract", delay=True):
    """snnTorch Leaky.forward: reset from the previous membrane, then the state function."""
    def step(x, st):
        mem, = st
        reset = (mem - thr > 0).astype(f32)
        if mechanism == "subtract":
            mem = (beta * mem + x) - reset * thr
        else:
            mem = beta * ((f32(1) - reset) * mem) + x
        spk = (mem - thr > 0).astype(f32)
        if not delay:
            do_reset = spk - reset
            mem = mem - do_reset * thr if mechanism == "subtract" else mem - do_reset * mem
        return spk, (mem.astype(f32),)
    return step


@test
def snntorch_default_leaky_reproduced_with_from_snntorch():
    n_in, n_h, n_out, T, S = 24, 32, 5, 50, 4
    beta1 = rng.uniform(0.75, 0.97, n_h).astype(f32)
    beta2 = np.full(n_out, 0.9, f32)
    w1, b1, w2 = mlp(path("snn.h5"), n_in, n_h, n_out, snn_lif(beta1, 1.0), snn_lif(beta2, 0.5))
    x = (rng.random((S, T, n_in)) < 0.35).astype(f32)
    spikes_file(path("snn_in.h5"), x)
    z = lambda n: lambda: (np.zeros(n, f32),)  # noqa: E731
    r1, r2, v1 = simulate(x, w1, b1, w2, snn_leaky_step(beta1, f32(1.0)),
                          snn_leaky_step(beta2, f32(0.5)), z(n_h), z(n_out))
    assert r1.sum() > 200 and r2.sum() > 20
    j = run_json("run", path("snn.h5"), "--input", path("snn_in.h5"), "--from", "snntorch",
                 "--trace", path("snn_tr.h5"), "--record", "spikes,membrane")
    assert j["load_options"]["dt"] == DT_SNN and j["load_options"]["reset"] == "subtract"
    same_spikes(path("snn_tr.h5"), "n1", r1)
    same_spikes(path("snn_tr.h5"), "n2", r2)
    # snnTorch's membrane (mem), bit for bit: with reset_delay it is not yet reset.
    assert (trace_v(path("snn_tr.h5"), "n1").reshape(v1.shape) == v1).all()
    # NIR's equations with the same dt (same-step subtract) give other spikes: the dialect matters.
    j0 = run_json("run", path("snn.h5"), "--input", path("snn_in.h5"), "--dt", DT_SNN,
                  "--reset", "subtract")
    assert {l["name"]: l["spikes"] for l in j0["layers"]}["n1"] != int(r1.sum())
    # ... and the parameters' pattern (r = tau/1e-4) is pointed out
    assert any("--from snntorch" in n for n in j0["notes"]), j0["notes"]
    # The file can carry its writer: metadata/from, no flag.
    with h5py.File(path("snn.h5"), "a") as f:
        f["node/metadata/from"] = "snntorch"
    j2 = run_json("run", path("snn.h5"), "--input", path("snn_in.h5"))
    assert {l["name"]: l["spikes"] for l in j2["layers"]}["n1"] == int(r1.sum())
    assert any("snntorch" in n for n in j2["notes"]), j2["notes"]


@test
def snntorch_reset_variants():
    """reset_mechanism zero with reset_delay, and a per-node reset_delay 0 (same-step reset)."""
    n_in, n_h, n_out, T, S = 16, 20, 4, 40, 3
    beta = rng.uniform(0.8, 0.95, n_h).astype(f32)
    beta2 = np.full(n_out, 0.85, f32)
    w1, b1, w2 = mlp(path("snnz.h5"), n_in, n_h, n_out, snn_lif(beta, 1.0), snn_lif(beta2, 1.0))
    x = (rng.random((S, T, n_in)) < 0.4).astype(f32)
    spikes_file(path("snnz_in.h5"), x)
    z = lambda n: lambda: (np.zeros(n, f32),)  # noqa: E731
    r1, _, v1 = simulate(x, w1, b1, w2, snn_leaky_step(beta, f32(1), "zero"),
                         snn_leaky_step(beta2, f32(1), "zero"), z(n_h), z(n_out))
    run_traced(path("snnz.h5"), path("snnz_in.h5"), path("snnz_tr.h5"), "n1", r1, v1, "--from",
               "snntorch", "--reset", "zero")
    # reset_delay=False as a dataset of the node: the same-step subtraction.
    with h5py.File(path("snnz.h5"), "a") as f:
        f["node/nodes/n1/reset_delay"] = 0
        f["node/nodes/n2/reset_delay"] = 0
    r1, _, _ = simulate(x, w1, b1, w2, snn_leaky_step(beta, f32(1), "subtract", False),
                        snn_leaky_step(beta2, f32(1), "subtract", False), z(n_h), z(n_out))
    run("run", path("snnz.h5"), "--input", path("snnz_in.h5"), "--from", "snntorch",
        "--trace", path("snnz_tr2.h5"), "--no-progress")
    same_spikes(path("snnz_tr2.h5"), "n1", r1)


@test
def snntorch_synaptic_reproduced():
    n_in, n_h, n_out, T, S = 16, 24, 4, 40, 3
    alpha = rng.uniform(0.5, 0.9, n_h).astype(f32)
    beta = rng.uniform(0.7, 0.95, n_h).astype(f32)
    tau_s = (DT_SNN / (1 - alpha.astype(np.float64))).astype(f32)
    tau_m = (DT_SNN / (1 - beta.astype(np.float64))).astype(f32)
    cuba = dict(tau_syn=tau_s, tau_mem=tau_m, r=(tau_m / DT_SNN).astype(f32),
                w_in=(tau_s / DT_SNN).astype(f32), v_leak=np.zeros(n_h, f32),
                v_threshold=np.ones(n_h, f32), v_reset=np.zeros(n_h, f32))
    beta2 = np.full(n_out, 0.9, f32)
    w1, b1, w2 = mlp(path("syn.h5"), n_in, n_h, n_out, ("CubaLIF", cuba), snn_lif(beta2, 1.0))
    x = (rng.random((S, T, n_in)) < 0.3).astype(f32)
    spikes_file(path("syn_in.h5"), x)

    def synaptic(x, st):  # snnTorch Synaptic, subtract reset, reset_delay=True
        mem, syn = st
        reset = (mem - f32(1) > 0).astype(f32)
        syn = alpha * syn + x
        mem = (beta * mem + syn) - reset * f32(1)
        return (mem - f32(1) > 0).astype(f32), (mem.astype(f32), syn.astype(f32))
    r1, r2, v1 = simulate(x, w1, b1, w2, synaptic, snn_leaky_step(beta2, f32(1)),
                          lambda: (np.zeros(n_h, f32), np.zeros(n_h, f32)),
                          lambda: (np.zeros(n_out, f32),))
    assert r1.sum() > 100
    run("run", path("syn.h5"), "--input", path("syn_in.h5"), "--from", "snntorch", "--trace",
        path("syn_tr.h5"), "--record", "spikes,membrane", "--no-progress")
    same_spikes(path("syn_tr.h5"), "n1", r1)
    same_spikes(path("syn_tr.h5"), "n2", r2)
    assert (trace_v(path("syn_tr.h5"), "n1").reshape(v1.shape) == v1).all()


def recurrent_weights(gen, n_in, n_h):
    """Feed-forward Affine and recurrent nn.Linear (with bias) of multiples of 1/64: the
    products with spikes and their sum are exact, so only the order of the additions into the
    decayed state rounds. Drawn from `gen`: the other tests' data stay as they were."""
    def dy(shape, scale):
        return (np.round(gen.uniform(-scale, scale, shape) * 64) / 64).astype(f32)
    return dy((n_h, n_in), 1.0), dy(n_h, 0.25), dy((n_h, n_h), 0.5), dy(n_h, 0.125)


def snn_recurrent_file(fname, w, neuron):
    """Input -> Affine -> RLeaky/RSynaptic as snnTorch's exporter writes them (export_nir.py
    119-218): a NIRGraph subgraph input -> lif, lif -> w_rec, w_rec -> lif, lif -> output, the
    recurrent nn.Linear an Affine."""
    w_in, b_in, w_rec, b_rec = w
    rnn = (Nir().node("input", "Input", shape=np.array([len(b_in)]))
           .node("lif", neuron[0], **neuron[1]).node("w_rec", "Affine", weight=w_rec, bias=b_rec)
           .node("output", "Output", shape=np.array([len(b_in)]))
           .edge("input", "lif").edge("lif", "w_rec").edge("w_rec", "lif").edge("lif", "output"))
    (Nir().node("input", "Input", shape=np.array([w_in.shape[1]]))
     .node("fc", "Affine", weight=w_in, bias=b_in).node("rnn", rnn)
     .node("output", "Output", shape=np.array([len(b_in)]))
     .edge("input", "fc").edge("fc", "rnn").edge("rnn", "output").write(fname))


def run_recurrent(x, w, step, state):
    """Spikes and membranes [S, T, n] of one recurrent layer; step(x, rec, state)."""
    w_in, b_in, w_rec, b_rec = w
    spikes, mems = [], []
    for s in range(x.shape[0]):
        st, spk, o, m = state(), np.zeros(len(b_in), f32), [], []
        for t in range(x.shape[1]):
            rec = (w_rec @ spk + b_rec).astype(f32)  # exact: dyadic weights, spikes
            spk, st = step((w_in @ x[s, t] + b_in).astype(f32), rec, st)
            o.append(spk)
            m.append(st[0])
        spikes.append(o)
        mems.append(m)
    return np.array(spikes, f32), np.array(mems, f32)


def thresholds_on_rounding(x, w, step, state):
    """Thresholds at which the two addition orders give other spikes. Starting from 2 for
    every neuron, one neuron at a time: at a step where its membranes in the two orders differ
    by rounding, and the smaller, lo < 2, exceeds each earlier membrane of it in that sample
    (and 0), a threshold lo changes nothing before (no spike, in either order) and there the
    larger membrane fires (>), the smaller does not; recurrence then spreads the difference."""
    thr = np.full(len(w[1]), 2, f32)
    for k in range(len(thr)):
        sa, a = run_recurrent(x, w, step("snntorch", thr), state)
        sb, b = run_recurrent(x, w, step("nir", thr), state)
        if (sa != sb).sum() > 20:
            return thr
        for s in range(x.shape[0]):
            top = np.maximum.accumulate(np.maximum(np.maximum(a[s, :, k], b[s, :, k]), 0))
            lo = np.minimum(a[s, 1:, k], b[s, 1:, k])
            hit = np.nonzero((a[s, 1:, k] != b[s, 1:, k]) & (lo > top[:-1]) & (lo < 2))[0]
            if len(hit):
                thr[k] = lo[hit[0]]
                break
    raise AssertionError("no thresholds where the order of additions matters")


@test
def snntorch_rleaky_rsynaptic_add_the_recurrent_input_last():
    """snnTorch's RLeaky: mem = (beta*mem + input) + recurrent(spk) - reset*threshold
    (rleaky.py 394-403); RSynaptic: syn = (alpha*syn + input) + recurrent(spk), mem = beta*mem
    + syn (rsynaptic.py 418-439). The feed-forward and recurrent terms are exact here (dyadic):
    only the order of the two additions into the decayed state differs from NIR's beta*mem +
    (input + recurrent), and thresholds placed where the orders round apart make it flip
    spikes, which then change the recurrent input of the following steps."""
    n_in, n_h, T, S = 16, 32, 60, 4
    gen = np.random.default_rng(23)
    x = (gen.random((S, T, n_in)) < 0.35).astype(f32)
    spikes_file(path("rnn_in.h5"), x)
    beta = gen.uniform(0.75, 0.97, n_h).astype(f32)
    w = recurrent_weights(gen, n_in, n_h)

    def rleaky(order, thr, mechanism="subtract"):
        def step(xf, rec, st):
            mem, = st
            reset = (mem - thr > 0).astype(f32)
            base = (beta * mem + xf) + rec if order == "snntorch" else beta * mem + (xf + rec)
            mem = base - reset * thr if mechanism == "subtract" else base - reset * base
            return (mem - thr > 0).astype(f32), (mem.astype(f32),)
        return step
    z = lambda: (np.zeros(n_h, f32),)  # noqa: E731
    thr = thresholds_on_rounding(x, w, rleaky, z)
    lif = snn_lif(beta, 1.0)
    lif[1]["v_threshold"] = thr
    snn_recurrent_file(path("rleaky.h5"), w, lif)
    ref, ref_v = run_recurrent(x, w, rleaky("snntorch", thr), z)
    nir_order, _ = run_recurrent(x, w, rleaky("nir", thr), z)
    assert ref.sum() > 300 and (nir_order != ref).sum() > 10  # the order matters here
    # The layer's input rate still counts the non-zeros of input + recurrent, summed.
    w_in, b_in, w_rec, b_rec = w
    prev = np.concatenate([np.zeros((S, 1, n_h), f32), ref[:, :-1]], 1)
    summed = (x @ w_in.T + b_in) + (prev @ w_rec.T + b_rec)
    for engine, threads in (("event", 1), ("dense", 2)):
        j = run_json("run", path("rleaky.h5"), "--input", path("rnn_in.h5"), "--from",
                     "snntorch", "--engine", engine, "--threads", threads, "--trace",
                     path("rleaky_tr.h5"), "--record", "spikes,membrane")
        same_spikes(path("rleaky_tr.h5"), "rnn.lif", ref)
        assert (trace_v(path("rleaky_tr.h5"), "rnn.lif").reshape(ref_v.shape) == ref_v).all()
        rate = {l["name"]: l["input_rate"] for l in j["layers"]}["rnn.lif"]
        assert rate == (summed != 0).sum() / summed.size, (rate, (summed != 0).mean())
    # reset_mechanism="zero": RLeaky zeroes the updated membrane (base - reset*base, 405-408).
    refz, refz_v = run_recurrent(x, w, rleaky("snntorch", thr, "zero"), z)
    run_traced(path("rleaky.h5"), path("rnn_in.h5"), path("rleakyz_tr.h5"), "rnn.lif", refz,
               refz_v, "--from", "snntorch", "--reset", "zero")
    # NIR's dialect keeps summing the inputs first: its own order, other spikes.
    with h5py.File(path("rleaky.h5"), "a") as f:
        f["node/nodes/rnn/nodes/lif/reset_delay"] = 1
    run("run", path("rleaky.h5"), "--input", path("rnn_in.h5"), "--dt", DT_SNN, "--reset",
        "subtract", "--trace", path("rleaky_nir_tr.h5"), "--no-progress")
    same_spikes(path("rleaky_nir_tr.h5"), "rnn.lif", nir_order)

    alpha = gen.uniform(0.5, 0.9, n_h).astype(f32)
    tau_s = (DT_SNN / (1 - alpha.astype(np.float64))).astype(f32)
    tau_m = (DT_SNN / (1 - beta.astype(np.float64))).astype(f32)

    def rsynaptic(order, thr):
        def step(xf, rec, st):
            mem, syn = st
            reset = (mem - thr > 0).astype(f32)
            syn = (alpha * syn + xf) + rec if order == "snntorch" else alpha * syn + (xf + rec)
            mem = (beta * mem + syn) - reset * thr
            return (mem - thr > 0).astype(f32), (mem.astype(f32), syn.astype(f32))
        return step
    z2 = lambda: (np.zeros(n_h, f32), np.zeros(n_h, f32))  # noqa: E731
    thr = thresholds_on_rounding(x, w, rsynaptic, z2)
    cuba = dict(tau_syn=tau_s, tau_mem=tau_m, r=(tau_m / DT_SNN).astype(f32),
                w_in=(tau_s / DT_SNN).astype(f32), v_leak=np.zeros(n_h, f32),
                v_threshold=thr, v_reset=np.zeros(n_h, f32))
    snn_recurrent_file(path("rsyn.h5"), w, ("CubaLIF", cuba))
    ref, ref_v = run_recurrent(x, w, rsynaptic("snntorch", thr), z2)
    nir_order, _ = run_recurrent(x, w, rsynaptic("nir", thr), z2)
    assert ref.sum() > 300 and (nir_order != ref).sum() > 10
    for engine, threads in (("event", 1), ("dense", 2)):
        run("run", path("rsyn.h5"), "--input", path("rnn_in.h5"), "--from", "snntorch",
            "--engine", engine, "--threads", threads, "--trace", path("rsyn_tr.h5"),
            "--record", "spikes,membrane", "--no-progress")
        same_spikes(path("rsyn_tr.h5"), "rnn.lif", ref)
        assert (trace_v(path("rsyn_tr.h5"), "rnn.lif").reshape(ref_v.shape) == ref_v).all()


@test
def snntorch_file_without_dt_is_an_error():
    beta = np.full(6, 0.8, f32)  # tau = 5e-4 s: at the default dt 1e-3, 1 - dt/tau = -1
    mlp(path("nodt.h5"), 4, 6, 3, snn_lif(beta, 1.0), snn_lif(np.full(3, 0.8, f32), 1.0))
    spikes_file(path("nodt_in.h5"), (rng.random((2, 10, 4)) < 0.5).astype(f32))
    msg = expect_error(["run", path("nodt.h5"), "--input", path("nodt_in.h5")],
                       "nodes/n1/tau", "outside [0, 1)", "--dt 0.0001", "--from snntorch")
    assert "-1" in msg, msg
    expect_error(["info", path("nodt.h5")], "nodes/n1/tau", "--allow-unstable")
    # explicitly allowed, or with the right dt, it runs
    run("run", path("nodt.h5"), "--input", path("nodt_in.h5"), "--allow-unstable", "--no-progress")
    run("run", path("nodt.h5"), "--input", path("nodt_in.h5"), "--dt", DT_SNN, "--no-progress")


# ------------------------------------------------------------------ Norse

def norse_step_lifbox(tau_inv, v_leak, v_th, v_reset, dt=f32(1e-3)):
    k = dt * tau_inv  # float32, as dt * p.tau_mem_inv

    def step(x, st):
        v, = st
        v = v + k * ((x + v_leak) - v)
        z = (v - v_th > 0).astype(f32)
        v = np.where(z > 0, v_reset, v).astype(f32)
        return z, (v,)
    return step


def norse_step_lif(tau_mem_inv, tau_syn_inv, v_leak, v_th, v_reset, dt=f32(1e-3)):
    km, ks = dt * tau_mem_inv, dt * tau_syn_inv

    def step(x, st):
        v, i = st
        i_new = i + x
        v = v + km * ((v_leak - v) + i_new)
        i = i_new + (-ks) * i_new
        z = (v - v_th > 0).astype(f32)
        v = np.where(z > 0, v_reset, v).astype(f32)
        return z, (v, i.astype(f32))
    return step


@test
def norse_lifbox_and_lifcell_reproduced():
    n_in, n_h, n_out, T, S = 20, 24, 5, 60, 3
    tau_inv = rng.choice(np.array([100, 125, 200, 250], f32), n_h)
    v_leak = np.full(n_h, 0.25, f32)
    v_th, v_reset = np.full(n_h, 1.0, f32), np.full(n_h, -0.125, f32)
    # LIFBoxCell -> nir.LIF(tau=1/tau_mem_inv, v_threshold, v_leak, r=1, v_reset)
    lifbox = dict(tau=(f32(1) / tau_inv).astype(f32), v_threshold=v_th, v_leak=v_leak,
                  r=np.ones(n_h, f32), v_reset=v_reset)
    # LIFCell -> nir.CubaLIF(tau_mem, tau_syn, v_reset, v_threshold, v_leak, r=1, w_in=1)
    tmi, tsi = np.full(n_out, 100, f32), np.full(n_out, 200, f32)
    cuba = dict(tau_mem=(f32(1) / tmi).astype(f32), tau_syn=(f32(1) / tsi).astype(f32),
                v_reset=np.zeros(n_out, f32), v_threshold=np.full(n_out, 0.25, f32),
                v_leak=np.zeros(n_out, f32), r=np.ones(n_out, f32), w_in=np.ones(n_out, f32))
    w1, b1, w2 = mlp(path("norse.h5"), n_in, n_h, n_out, ("LIF", lifbox), ("CubaLIF", cuba))
    x = (rng.random((S, T, n_in)) < 0.3).astype(f32)
    spikes_file(path("norse_in.h5"), x)
    r1, r2, v1 = simulate(
        x, w1, b1, w2, norse_step_lifbox(tau_inv, v_leak, v_th, v_reset),
        norse_step_lif(tmi, tsi, np.zeros(n_out, f32), np.full(n_out, 0.25, f32), np.zeros(n_out, f32)),
        lambda: (v_leak.copy(),), lambda: (np.zeros(n_out, f32), np.zeros(n_out, f32)))
    assert r1.sum() > 100 and r2.sum() > 20, (r1.sum(), r2.sum())
    run("run", path("norse.h5"), "--input", path("norse_in.h5"), "--from", "norse", "--trace",
        path("norse_tr.h5"), "--record", "spikes,membrane", "--no-progress")
    same_spikes(path("norse_tr.h5"), "n1", r1)
    same_spikes(path("norse_tr.h5"), "n2", r2)
    assert (trace_v(path("norse_tr.h5"), "n1").reshape(v1.shape) == v1).all()
    # NIR's equations: membranes from 0, CubaLIF input gain dt/tau_syn = 0.2: other spikes.
    j0 = run_json("run", path("norse.h5"), "--input", path("norse_in.h5"))
    assert {l["name"]: l["spikes"] for l in j0["layers"]}["n2"] != int(r2.sum())


@test
def norse_iaf_and_li_readout_reproduced():
    n_in, n_h, n_out, T, S = 16, 20, 4, 40, 6
    v_th, v_reset = np.full(n_h, 1.0, f32), np.full(n_h, -0.5, f32)
    iaf = dict(r=np.ones(n_h, f32), v_threshold=v_th, v_reset=v_reset)
    li_inv = np.full(n_out, 50, f32)
    li_leak = np.full(n_out, 0.125, f32)
    li = dict(tau=(f32(1) / li_inv).astype(f32), v_leak=li_leak, r=np.ones(n_out, f32))
    w1, b1, w2 = mlp(path("norse2.h5"), n_in, n_h, n_out, ("IF", iaf), ("LI", li))
    x = (rng.random((S, T, n_in)) < 0.3).astype(f32)
    spikes_file(path("norse2_in.h5"), x)

    def iaf_step(x, st):
        v = st[0] + x
        z = (v - v_th > 0).astype(f32)
        return z, (np.where(z > 0, v_reset, v).astype(f32),)
    k = f32(1e-3) * li_inv

    def li_step(x, st):
        v = st[0] + k * ((li_leak - st[0]) + x)
        return v.astype(f32), (v.astype(f32),)
    r1, vout, _ = simulate(x, w1, b1, w2, iaf_step, li_step, lambda: (v_reset.copy(),),
                           lambda: (li_leak.copy(),))
    j = run_json("run", path("norse2.h5"), "--input", path("norse2_in.h5"), "--from", "norse",
                 "--trace", path("norse2_tr.h5"))
    same_spikes(path("norse2_tr.h5"), "n1", r1)
    assert j["predictions"] == vout.sum(1).argmax(1).tolist()


# ------------------------------------------------------------------ Sinabs

@test
def sinabs_iaf_lif_expleak_reproduced():
    n_in, n_h, n_out, T, S = 20, 24, 5, 50, 5
    tau = rng.choice(np.array([4, 8, 10, 20], f32), n_h)
    thr = np.full(n_h, 0.5, f32)
    # sinabs.layers.LIF -> nir.LIF(tau=tau_mem, v_threshold, v_leak=0, r=1)
    lif = dict(tau=tau, v_threshold=thr, v_leak=np.zeros(n_h, f32), r=np.ones(n_h, f32))
    # sinabs.layers.ExpLeak -> nir.LI(tau=tau_mem, v_leak=0, r=1)
    tau_o = np.full(n_out, 10, f32)
    li = dict(tau=tau_o, v_leak=np.zeros(n_out, f32), r=np.ones(n_out, f32))
    w1, b1, w2 = mlp(path("sinabs.h5"), n_in, n_h, n_out, ("LIF", lif), ("LI", li))
    x = (rng.random((S, T, n_in)) < 0.3).astype(f32)
    spikes_file(path("sinabs_in.h5"), x, labels=np.arange(S) % n_out)
    # alpha = exp(-1/tau) in float32; LIF norm_input: (1 - alpha) x; ExpLeak: + x
    alpha = np.exp((f32(-1) / tau).astype(np.float64)).astype(f32)
    alpha_o = np.exp((f32(-1) / tau_o).astype(np.float64)).astype(f32)

    def lif_step(x, st):
        v = alpha * st[0] + (f32(1) - alpha) * x
        z = (v - thr >= 0).astype(f32)  # SingleSpike
        return z, ((v - z * thr).astype(f32),)

    def expleak(x, st):
        v = (alpha_o * st[0] + x).astype(f32)
        return v, (v,)
    r1, vout, _ = simulate(x, w1, b1, w2, lif_step, expleak, lambda: (np.zeros(n_h, f32),),
                           lambda: (np.zeros(n_out, f32),))
    assert r1.sum() > 100
    j = run_json("run", path("sinabs.h5"), "--input", path("sinabs_in.h5"), "--from", "sinabs",
                 "--trace", path("sinabs_tr.h5"))
    same_spikes(path("sinabs_tr.h5"), "n1", r1)
    assert j["predictions"] == vout.sum(1).argmax(1).tolist()
    assert j["load_options"]["dt"] == 1.0 and j["load_options"]["discretization"] == "exact"

    # IAF -> nir.IF(r=1, v_threshold): v + x, fires on v >= threshold, subtract
    iaf = dict(r=np.ones(n_h, f32), v_threshold=np.full(n_h, 1.0, f32))
    w1, b1, w2 = mlp(path("sinabs2.h5"), n_in, n_h, n_out, ("IF", iaf), ("IF", dict(
        r=np.ones(n_out, f32), v_threshold=np.full(n_out, 1.0, f32))))
    x = (rng.random((S, T, n_in)) < 0.3).astype(f32)
    spikes_file(path("sinabs2_in.h5"), x)

    def iaf_step(x, st):
        v = st[0] + x
        z = (v - f32(1) >= 0).astype(f32)
        return z, ((v - z).astype(f32),)
    r1, r2, _ = simulate(x, w1, b1, w2, iaf_step, iaf_step, lambda: (np.zeros(n_h, f32),),
                         lambda: (np.zeros(n_out, f32),))
    run("run", path("sinabs2.h5"), "--input", path("sinabs2_in.h5"), "--from", "sinabs",
        "--trace", path("sinabs2_tr.h5"), "--no-progress")
    same_spikes(path("sinabs2_tr.h5"), "n1", r1)
    same_spikes(path("sinabs2_tr.h5"), "n2", r2)
    # Weights that are multiples of 1/64 land exactly on the threshold now and then; with
    # NIR's `>` those neurons stay silent.
    j0 = run_json("run", path("sinabs2.h5"), "--input", path("sinabs2_in.h5"), "--reset", "subtract")
    assert {l["name"]: l["spikes"] for l in j0["layers"]}["n1"] != int(r1.sum())
    j0 = run_json("run", path("sinabs.h5"), "--input", path("sinabs_in.h5"))
    assert any("--from sinabs" in n for n in j0["notes"]), j0["notes"]  # tau >= 1: steps


@test
def spikingjelly_if_and_lif_reproduced():
    """SpikingJelly IFNode/LIFNode (decay_input, hard reset to v_reset, membranes from v_reset)
    described as NIR IF/LIF with tau in steps and v_leak = v_reset."""
    n_in, n_h, n_out, T, S = 16, 20, 4, 40, 4
    vr = np.full(n_h, -0.25, f32)
    if_ = dict(r=np.ones(n_h, f32), v_threshold=np.ones(n_h, f32), v_reset=vr)
    vr2 = np.full(n_out, -0.5, f32)
    lif = dict(tau=np.full(n_out, 2.0, f32), r=np.ones(n_out, f32), v_leak=vr2,
               v_threshold=np.full(n_out, 0.125, f32), v_reset=vr2)
    w1, b1, w2 = mlp(path("sj.h5"), n_in, n_h, n_out, ("IF", if_), ("LIF", lif))
    x = (rng.random((S, T, n_in)) < 0.3).astype(f32)
    spikes_file(path("sj_in.h5"), x)

    def if_step(x, st):  # v = v + x; s = v - v_th >= 0; v = v_reset where s
        v = st[0] + x
        s = (v - f32(1) >= 0).astype(f32)
        return s, (np.where(s > 0, vr, v).astype(f32),)

    def lif_step(x, st):  # tau 2: v + (x - (v - v_reset)) / 2 is exact in halves
        v = st[0] + (x - (st[0] - vr2)) / f32(2)
        s = (v - f32(0.125) >= 0).astype(f32)
        return s, (np.where(s > 0, vr2, v).astype(f32),)
    r1, r2, _ = simulate(x, w1, b1, w2, if_step, lif_step, lambda: (vr.copy(),),
                         lambda: (vr2.copy(),))
    assert r1.sum() > 50 and r2.sum() > 10, (r1.sum(), r2.sum())
    run("run", path("sj.h5"), "--input", path("sj_in.h5"), "--from", "spikingjelly", "--trace",
        path("sj_tr.h5"), "--no-progress")
    same_spikes(path("sj_tr.h5"), "n1", r1)
    same_spikes(path("sj_tr.h5"), "n2", r2)
    j0 = run_json("run", path("sj.h5"), "--input", path("sj_in.h5"), "--dt", 1)
    assert {l["name"]: l["spikes"] for l in j0["layers"]}["n1"] != int(r1.sum())


@test
def unknown_from_is_refused():
    expect_error(["info", path("sinabs.h5"), "--from", "keras"], "--from", "keras", "snntorch")
    with h5py.File(path("sinabs.h5"), "a") as f:
        f["node/metadata/from"] = "brian"
    expect_error(["info", path("sinabs.h5")], "metadata/from", "brian")


# ------------------------------------------------------------------ inputs

def small_model(fname, n_in=6, T=None):
    g = (Nir().node("input", "Input", shape=np.array([n_in]))
         .node("fc", "Linear", weight=np.eye(n_in, dtype=f32))
         .node("if", "IF", r=np.ones(n_in, f32), v_threshold=np.full(n_in, 0.5, f32))
         .node("output", "Output", shape=np.array([n_in]))
         .edge("input", "fc").edge("fc", "if").edge("if", "output"))
    g.write(fname)
    if T:
        with h5py.File(fname, "a") as f:
            f["node/metadata/timesteps"] = T


@test
def time_first_spike_tensors_with_layout():
    small_model(path("id.h5"), T=4)
    S, T, n = 7, 4, 6
    x = (rng.random((S, T, n)) < 0.5).astype(np.int8)
    with h5py.File(path("tfirst.h5"), "w") as f:
        f["spikes"] = x.transpose(1, 0, 2)  # [T, B, n] as snnTorch/SpikingJelly/Norse produce
    # [4, 7, 6] with metadata/timesteps 4: ambiguous without --layout, both readings named
    expect_error(["run", path("id.h5"), "--input", path("tfirst.h5")], "ambiguous",
                 "samples-first reads 4 samples of 7 steps", "time-first reads 7 samples of 4 steps",
                 "--layout")
    for lay in ("time-first", "TS"):
        p = run("run", path("id.h5"), "--input", path("tfirst.h5"), "--layout", lay,
                "--trace", path("tf_tr.h5"), "--no-progress")
        assert "7 samples x 4 steps, replayed spikes (time-first)" in p.stdout, p.stdout
        assert (trace_spikes(path("tf_tr.h5"), "if") == x).all()
    with h5py.File(path("sfirst.h5"), "w") as f:
        f["spikes"] = x
    p = run("run", path("id.h5"), "--input", path("sfirst.h5"), "--no-progress")
    assert "replayed spikes (samples-first)" in p.stdout, p.stdout
    expect_error(["run", path("id.h5"), "--input", path("sfirst.h5"), "--layout", "TB"], "--layout")


@test
def metadata_hints_as_attributes_or_datasets():
    # /node/metadata/timesteps may be an attribute of the metadata group, as dt and the other
    # keys may: the loader and the run read the same places.
    small_model(path("attr_t.h5"))
    with h5py.File(path("attr_t.h5"), "a") as f:
        f.require_group("node/metadata").attrs["timesteps"] = np.int64(3)
    x = (rng.random((2, 6)) < 0.5).astype(np.int8)
    with h5py.File(path("attr_in.h5"), "w") as f:
        f["data"] = x.astype(f32)
    j = run_json("run", path("attr_t.h5"), "--input", path("attr_in.h5"))
    assert j["timesteps"] == 3, j["timesteps"]
    # A timesteps dataset that is not a number is refused, not taken as absent.
    small_model(path("str_t.h5"))
    with h5py.File(path("str_t.h5"), "a") as f:
        f["node/metadata/timesteps"] = "four"
    expect_error(["run", path("str_t.h5"), "--input", path("attr_in.h5")],
                 "metadata/timesteps", "must be a number")


@test
def spike_file_steps_are_not_cut_silently():
    small_model(path("id4.h5"), T=4)
    x = (rng.random((3, 9, 6)) < 0.5).astype(np.int8)
    spikes_file(path("nine.h5"), x)
    j = run_json("run", path("id4.h5"), "--input", path("nine.h5"), "--trace", path("nine_tr.h5"))
    assert j["timesteps"] == 9, j["timesteps"]  # the file's T, not metadata/timesteps 4
    assert (trace_spikes(path("nine_tr.h5"), "if") == x).all()
    assert any("9 steps" in n for n in j["notes"]), j["notes"]
    j = run_json("run", path("id4.h5"), "--input", path("nine.h5"), "--timesteps", 5)
    assert j["timesteps"] == 5
    assert any(n.startswith("warning:") and "first 5 of the 9" in n for n in j["notes"]), j["notes"]
    expect_error(["run", path("id4.h5"), "--input", path("nine.h5"), "--timesteps", 12],
                 "--timesteps", "12", "9 steps")


@test
def float_bool_uint8_and_npy_spikes():
    small_model(path("id.h5"))
    x = (rng.random((4, 5, 6)) < 0.5)
    ref = x.astype(np.int8)
    for name, arr in (("f32", x.astype(f32)), ("f64", x.astype(np.float64)), ("bool", x),
                      ("u8", x.astype(np.uint8))):
        with h5py.File(path(f"sp_{name}.h5"), "w") as f:
            f["spikes"] = arr
        run("run", path("id.h5"), "--input", path(f"sp_{name}.h5"), "--trace",
            path(f"sp_{name}_tr.h5"), "--no-progress")
        assert (trace_spikes(path(f"sp_{name}_tr.h5"), "if") == ref).all(), name
        np.save(path(f"sp_{name}.npy"), arr)
        run("run", path("id.h5"), "--input", path(f"sp_{name}.npy"), "--trace",
            path(f"sp_{name}_ntr.h5"), "--no-progress")
        assert (trace_spikes(path(f"sp_{name}_ntr.h5"), "if") == ref).all(), name
    np.save(path("tf.npy"), x.transpose(1, 0, 2).astype(f32))
    run("run", path("id.h5"), "--input", path("tf.npy"), "--layout", "time-first", "--trace",
        path("tf_npy_tr.h5"), "--no-progress")
    assert (trace_spikes(path("tf_npy_tr.h5"), "if") == ref).all()
    bad = x.astype(f32)
    bad[2, 3, 1] = 0.5
    with h5py.File(path("sp_bad.h5"), "w") as f:
        f["spikes"] = bad
    expect_error(["run", path("id.h5"), "--input", path("sp_bad.h5")], "/spikes", "value 0.5",
                 "sample 2, step 3, element 1")
    np.save(path("sp_bad.npy"), bad)
    expect_error(["run", path("id.h5"), "--input", path("sp_bad.npy")], "sp_bad.npy", "value 0.5")
    np.save(path("sp_f.npy"), np.asfortranarray(x.astype(f32)))
    np.save(path("sp_c16.npy"), x.astype(np.complex64))
    expect_error(["run", path("id.h5"), "--input", path("sp_c16.npy")], "dtype")
    with open(path("junk.npy"), "wb") as f:
        f.write(b"not numpy at all")
    expect_error(["run", path("id.h5"), "--input", path("junk.npy")], "junk.npy", "magic")
    # A header declaring a negative dimension (numpy's own loader would infer it): refused.
    header = "{'descr': '|i1', 'fortran_order': False, 'shape': (2, -1, 4), }"
    header += " " * (118 - len(header)) + "\n"
    with open(path("neg.npy"), "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header.encode() + bytes(8))
    expect_error(["run", path("id.h5"), "--input", path("neg.npy")], "neg.npy",
                 "shape (2, -1, 4) is not a tuple of non-negative integers")


@test
def two_input_nodes_load_and_need_one_dataset_each():
    (Nir().node("left", "Input", shape=np.array([3])).node("right", "Input", shape=np.array([3]))
     .node("if", "IF", r=np.ones(3, f32), v_threshold=np.ones(3, f32))
     .node("output", "Output", shape=np.array([3]))
     .edge("left", "if").edge("right", "if").edge("if", "output").write(path("two.h5")))
    assert "right" in run("info", path("two.h5")).stdout
    spikes_file(path("two_in.h5"), np.zeros((1, 2, 3), np.int8))
    expect_error(["run", path("two.h5"), "--input", path("two_in.h5")], "two_in.h5",
                 "/inputs/left/spikes", "/inputs/left/data")
    with h5py.File(path("two_in.h5"), "w") as f:  # IF: v += left + right, fires above 1
        f["inputs/left/spikes"] = np.array([[[1, 0, 1], [1, 0, 0]]], np.int8)
        f["inputs/right/data"] = np.array([[0.5, 0.25, 0.5]], np.float32)
    j = run_json("run", path("two.h5"), "--input", path("two_in.h5"))
    # step 0: v = 1.5, 0.25, 1.5 -> neurons 0, 2 fire; step 1: v = 1.5, 0.5, 0.5 -> neuron 0
    assert j["timesteps"] == 2 and {l["name"]: l["spikes"] for l in j["layers"]}["if"] == 3


finish()
