#!/usr/bin/env python3
"""`--count lemaire --profile lemaire` against the Lemaire estimator's rules, recounted in numpy.

The rules are those docs/cost-model.md section 2.6 documents for SpikingJelly's
estimate_lemaire_energy (spikingjelly/activation_based/op_counter/analytical_energy/core.py and
lemaire_addressing.py, neuron_state.py): each (sample, step) is one module call; the test
recomputes every layer's input and output from the weights and the traced spikes, applies the
per-call rules, prices with E_add = 0.1 pJ, E_mul = 3.1 pJ and the memory cost per byte,
piecewise linear through (0, 0), (8 KiB, 2.5), (32 KiB, 5), (1 MiB, 25), and compares with the
report. No SpikingJelly is needed.
"""
import h5py
import numpy as np

from harness import finish, path, run_json, test
from nirfile import Nir, spikes_file, trace_spikes

rng = np.random.default_rng(11)
E_ADD, E_MUL = 0.1, 3.1
POINTS = [(0.0, 0.0), (8192.0, 2.5), (32768.0, 5.0), (1048576.0, 25.0)]


def close(a, b, tol=1e-9):
    return abs(a - b) <= tol * max(1.0, abs(a), abs(b))


def cost_per_byte(b):
    """The documented piecewise-linear memory cost, clamped to the end points."""
    b = min(max(b, POINTS[0][0]), POINTS[-1][0])
    for (x0, y0), (x1, y1) in zip(POINTS, POINTS[1:]):
        if b <= x1:
            return y0 + (y1 - y0) / (x1 - x0) * (b - x0)
    return POINTS[-1][1]


def is_binary(x):
    return bool(np.all((x == 0) | (x == 1)))


def is_sparse(x):
    return is_binary(x) or 1.0 - np.count_nonzero(x) / x.size >= 0.5


class Tally:
    def __init__(self):
        self.c = dict(synop=0, ac=0, mac=0, state_acc=0, state_mac=0, acc_addr=0, mac_addr=0,
                      read_in=0, write_out=0, params=0, read_pot=0, write_pot=0)
        self.buf = dict(read_in=0, write_out=0, params=0, pot=0)

    def connection(self, x, y, fan, dense_macs, params_dense, bias, ones_conv=None, kernel_taps=0):
        """One Linear/Conv call: x its input, y its output (before the neuron)."""
        nnz = np.count_nonzero(x)
        if is_binary(x):
            syn = ones_conv(x) if ones_conv else fan * nnz
            self.c["synop"] += syn
            self.c["ac"] += syn
            self.c["acc_addr"] += fan * nnz
            if ones_conv:
                self.c["mac_addr"] += 2 * nnz
        else:
            self.c["mac"] += dense_macs
            self.c["acc_addr"] += x.size + y.size + kernel_taps
        if is_sparse(x):
            out_active = np.count_nonzero(y) if is_sparse(y) else y.size
            rin, wout, par = 4 * nnz, 4 * out_active, 4 * (nnz * fan + (out_active if bias else 0))
        else:
            rin, wout, par = 4 * x.size, 4 * y.size, 4 * params_dense
        for k, v in (("read_in", rin), ("write_out", wout), ("params", par)):
            self.c[k] += v
            self.buf[k] = max(self.buf[k], v)

    def lif(self, x, s, reset_value=0.0, subtract=False):
        """One LIFNode step (decay_input): x its input, s its spikes. (A neuron layer after the
        first one in a sample is not counted at step 0: the caller skips that call.)"""
        n, ns = x.size, np.count_nonzero(s)
        nx = np.count_nonzero(x) if is_sparse(x) else n
        nt = 0 if reset_value == 0 else ns
        t_sparse = reset_value in (0.0, 1.0) or 1.0 - nt / n >= 0.5
        r = min(nt, n) if t_sparse else n
        if subtract:
            reads, writes, mac = 6 * n + nx + r, 4 * n + nx + r, n
        else:
            reads, writes, mac = 7 * n + nx - ns + r, 5 * n + nx - ns + r, 2 * n
        self.c["state_acc"] += 6 * n
        self.c["state_mac"] += mac
        self.c["read_pot"] += 4 * reads
        self.c["write_pot"] += 4 * writes
        self.buf["pot"] = max(self.buf["pot"], 4 * n)

    def energy(self):
        c, b = self.c, self.buf
        ops = (c["synop"] + c["ac"] + c["state_acc"]) * E_ADD + (c["mac"] + c["state_mac"]) * (E_MUL + E_ADD)
        addr = c["acc_addr"] * E_ADD + c["mac_addr"] * (E_MUL + E_ADD)
        mem = (c["read_in"] * cost_per_byte(b["read_in"]) + c["write_out"] * cost_per_byte(b["write_out"])
               + c["params"] * cost_per_byte(b["params"])
               + (c["read_pot"] + c["write_pot"]) * cost_per_byte(b["pot"]))
        return ops, addr, mem


