#!/usr/bin/env python3
"""Integer neurons (ternion.FixedLIF) end to end, against numpy written here from the published
equations, not from ternion's code:

- Lava's bit-accurate Loihi process models (lava-nc/lava src/lava/proc/lif/models.py,
  PyLifModelBitAcc and PyTernLifModelFixed; src/lava/proc/dense/models.py, PyDenseModelBitAcc;
  src/lava/utils/weightutils.py): a RingBuffer of spikes -> Dense (8-bit weights, mixed-sign
  truncation, exponent on the sum, one step of delay) -> LIF or TernaryLIF.
  In ternion: Input -> Linear (the truncated weights) -> Delay (one step) -> FixedLIF.
- Xylo's neuron (xylosim's XyloIAFNeuron, the simulator Rockpool's XyloSim runs): 16-bit
  saturating states, bit-shift decays, input added before the current decays, subtractive
  reset with up to 31 spikes a step, on a small recurrent network.

Every case runs on both engines and on 1 and 3 threads; v and spikes must equal the reference
at every step.
"""

import h5py
import numpy as np

from harness import expect_error, finish, path, run, run_json, test
from nirfile import Nir, spikes_file, trace_spikes

rng = np.random.default_rng(38)


# ---------------------------------------------------------------- the references


def rtz(x, s):
    """x / 2^s rounded toward zero (int64)."""
    return np.sign(x) * (np.abs(x) >> s)


def lava_weights(w, bits=8):
    """Lava's clip_weights then truncate_weights for 8-bit storage (weightutils.py)."""
    mixed = w.min() < 0 < w.max()
    w = np.clip(w, -256, 255) if mixed else np.clip(w, -255, 255)
    k = 8 - bits + (1 if mixed else 0)
    return (w >> k) << k


def lava_run(w, wexp, s_in, du, dv, bmant, bexp, vth, vth_lo=None, reset=None, refractory=0):
    """u, v (after reset) and spikes [T, n] of RingBuffer -> Dense -> LIF/TernaryLIF.
    reset=(interval, offset): LIFReset's PyLifResetModelBitAcc, u = v = 0 at the start of each
    Lava time step ts (1, 2, ...) with ts % interval == offset % interval. refractory=R:
    LIFRefractory's rule (PyLifRefractoryModelFloat, Lava has it in float only): after a spike
    at ts, v is not updated while ts' <= ts + R; u integrates as always."""
    T = s_in.shape[0]
    n = w.shape[0]
    u = np.zeros(n, np.int64)
    v = np.zeros(n, np.int64)
    a_buff = np.zeros(n, np.int64)
    bias = np.where(bexp >= 0, bmant << np.maximum(bexp, 0), bmant >> np.maximum(-bexp, 0))
    us, vs, ss = [], [], []
    end = np.full(n, -1, np.int64)
    for t in range(T):
        if reset is not None and (t + 1) % reset[0] == reset[1] % reset[0]:
            u = np.zeros(n, np.int64)
            v = np.zeros(n, np.int64)
        a_in = a_buff  # Dense sends last step's sum first
        acc = w @ s_in[t].astype(np.int64)
        a_buff = acc << wexp if wexp >= 0 else acc >> -wexp
        c = rtz(u * (4096 - (du + 1)), 12) + (a_in << 6)
        c = np.where(c > 2**23, c - 2**24, c)
        u = np.where(c <= -(2**23), c + 2**24, c)
        quiet = end >= t + 1
        v_new = np.clip(rtz(v * (4096 - dv), 12) + u + bias, -(2**23 - 1), 2**23 - 1)
        v = np.where(quiet, v, v_new)
        s = (v > (vth << 6)).astype(np.int64)
        if vth_lo is not None:
            s = s - (v < (vth_lo << 6))
        v = np.where(s != 0, 0, v)
        end = np.where(s != 0, t + 1 + refractory, end)
        us.append(u)
        vs.append(v)
        ss.append(s)
    return np.array(us), np.array(vs), np.array(ss)