def check(j, tallies):
    """The report against the mean over samples of each sample's own estimate."""
    S = len(tallies)
    lj = j["lemaire"]
    for k, name in (("synop", "synop"), ("ac", "ac"), ("mac", "mac"), ("state_acc", "state_acc"),
                    ("state_mac", "state_mac"), ("acc_addr", "acc_addr"), ("mac_addr", "mac_addr"),
                    ("read_in", "read_in_bytes"), ("write_out", "write_out_bytes"),
                    ("params", "read_params_bytes"), ("read_pot", "read_potential_bytes"),
                    ("write_pot", "write_potential_bytes")):
        want = sum(t.c[k] for t in tallies) / S
        assert close(lj[name], want), (name, lj[name], want)
    if S == 1:
        ops, addr, mem = tallies[0].energy()
        assert close(lj["ops_pj"], ops), (lj, ops)
        assert close(lj["addressing_pj"], addr), (lj, addr)
        assert close(lj["memory_pj"], mem), (lj, mem)
        assert close(lj["total_pj"], ops + addr + mem)
        assert close(j["per_inference"]["energy_pj"], ops + addr + mem)
        assert close(j["headline"]["energy_pj"], ops + addr + mem)
    return lj


def sj_lif(cur, tau=2.0, vth=1.0, v_reset=0.0, subtract=False):
    """SpikingJelly's LIFNode (decay_input) over [T, n] currents, in float32."""
    v = np.full(cur.shape[1:], v_reset if not subtract else 0.0, np.float32)
    out = np.zeros_like(cur, dtype=np.float32)
    for t in range(cur.shape[0]):
        base = np.float32(0.0 if subtract else v_reset)
        v = (v + (cur[t].astype(np.float32) - (v - base)) / np.float32(tau)).astype(np.float32)
        out[t] = v >= vth
        if subtract:
            v = v - out[t] * np.float32(vth)
        else:
            v = np.where(out[t] > 0, np.float32(v_reset), v)
    return out


def linear_net(name, subtract=False, analog=False):
    w = rng.normal(0.3, 0.5, (4, 8)).astype(np.float32)
    b = rng.normal(0.2, 0.1, 4).astype(np.float32)
    lif = dict(tau=np.float32(2.0), v_threshold=np.float32(1.0))
    if subtract:
        lif["reset_mode"] = "subtract"
    (Nir().node("input", "Input", shape=np.array([8]))
     .node("fc", "Affine", weight=w, bias=b).node("lif", "ternion.SJLIF", **lif)
     .node("output", "Output", shape=np.array([4]))
     .edge("input", "fc").edge("fc", "lif").edge("lif", "output").write(path(name + ".h5")))
    return w, b


def run_lemaire(model, inp, T=None, profile="lemaire"):
    args = ["run", path(model), "--input", path(inp), "--count", "lemaire", "--profile", profile,
            "--trace", path(model + "_tr.h5"), "--record", "spikes"]
    if T:
        args += ["--timesteps", T]
    return run_json(*args)


@test
def linear_lif_on_spikes_equals_the_documented_rules():
    for subtract in (False, True):
        w, b = linear_net("lin", subtract)
        S, T = 1, 6
        x = (rng.random((S, T, 8)) < 0.3).astype(np.int8)
        x[0, 2] = 0  # a silent step: the input is still binary (sparse)
        spikes_file(path("lin_in.h5"), x)
        j = run_lemaire("lin.h5", "lin_in.h5")
        spk = trace_spikes(path("lin.h5_tr.h5"), "lif").astype(np.float32)
        tallies = []
        for s in range(S):
            t = Tally()
            cur = np.stack([w.astype(np.float64) @ x[s, k] + b for k in range(T)])
            assert np.array_equal(sj_lif(cur, subtract=subtract), spk[s])
            for k in range(T):
                t.connection(x[s, k].astype(np.float64), cur[k], fan=4, dense_macs=32,
                             params_dense=36, bias=True)
                t.lif(cur[k], spk[s, k], reset_value=1.0 if subtract else 0.0, subtract=subtract)
            tallies.append(t)
        lj = check(j, tallies)
        assert lj["synop"] > 0 and spk.sum() > 0, "no activity to count"
        assert lj["mac"] == 0


@test
def analog_input_is_billed_as_dense_macs():
    w, b = linear_net("lina")
    S, T = 1, 3
    x = rng.random((S, 8)).astype(np.float32)
    with h5py.File(path("lina_in.h5"), "w") as f:
        f["data"] = x
    j = run_lemaire("lina.h5", "lina_in.h5", T=T)
    spk = trace_spikes(path("lina.h5_tr.h5"), "lif").astype(np.float32)
    t = Tally()
    cur = np.stack([w.astype(np.float64) @ x[0] + b for _ in range(T)])
    for k in range(T):
        t.connection(x[0].astype(np.float64), cur[k], fan=4, dense_macs=32, params_dense=36, bias=True)
        t.lif(cur[k], spk[0, k])
    lj = check(j, [t])
    assert lj["mac"] == 3 * 32 and lj["synop"] == 0 and lj["acc_addr"] == 3 * (8 + 4)


def conv_ones(x, cout, k, pad):
    """SpikingJelly's AC rule for a convolution fed spikes: x convolved with all-one weights."""
    C, H, W = x.shape
    xp = np.pad(x, ((0, 0), (pad, pad), (pad, pad)))
    OH, OW = H + 2 * pad - k + 1, W + 2 * pad - k + 1
    total = 0.0
    for ky in range(k):
        for kx in range(k):
            total += xp[:, ky:ky + OH, kx:kx + OW].sum()
    return cout * total


def conv2d(x, w, pad):
    C, H, W = x.shape
    k = w.shape[-1]
    xp = np.pad(x, ((0, 0), (pad, pad), (pad, pad)))
    OH, OW = H + 2 * pad - k + 1, W + 2 * pad - k + 1
    y = np.zeros((w.shape[0], OH, OW))
    for ky in range(k):
        for kx in range(k):
            y += np.einsum("chw,oc->ohw", xp[:, ky:ky + OH, kx:kx + OW], w[:, :, ky, kx])
    return y


def conv_net():
    wc = rng.normal(0.25, 0.4, (3, 2, 3, 3)).astype(np.float32)
    wf = rng.normal(0.2, 0.3, (5, 108)).astype(np.float32)
    conv = dict(stride=np.array([1, 1]), padding=np.array([1, 1]), dilation=np.array([1, 1]), groups=1)
    lif = dict(tau=np.float32(2.0), v_threshold=np.float32(1.0))
    (Nir().node("input", "Input", shape=np.array([2, 6, 6]))
     .node("conv", "Conv2d", weight=wc, input_shape=np.array([6, 6]), **conv)
     .node("lif1", "ternion.SJLIF", **lif)
     .node("flat", "Flatten", start_dim=0, end_dim=-1, input_type=np.array([3, 6, 6]))
     .node("fc", "Linear", weight=wf).node("lif2", "ternion.SJLIF", **lif)
     .node("output", "Output", shape=np.array([5]))
     .edge("input", "conv").edge("conv", "lif1").edge("lif1", "flat").edge("flat", "fc")
     .edge("fc", "lif2").edge("lif2", "output").write(path("conv.h5")))
    return wc, wf