def xylo_decay(x, dash):
    d = x >> dash
    return np.where(d != 0, d, np.sign(x))


def sat16(x):
    return np.clip(x, -32768, 32767)


def xylo_run(w_in, w_rec, shift_in, shift_rec, s_in, dash_syn, dash_mem, theta, bias):
    """Vmem (after reset) and spike counts [T, n] of xylosim's evolve: inputs of this step and
    the hidden spikes of the previous step into Isyn, Isyn decays, Vmem = sat(V + sat(sat(Isyn
    - decay(V)) + bias)), then while V >= theta (at most 31): one spike, V -= theta."""
    T, n = s_in.shape[0], w_in.shape[0]
    isyn = np.zeros(n, np.int64)
    vmem = np.zeros(n, np.int64)
    prev = np.zeros(n, np.int64)
    vs, ss = [], []
    for t in range(T):
        isyn = sat16(isyn + (w_in @ s_in[t].astype(np.int64) << shift_in) + (w_rec @ prev << shift_rec))
        isyn = isyn - xylo_decay(isyn, dash_syn)
        dvm = sat16(isyn - xylo_decay(vmem, dash_mem))
        vmem = sat16(vmem + sat16(dvm + bias))
        k = np.where(vmem >= theta, np.minimum(vmem // theta, 31), 0)
        vmem = vmem - k * theta
        prev = k
        vs.append(vmem)
        ss.append(k)
    return np.array(vs), np.array(ss)


# ---------------------------------------------------------------- running ternion


def run_trace(model, spikes, name, engine="event", threads=1):
    spikes_file(path(f"{name}_in.h5"), spikes[None])
    tr = path(f"{name}_{engine}_{threads}.h5")
    run("run", model, "--input", path(f"{name}_in.h5"), "--engine", engine, "--threads", threads,
        "--trace", tr, "--record", "spikes,membrane", "--record-nodes", "lif")
    with h5py.File(tr, "r") as f:
        v = f["nodes/lif/observables/v/data"][()][0]
    return v.astype(np.int64), trace_spikes(tr, "lif")[0].astype(np.int64)


def check_all(model, spikes, name, v_ref, s_ref):
    for engine in ("event", "dense"):
        for threads in (1, 3):
            v, s = run_trace(model, spikes, name, engine, threads)
            assert np.array_equal(s, s_ref), (name, engine, threads, np.argwhere(s != s_ref)[:5])
            assert np.array_equal(v, v_ref), (name, engine, threads, np.argwhere(v != v_ref)[:5])


def lava_model(fname, w, wexp, du, dv, bmant, bexp, vth, vth_lo=None, **extra):
    n_out, n_in = w.shape
    lif = dict(du=du, dv=dv, bias_mant=bmant, bias_exp=bexp, vth=vth, input_exp=np.int64(wexp))
    lif.update({k: np.int64(x) for k, x in extra.items()})
    if vth_lo is not None:
        lif["vth_lo"] = vth_lo
    (Nir().node("input", "Input", shape=np.array([n_in]))
     .node("dense", "Linear", weight=w.astype(np.float32))
     .node("delay", "Delay", delay=np.float64(0.001))
     .node("lif", "ternion.FixedLIF", **lif)
     .node("output", "Output", shape=np.array([n_out]))
     .edge("input", "dense").edge("dense", "delay").edge("delay", "lif").edge("lif", "output")
     .write(fname))


def random_lava_case(k, ternary):
    n_in, n_out, T = int(rng.integers(3, 20)), int(rng.integers(2, 12)), 40
    w_raw = rng.integers(-300, 300, size=(n_out, n_in))
    if k % 4 == 1:
        w_raw = np.abs(w_raw)  # excitatory: all 8 bits kept
    w = lava_weights(w_raw)
    wexp = int(rng.integers(-2, 2))
    du = rng.integers(0, 4096, n_out)
    dv = rng.integers(0, 4096, n_out)
    bmant = rng.integers(-4096, 4096, n_out) // (1 if k % 3 == 0 else 64)
    bexp = rng.integers(-3, 8, n_out)
    spikes = (rng.random((T, n_in)) < rng.uniform(0.1, 0.6)).astype(np.int8)
    if ternary:
        vth = rng.integers(0, 60, n_out)
        vth_lo = -rng.integers(0, 60, n_out)
    else:
        vth = rng.integers(1, 400, n_out)
        vth_lo = None
    return w, wexp, spikes, du, dv, bmant, bexp, vth, vth_lo


@test
def lava_lif_and_ternary_lif_equal_lava_equations():
    fired = 0
    for k in range(10):
        ternary = k % 3 == 2
        w, wexp, spikes, du, dv, bmant, bexp, vth, vth_lo = random_lava_case(k, ternary)
        m = path(f"lava{k}.h5")
        lava_model(m, w, wexp, du, dv, bmant, bexp, vth, vth_lo)
        _, v_ref, s_ref = lava_run(w, wexp, spikes, du, dv, bmant, bexp, vth, vth_lo)
        fired += int(np.abs(s_ref).sum())
        check_all(m, spikes, f"lava{k}", v_ref, s_ref)
    assert fired > 100, fired  # the cases exercise firing, not only sub-threshold decay


@test
def lava_periodic_reset_and_refractory_period():
    # LIFReset (bit-accurate in Lava) and the refractory rule of LIFRefractory (float in Lava,
    # the same rule on the integers here), with and without ternary thresholds.
    cases = [dict(reset=(5, 2)), dict(reset=(3, 7)), dict(reset=(1, 0)), dict(refractory=3),
             dict(refractory=1), dict(refractory=4, reset=(6, 0))]
    held = 0
    for k, case in enumerate(cases):
        w, wexp, spikes, du, dv, bmant, bexp, vth, vth_lo = random_lava_case(k, k == 4)
        extra = {}
        if "reset" in case:
            extra.update(reset_interval=case["reset"][0], reset_offset=case["reset"][1])
        if "refractory" in case:
            extra["refractory_period"] = case["refractory"]
        m = path(f"lava_sched{k}.h5")
        lava_model(m, w, wexp, du, dv, bmant, bexp, vth, vth_lo, **extra)
        _, v_ref, s_ref = lava_run(w, wexp, spikes, du, dv, bmant, bexp, vth, vth_lo,
                                   reset=case.get("reset"), refractory=case.get("refractory", 0))
        _, v_plain, s_plain = lava_run(w, wexp, spikes, du, dv, bmant, bexp, vth, vth_lo)
        held += int((s_ref != s_plain).sum())
        check_all(m, spikes, f"lava_sched{k}", v_ref, s_ref)
    assert held > 20, held  # the schedules change the spikes, so the test sees them
    # The neuron's summary says so, and bad values are named.
    info = run("info", path("lava_sched5.h5")).stdout
    assert "refractory" in info and "periodic reset" in info, info
    w, wexp, spikes, du, dv, bmant, bexp, vth, vth_lo = random_lava_case(0, False)
    for extra, field in ((dict(reset_interval=-1), "reset_interval"),
                         (dict(reset_offset=2), "reset_offset"),
                         (dict(refractory_period=-2), "refractory_period")):
        m = path("lava_bad_sched.h5")
        lava_model(m, w, wexp, du, dv, bmant, bexp, vth, None, **extra)
        expect_error(["info", m], f"nodes/lif/{field}")


@test
def lava_lif_overflow_is_counted():
    # 40 inputs of weight 254: u gains 650240 a step and wraps past 2^23 after 13 steps (Lava
    # adjusts by one period, ternion reduces modulo 2^24: equal while |u| < 3 2^23, as here).
    T = 20
    w = np.full((2, 40), 254)
    spikes = np.ones((T, 40), np.int8)
    du, dv = np.array([0, 10]), np.array([0, 0])
    z = np.zeros(2, np.int64)
    m = path("wrap.h5")
    lava_model(m, w, 0, du, dv, z, z, np.array([131071, 131071]))
    u_ref, v_ref, s_ref = lava_run(w, 0, spikes, du, dv, z, z, np.array([131071, 131071]))
    check_all(m, spikes, "wrap", v_ref, s_ref)
    spikes_file(path("wrap_in.h5"), spikes[None])
    rep = run_json("run", m, "--input", path("wrap_in.h5"))
    layer = [l for l in rep["layers"] if l["name"] == "lif"][0]
    # u wraps where c leaves (-2^23, 2^23], v saturates where it would pass 2^23 - 1: each counts.
    expected = 0
    u_prev, v_prev = np.zeros(2, np.int64), np.zeros(2, np.int64)
    for t in range(T):
        a = w @ spikes[t - 1].astype(np.int64) if t > 0 else np.zeros(2, np.int64)
        c = rtz(u_prev * (4096 - (du + 1)), 12) + (a << 6)
        expected += int(((c > 2**23) | (c <= -(2**23))).sum())
        vraw = rtz(v_prev * (4096 - dv), 12) + u_ref[t]
        expected += int((np.abs(vraw) > 2**23 - 1).sum())
        u_prev, v_prev = u_ref[t], v_ref[t]
    assert expected > 0
    assert layer["ops"]["overflow"] == expected, (layer["ops"], expected)


def xylo_model(fname, w_in, w_rec, shift_in, shift_rec, dash_syn, dash_mem, theta, bias):
    n, n_in = w_in.shape
    (Nir().node("input", "Input", shape=np.array([n_in]))
     .node("w_in", "Linear", weight=(w_in << shift_in).astype(np.float32))
     .node("w_rec", "Linear", weight=(w_rec << shift_rec).astype(np.float32))
     .node("lif", "ternion.FixedLIF", datapath="xylo", du=dash_syn, dv=dash_mem, vth=theta,
           bias_mant=bias)
     .node("output", "Output", shape=np.array([n]))
     .edge("input", "w_in").edge("w_in", "lif").edge("lif", "w_rec").edge("w_rec", "lif")
     .edge("lif", "output")
     .write(fname))


@test
def xylo_recurrent_network_equals_xylosim_equations():
    fired = 0
    for k in range(6):
        n_in, n, T = 8, 12, 50
        w_in = rng.integers(-128, 128, (n, n_in))
        w_rec = rng.integers(-128, 128, (n, n)) * (rng.random((n, n)) < 0.4)
        shift_in, shift_rec = int(rng.integers(1, 6)), int(rng.integers(0, 4))
        dash_syn, dash_mem = rng.integers(1, 8, n), rng.integers(1, 8, n)
        theta = rng.integers(200, 4000, n)
        bias = rng.integers(-50, 200, n) if k % 2 else np.zeros(n, np.int64)
        spikes = (rng.random((T, n_in)) < 0.3).astype(np.int8)
        m = path(f"xylo{k}.h5")
        xylo_model(m, w_in, w_rec, shift_in, shift_rec, dash_syn, dash_mem, theta, bias)
        v_ref, s_ref = xylo_run(w_in, w_rec, shift_in, shift_rec, spikes, dash_syn, dash_mem, theta, bias)
        fired += int(s_ref.sum())
        check_all(m, spikes, f"xylo{k}", v_ref, s_ref)
    assert fired > 50, fired


@test
def bad_formats_are_named():
    w = np.ones((2, 3))
    base = dict(du=np.int64(0), dv=np.int64(0), vth=np.int64(10))

    def model(**over):
        p = dict(base, **over)
        (Nir().node("input", "Input", shape=np.array([3]))
         .node("dense", "Linear", weight=w.astype(np.float32))
         .node("lif", "ternion.FixedLIF", **p)
         .node("output", "Output", shape=np.array([2]))
         .edge("input", "dense").edge("dense", "lif").edge("lif", "output").write(path("bad.h5")))
        spikes_file(path("bad_in.h5"), np.ones((1, 3, 3), np.int8))
        return ["run", path("bad.h5"), "--input", path("bad_in.h5")]

    expect_error(model(du=np.int64(4096)), "bad.h5", "nodes/lif/du", "[0, 4095]")
    expect_error(model(dv=np.float64(1.5)), "nodes/lif/dv", "integer")
    expect_error(model(vth=np.int64(200000)), "nodes/lif/vth", "131071")
    expect_error(model(datapath="loihi2"), "nodes/lif/datapath", "loihi")
    expect_error(model(membrane_overflow="clip"), "nodes/lif/membrane_overflow", "saturate")
    expect_error(model(vth_lo=np.int64(20)), "nodes/lif/vth_lo", "must not exceed vth")
    expect_error(model(max_spikes=np.int64(4)), "nodes/lif/max_spikes", "subtract")
    expect_error(model(membrane_bit=np.int64(16)), "nodes/lif/membrane_bit")
    # Values whose shifts would overflow 64 bits are refused before any shift.
    expect_error(model(vth=np.int64(10**15)), "nodes/lif/vth", "131071")
    expect_error(model(vth_lo=np.int64(-10**15)), "nodes/lif/vth_lo", "below")
    expect_error(model(bias_mant=np.int64(10**12), bias_exp=np.int64(31)), "nodes/lif/bias_mant",
                 "32 bits")
    expect_error(model(input_exp=np.int64(31)), "nodes/lif/input_shift", "30")


@test
def info_shows_the_datapath():
    lava_model(path("info.h5"), np.ones((2, 3), np.int64), -1, np.array([0, 1]), np.array([5, 6]),
               np.zeros(2, np.int64), np.zeros(2, np.int64), np.array([3, 4]), np.array([-1, -2]))
    out = run("info", path("info.h5")).stdout
    for part in ("24 bits, wrap", "24 bits, saturate_symmetric", "toward zero", "-1 below vth_lo"):
        assert part in out, (part, out)



@test
def integer_layers_are_priced_by_operand_width():
    """--arith fixed under a profile with a width table: a connection layer whose sums go into
    FixedLIF currents prices an AC as an add at the current's width and a MAC as an 8-bit
    multiply plus that add (Horowitz's points, add linear in the bits, multiply in the bits
    squared); the readout, whose sums stay float, at 32 bits."""
    import json
    import os
    prof = json.load(open(os.path.join(os.path.dirname(__file__), "..", "..", "hw", "profiles",
                                       "horowitz45-int8.json")))
    prof["name"] = "int8-24"
    prof["formats"]["neuron"]["current_bits"] = 24
    json.dump(prof, open(path("int8-24.json"), "w"))
    bundled = os.path.join(os.path.dirname(__file__), "..", "..", "models", "bundled")
    j = run_json("run", os.path.join(bundled, "ssa_digits.h5"), "--input",
                 os.path.join(bundled, "digits_test.h5"), "--samples", "12", "--arith", "fixed",
                 "--profile", path("int8-24.json"))

    def add(b):
        return 0.03 + (b - 8) / 24 * 0.07

    def mult(b):
        return 0.2 + (b * b - 64) / 960 * 2.9

    layers = {l["name"]: l for l in j["layers"]}
    for name, acc in (("conv", 24), ("b0_proj", 24), ("b0_fc1", 24), ("b0_fc2", 24),
                      ("head", 32)):
        l = layers[name]
        got = l["energy_by_kind_pj"]
        ac, mac = l["ops"]["ac"] / 12, l["ops"]["mac"] / 12
        assert ac + mac > 0, name
        assert abs(got.get("ac", 0) - ac * add(acc)) < 1e-9 * max(1, ac), (name, got, ac)
        assert abs(got.get("mac", 0) - mac * (mult(8) + add(acc))) < 1e-9 * max(1, mac), name
        assert f"int{acc} add" in l["count_basis"], l["count_basis"]
    assert any("priced by operand width" in n for n in j["energy_notes"]), j["energy_notes"]

finish()