def conv_tallies(wc, wf, x, spk1, spk2):
    S, T = x.shape[:2]
    tallies = []
    for s in range(S):
        t = Tally()
        for k in range(T):
            xi = x[s, k].astype(np.float64)
            c1 = conv2d(xi, wc.astype(np.float64), 1)
            t.connection(xi, c1, fan=3 * 9, dense_macs=3 * 2 * 9 * 36, params_dense=wc.size, bias=False,
                         ones_conv=lambda v: conv_ones(v, 3, 3, 1), kernel_taps=3 * 9)
            t.lif(c1, spk1[s, k])
            f = spk1[s, k].reshape(-1).astype(np.float64)
            c2 = wf.astype(np.float64) @ f
            t.connection(f, c2, fan=5, dense_macs=5 * 108, params_dense=wf.size, bias=False)
            if k > 0:  # the second neuron layer's first step is not counted
                t.lif(c2, spk2[s, k])
        tallies.append(t)
    return tallies


@test
def conv_lif_linear_lif_equals_the_documented_rules():
    wc, wf = conv_net()
    for S in (1, 3):
        T = 4
        x = (rng.random((S, T, 2, 6, 6)) < 0.25).astype(np.int8)
        spikes_file(path("conv_in.h5"), x)
        j = run_lemaire("conv.h5", "conv_in.h5")
        spk1 = trace_spikes(path("conv.h5_tr.h5"), "lif1").astype(np.float32).reshape(S, T, 3, 6, 6)
        spk2 = trace_spikes(path("conv.h5_tr.h5"), "lif2").astype(np.float32)
        tallies = conv_tallies(wc, wf, x, spk1, spk2)
        lj = check(j, tallies)
        assert spk1.sum() > 0 and spk2.sum() > 0 and lj["mac_addr"] > 0
        # Several samples: each buffer is the mean over samples of each sample's largest access.
        for key, name in (("read_in", "read_in_buffer_bytes"), ("write_out", "write_out_buffer_bytes"),
                          ("params", "params_buffer_bytes"), ("pot", "potential_buffer_bytes")):
            want = sum(t.buf[key] for t in tallies) / S if key != "pot" else 4 * 108
            assert close(lj[name], want), (name, lj[name], want)


@test
def memory_cost_per_byte_worked_numbers():
    # chip-model.md E.5: 20 KiB -> 3.75, 5120 B -> 1.5625, above 1 MiB -> 25 pJ per byte.
    assert close(cost_per_byte(20 * 1024), 3.75)
    assert close(cost_per_byte(5120), 1.5625)
    assert close(cost_per_byte(2 * 1048576), 25.0)
    # A buffer of 20 KiB in the run itself: 5120 float32 inputs of which at most half fire, so
    # every call is sparse and the largest is a dense-looking 20 KiB read of weights.
    n_in = 5120
    w = np.full((1, n_in), 0.001, np.float32)
    (Nir().node("input", "Input", shape=np.array([n_in])).node("fc", "Linear", weight=w)
     .node("lif", "ternion.SJLIF", tau=np.float32(2.0), v_threshold=np.float32(100.0))
     .node("output", "Output", shape=np.array([1]))
     .edge("input", "fc").edge("fc", "lif").edge("lif", "output").write(path("wide.h5")))
    x = np.zeros((1, 2, n_in), np.int8)
    x[0, 0, :n_in // 2] = 1  # 2560 spikes: 2560 x 1 x 4 = 10 KiB of weights read
    x[0, 1, :n_in // 4] = 1
    spikes_file(path("wide_in.h5"), x)
    j = run_lemaire("wide.h5", "wide_in.h5")
    lj = j["lemaire"]
    assert lj["read_in_buffer_bytes"] == 4 * 2560 and lj["params_buffer_bytes"] == 4 * 2560
    # inputs read: (2560 + 1280) x 4 bytes at the 10 KiB buffer's 2.5 + 2.5 x 2048 / 24576 pJ/B
    per_byte = 2.5 + 2.5 * (10240 - 8192) / (32768 - 8192)
    assert close(per_byte, cost_per_byte(10240))
    assert close(lj["inout_pj"], 4 * 3840 * per_byte + lj["write_out_bytes"] * cost_per_byte(4))


@test
def other_profiles_leave_the_memory_term_out_and_say_so():
    linear_net("lin")
    spikes_file(path("lin_in.h5"), (rng.random((1, 3, 8)) < 0.4).astype(np.int8))
    j = run_lemaire("lin.h5", "lin_in.h5", profile="horowitz45-fp32")
    assert j["lemaire"]["memory_pj"] == 0
    assert any("no memory.by_buffer_size" in n for n in j["energy_notes"]), j["energy_notes"]


finish()
