#!/usr/bin/env python3
"""Acceptance test of issue #38: the bundled digits Transformers (BSA and SSA) quantised to 8-bit
weights and 16-bit membranes with both shipped profiles (`loihi-like`, `horowitz45-int8`), run
as integer models (integer Conv2d / Affine weights, FixedLIF neurons, integer SSA and BSA
attention), against a numpy reference written here from docs/fixed-point.md (sections 1, 2 and
2.2), docs/transformer-format.md and docs/model-format.md, not from ternion's code:

- every prediction and every layer's spike total (non-zero outputs over samples and steps) of
  `ternion run --json` equals the reference's, on both engines and 1 and 3 threads; the
  attention node's spikes equal it step by step in a trace of a few samples; each FixedLIF's and
  attention node's `ops.overflow` equals the reference's count of saturated or wrapped states;
- the integer model's accuracy stays within a measured bound of the float model's;
- one hand-made integer node per attention kind (SSA, SDSA, BSA) with small registers that
  saturate or wrap (BSA: shift_cap, value_shift, shift_rounding "toward_zero", a small
  acc_bits), spikes at every step and `ops.overflow` against the reference.

The reference reads every parameter (weights, thresholds, every datapath field) from the HDF5
file with h5py and evaluates the graph in edge order, every sample at once. No subset: all 360
samples of models/bundled/digits_test.h5 (the vectorised reference takes about a second a model).
"""
import os

import h5py
import numpy as np

from harness import finish, path, run, run_json, test
from nirfile import Nir, spikes_file, trace_spikes

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUNDLED = os.path.join(ROOT, "models", "bundled")
DATA = os.path.join(BUNDLED, "digits_test.h5")
rng = np.random.default_rng(3838)

# ---------------------------------------------------------------- the integer rules (numpy)

# docs/fixed-point.md section 1: the two presets every datapath field starts from.
PRESETS = {
    "loihi": dict(current_bits=24, current_overflow="wrap", membrane_bits=24,
                  membrane_overflow="saturate_symmetric", decay_form="multiply", decay_shift=12,
                  du_offset=1, dv_offset=0, order="decay_then_add", input_exp=0, input_shift=6,
                  threshold_shift=6, compare=">", reset_mode="zero", max_spikes=1),
    "xylo": dict(current_bits=16, current_overflow="saturate", membrane_bits=16,
                 membrane_overflow="saturate", decay_form="bitshift", decay_shift=12, du_offset=0,
                 dv_offset=0, order="add_then_decay", input_exp=0, input_shift=0,
                 threshold_shift=0, compare=">=", reset_mode="subtract", max_spikes=31),
}


def value(g, name, default=None):
    """A dataset of an h5py group (or a key of a dict read from one), strings decoded, integer
    arrays as int64."""
    if name not in g:
        return default
    v = g[name] if isinstance(g, dict) else g[name][()]
    if isinstance(v, bytes):
        return v.decode()
    if isinstance(v, np.ndarray) and v.dtype.kind in "iu":
        return v.astype(np.int64)
    if isinstance(v, (np.integer,)):
        return int(v)
    return v


def datapath(g):
    dp = dict(PRESETS[value(g, "datapath", "loihi")])
    for k in dp:
        if k in g:
            dp[k] = value(g, k)
    return dp


def fit(x, bits, policy):
    """x held in `bits` bits: saturate [-2^(b-1), 2^(b-1)-1], saturate_symmetric
    +-(2^(b-1)-1), wrap modulo 2^b into (-2^(b-1), 2^(b-1)]. Returns (value, states changed)."""
    half = 1 << (bits - 1)
    if policy == "wrap":
        y = np.where((x > -half) & (x <= half), x, (x + half - 1) % (2 * half) - half + 1)
    else:
        y = np.clip(x, -(half - 1) if policy == "saturate_symmetric" else -half, half - 1)
    return y, int(np.count_nonzero(y != x))


def rtz(x, s):
    return np.sign(x) * (np.abs(x) >> s)


def shl(x, e):
    """x 2^e, a floor shift when e is negative (per element)."""
    e = np.asarray(e)
    return np.where(e >= 0, x << np.maximum(e, 0), x >> np.maximum(-e, 0))


class FixedLif:
    """Section 1's FixedLIF, constants per neuron (broadcast over [samples, ...]). `cleared`:
    section 2.2's single-compartment neuron of an attention group (u holds the step's input)."""

    def __init__(self, dp, du, dv, bias_mant, bias_exp, vth, vth_lo=None, input_exp=None,
                 cleared=False):
        self.dp, self.cleared = dp, cleared
        self.ie = dp["input_exp"] if input_exp is None else input_exp
        self.du = np.asarray(du) + dp["du_offset"]
        self.dv = np.asarray(dv) + dp["dv_offset"]
        self.bias = shl(np.asarray(bias_mant, np.int64), bias_exp)
        self.th = np.asarray(vth, np.int64) << dp["threshold_shift"]
        self.lo = None if vth_lo is None else np.asarray(vth_lo, np.int64) << dp["threshold_shift"]
        self.u = self.v = np.int64(0)
        self.overflow = 0

    def decay(self, x, d):
        if self.dp["decay_form"] == "multiply":
            ds = self.dp["decay_shift"]
            return rtz(x * ((1 << ds) - d), ds)
        step = x >> d  # bitshift: x - (x >> d), at least one step toward zero
        return x - np.where(step != 0, step, np.sign(x))

    def fit_c(self, x):
        y, n = fit(x, self.dp["current_bits"], self.dp["current_overflow"])
        self.overflow += n
        return y

    def fit_m(self, x):
        y, n = fit(x, self.dp["membrane_bits"], self.dp["membrane_overflow"])
        self.overflow += n
        return y

    def step(self, a):
        # a: the summed input; a fraction (analog input) is dropped toward minus infinity.
        a = np.floor(a).astype(np.int64)
        inp = shl(a, self.ie) << self.dp["input_shift"]
        dp = self.dp
        if self.cleared:
            self.u = self.fit_c(inp)
            self.v = self.fit_m(self.decay(self.v, self.dv) + self.u + self.bias)
        elif dp["order"] == "decay_then_add":
            self.u = self.fit_c(self.decay(self.u, self.du) + inp)
            self.v = self.fit_m(self.decay(self.v, self.dv) + self.u + self.bias)
        else:
            self.u = self.decay(self.fit_c(self.u + inp), self.du)
            v = self.v
            self.v = self.fit_m(v + self.fit_m(self.fit_m(self.u - (v - self.decay(v, self.dv)))
                                               + self.bias))
        ge = dp["compare"] == ">="
        v = self.v
        if dp["reset_mode"] == "subtract":
            s = np.zeros(v.shape, np.int64)
            for _ in range(dp["max_spikes"]):
                f = (v >= self.th) if ge else (v > self.th)
                s = s + f
                v = v - f * self.th
        else:
            s = ((v >= self.th) if ge else (v > self.th)).astype(np.int64)
            if self.lo is not None:
                s = s - ((v <= self.lo) if ge else (v < self.lo))
            v = np.where(s != 0, 0, v)
        self.v = v
        return s


def shiftmax_exponents(S):
    """n_ij = gamma_i - S_ij, gamma_i = ceil(log2 sum_j 2^S_ij) exactly (integer S, last axis)."""
    lo = S.min(axis=-1, keepdims=True)
    assert (S - lo).max() <= 40
    A = (np.int64(1) << (S - lo)).sum(axis=-1, keepdims=True)  # sum 2^S = A 2^lo, exact
    ceil_log2 = sum((A > (np.int64(1) << e)).astype(np.int64) for e in range(62))
    return lo + ceil_log2 - S


class Attention:
    """Section 2.2's integer SSA / SDSA / BSA node on [samples, N, D_in] activity."""

    def __init__(self, g):
        self.kind = value(g, "type")
        dp = self.dp = datapath(g)
        self.W = {p: value(g, p + "_weight") for p in "qkv"}
        self.b = {p: value(g, p + "_bias", np.zeros(self.W[p].shape[0], np.int64)) for p in "qkv"}
        self.heads = value(g, "heads", 1)
        self.acc_bits, self.acc_overflow = value(g, "acc_bits", 32), value(g, "acc_overflow", "saturate")
        groups = {"ternion.SSA": ("q_", "k_", "v_", "attn_"), "ternion.SDSA": ("q_", "k_", "v_", "attn_"),
                  "ternion.BSA": ("q_", "k_", "out_")}[self.kind]
        tern = ("q_", "k_", "out_") if self.kind == "ternion.BSA" else ()
        self.g = {pre: FixedLif(dp, 0, value(g, pre + "dv", 0), value(g, pre + "bias_mant", 0),
                                value(g, pre + "bias_exp", 0), value(g, pre + "vth"),
                                value(g, pre + "vth_lo") if pre in tern else None,
                                input_exp=value(g, pre + "input_exp", 0), cleared=True)
                  for pre in groups}
        self.value_bits, self.value_shift = value(g, "value_bits", 24), value(g, "value_shift", 0)
        self.shift_cap = value(g, "shift_cap", 31)
        self.toward_zero = value(g, "shift_rounding", "floor") == "toward_zero"
        self.form = value(g, "form", "qk")
        self.vreg_overflow = self.acc_overflows = 0  # the V register's, the accumulator's
        self.rounding_matters = 0  # BSA: sums where floor and toward-zero shifts differ

    @property
    def overflow(self):
        return self.vreg_overflow + self.acc_overflows + sum(x.overflow for x in self.g.values())

    def acc(self, x):
        y, n = fit(x, self.acc_bits, self.acc_overflow)
        self.acc_overflows += n
        return y

    def step(self, x):
        P = {p: np.einsum("bni,oi->bno", x, self.W[p]) + self.b[p] for p in "qkv"}  # exact ints
        B, N, D = P["q"].shape
        H = self.heads
        heads = lambda a: a.reshape(B, N, H, D // H).transpose(0, 2, 1, 3)  # [B, H, N, dh]
        unheads = lambda a: a.transpose(0, 2, 1, 3).reshape(B, N, D)
        Q, K = self.g["q_"].step(P["q"]), self.g["k_"].step(P["k"])
        if self.kind == "ternion.BSA":
            V, n = fit(np.floor(P["v"]).astype(np.int64) << self.value_shift, self.value_bits,
                       "saturate")
            self.vreg_overflow += n
            S = np.einsum("bhic,bhjc->bhij", heads(Q), heads(K))
            e = shiftmax_exponents(S)  # [B, H, i, j]
            Vh = heads(V)[:, :, None, :, :]  # [B, H, 1, j, c]
            ee = np.minimum(e, 62)[..., None]
            kept = (e <= self.shift_cap)[..., None]
            y = np.where(kept, rtz(Vh, ee) if self.toward_zero else Vh >> ee, 0).sum(axis=3)
            self.rounding_matters += int(np.count_nonzero(
                y != np.where(kept, Vh >> ee if self.toward_zero else rtz(Vh, ee), 0).sum(axis=3)))
            return self.g["out_"].step(unheads(self.acc(y)))
        Vs = self.g["v_"].step(P["v"])
        if self.kind == "ternion.SSA":
            Y = np.einsum("bhic,bhjc,bhjd->bhid", heads(Q), heads(K), heads(Vs))  # (Q K^T) V
            return self.g["attn_"].step(unheads(self.acc(Y)))
        a, b = (K, Vs) if self.form == "kv" else (Q, K)
        m = self.g["attn_"].step(self.acc((a * b).sum(axis=1)))  # [B, D] column counts
        return (Q if self.form == "kv" else Vs) * m[:, None, :]


def conv2d(x, g):
    """PyTorch's Conv2d (groups 1) on [B, C, H, W]; g: the node's datasets."""
    W = g["weight"]
    bias = g.get("bias", np.zeros(W.shape[0], np.int64))
    pair = lambda k, d: tuple(np.broadcast_to(g.get(k, d), 2))
    (sh, sw), (ph, pw), (dh, dw) = pair("stride", 1), pair("padding", 0), pair("dilation", 1)
    assert g.get("groups", 1) == 1
    B, C, Hh, Ww = x.shape
    O, _, kh, kw = W.shape
    xp = np.zeros((B, C, Hh + 2 * ph, Ww + 2 * pw))
    xp[:, :, ph:ph + Hh, pw:pw + Ww] = x
    Ho, Wo = (Hh + 2 * ph - dh * (kh - 1) - 1) // sh + 1, (Ww + 2 * pw - dw * (kw - 1) - 1) // sw + 1
    out = np.zeros((B, O, Ho, Wo))
    for i in range(kh):
        for j in range(kw):
            patch = xp[:, :, i * dh:i * dh + sh * (Ho - 1) + 1:sh, j * dw:j * dw + sw * (Wo - 1) + 1:sw]
            out += np.einsum("bchw,oc->bohw", patch, W[:, :, i, j])
    return out + bias[None, :, None, None]


def maxpool2d(x, g):
    """Max over windows of [B, C, H, W], padded with -inf."""
    k = tuple(np.broadcast_to(g["kernel_size"], 2))
    s = tuple(np.broadcast_to(g.get("stride", np.array(k)), 2))
    p = tuple(np.broadcast_to(g.get("padding", 0), 2))
    B, C, Hh, Ww = x.shape
    xp = np.full((B, C, Hh + 2 * p[0], Ww + 2 * p[1]), -np.inf)
    xp[:, :, p[0]:p[0] + Hh, p[1]:p[1] + Ww] = x
    Ho, Wo = (Hh + 2 * p[0] - k[0]) // s[0] + 1, (Ww + 2 * p[1] - k[1]) // s[1] + 1
    return np.max([xp[:, :, i:i + s[0] * (Ho - 1) + 1:s[0], j:j + s[1] * (Wo - 1) + 1:s[1]]
                   for i in range(k[0]) for j in range(k[1])], axis=0)


class Reference:
    """The integer model of a file, evaluated node by node in edge order for a batch of samples.
    Activity between nodes is float64 (every value is a small dyadic rational, exact)."""

    def __init__(self, fname):
        with h5py.File(fname, "r") as f:
            self.edges = [(a.decode(), b.decode()) for a, b in f["node/edges"][()]]
            self.types = {n: value(g, "type") for n, g in f["node/nodes"].items()}
            self.params = {}
            for n, h in f["node/nodes"].items():
                t = self.types[n]
                g = {k: value(h, k) for k in h if isinstance(h[k], h5py.Dataset)}
                if t == "ternion.FixedLIF":
                    self.params[n] = lambda g=g: FixedLif(
                        datapath(g), value(g, "du", 0), value(g, "dv", 0), value(g, "bias_mant", 0),
                        value(g, "bias_exp", 0), value(g, "vth"), value(g, "vth_lo"))
                elif t in ("ternion.SSA", "ternion.SDSA", "ternion.BSA"):
                    self.params[n] = lambda g=g: Attention(g)
                elif t in ("Affine", "Linear"):
                    W = value(g, "weight")
                    self.params[n] = (W, value(g, "bias", np.zeros(W.shape[0], np.int64)))
                    assert W.dtype == np.int64, (n, "integer weights")
                elif t in ("Conv2d", "MaxPool2d"):
                    self.params[n] = g
                    assert t != "Conv2d" or g["weight"].dtype == np.int64, (n, "integer weights")
                else:
                    assert t in ("Input", "Output", "ternion.Tokens", "ternion.Identity",
                                 "ternion.TokenMean"), (n, t)
        self.order = self.topological()

    def topological(self):
        # Every edge of these graphs goes forward (no delayed edge).
        done, order = set(), []
        nodes = list(self.types)
        while len(order) < len(nodes):
            for n in nodes:
                if n not in done and all(a in done for a, b in self.edges if b == n):
                    done.add(n)
                    order.append(n)
                    break
            else:
                raise AssertionError("cycle")
        return order

    def run(self, x, T, analog, record=()):
        """x: [B, ...] analog data (the same frame every step: direct encoding) or, analog
        False, [B, T, ...] spikes. Returns predictions, the
        non-zero count of every node's output over samples and steps, the overflow count of
        every node and the per-step outputs of the nodes in `record`."""
        live = {n: p() for n, p in self.params.items() if callable(p)}
        spikes = {n: 0 for n in self.types}
        rec = {n: [] for n in record}
        total = 0
        for t in range(T):
            out = {}
            for n in self.order:
                ins = [out[a] for a, b in self.edges if b == n]
                a = sum(ins[1:], ins[0]) if ins else None
                typ = self.types[n]
                if typ == "Input":
                    y = (x if analog else x[:, t]).astype(np.float64)
                elif typ in ("ternion.FixedLIF", "ternion.SSA", "ternion.SDSA", "ternion.BSA"):
                    y = live[n].step(a).astype(np.float64)
                elif typ in ("Affine", "Linear"):
                    W, b = self.params[n]
                    y = a @ W.T + b
                elif typ == "Conv2d":
                    y = conv2d(a, self.params[n])
                elif typ == "MaxPool2d":
                    y = maxpool2d(a, self.params[n])
                elif typ == "ternion.Tokens":
                    y = a.reshape(a.shape[0], a.shape[1], -1).transpose(0, 2, 1)
                elif typ == "ternion.TokenMean":
                    y = a.mean(axis=1)
                else:  # Identity, Output
                    y = a
                out[n] = y
                spikes[n] += int(np.count_nonzero(y))
                if n in rec:
                    rec[n].append(y.reshape(y.shape[0], -1))
            outs = [n for n in self.types if self.types[n] == "Output"]
            total = total + out[outs[0]]
        self.live = live
        overflow = {n: int(o.overflow) for n, o in live.items()}
        return (np.argmax(total, axis=1), spikes, overflow,
                {n: np.stack(v, axis=1) for n, v in rec.items()})


# ---------------------------------------------------------------- the bundled models

PROFILES = ("loihi-like", "horowitz45-int8")
# Measured on the 360 digits (float -> integer): BSA 97.78 -> 96.39 % (loihi-like) and 97.22 %
# (horowitz45-int8), SSA 98.33 -> 98.33 % and 98.89 %. The bound leaves the worst loss (1.4
# points) some room and no more.
ACCURACY_BOUND = 0.02


def quantised(model, profile):
    q = path(f"{model}_{profile}.h5")
    if not os.path.exists(q):
        run("quantize", os.path.join(BUNDLED, f"{model}_digits.h5"), "-o", q, "--profile",
            profile, "--membrane-bits", 16)
    return q


def check_bundled(model):
    with h5py.File(DATA, "r") as f:
        data, labels = f["data"][()], f["labels"][()]
    # The analog inputs are exact binary fractions (k/16): integer weights times them are exact
    # in float32, and the FixedLIF floors the sum's fraction.
    assert np.array_equal(data * 16, np.round(data * 16)), "digits are multiples of 1/16"
    flt = run_json("run", os.path.join(BUNDLED, f"{model}_digits.h5"), "--input", DATA)
    T = flt["timesteps"]
    for profile in PROFILES:
        q = quantised(model, profile)
        with h5py.File(q, "r") as f:
            attn = f["node/nodes/b0_attn"]
            assert "datapath" in attn and value(attn, "membrane_bits") == 16, profile
            assert f["node/nodes/b0_attn/q_weight"].dtype == np.int64
            assert np.abs(f["node/nodes/b0_attn/q_weight"][()]).max() <= 127
            assert value(f["node/nodes/conv_lif"], "membrane_bits") == 16
            assert value(f["node/metadata"], "timesteps") == T
        ref = Reference(q)
        pred, spikes, overflow, rec = ref.run(data, T, True, record=("b0_attn",))
        ref_acc = float(np.mean(pred == labels))
        runs = [("event", 1), ("dense", 3), ("event", 3), ("dense", 1)]
        for engine, threads in runs:
            j = run_json("run", q, "--input", DATA, "--engine", engine, "--threads", threads)
            tag = (model, profile, engine, threads)
            got = np.array(j["predictions"])
            assert np.array_equal(got, pred), (tag, np.flatnonzero(got != pred)[:10])
            layers = {l["name"]: l for l in j["layers"]}
            assert set(layers) == set(spikes), (tag, sorted(layers))
            for name, count in spikes.items():
                assert layers[name]["spikes"] == count, (tag, name, layers[name]["spikes"], count)
            for name, count in overflow.items():
                assert layers[name]["ops"]["overflow"] == count, (tag, name, layers[name]["ops"], count)
            assert abs(j["accuracy"] - ref_acc) < 1e-12, (tag, j["accuracy"], ref_acc)
        # The attention node's spikes, step by step, for a few samples (events, ternary values).
        tr = path(f"{model}_{profile}_tr.h5")
        run("run", q, "--input", DATA, "--trace", tr, "--record", "spikes", "--record-nodes",
            "b0_attn", "--record-samples", "0-7", "--engine", "event", "--threads", 3)
        got = trace_spikes(tr, "b0_attn")
        assert np.array_equal(got, rec["b0_attn"][:8]), (model, profile)
        assert np.count_nonzero(got) > 1000
        node = ref.live["b0_attn"]
        fired = sum(spikes[n] for n in spikes if ref.types[n] in ("ternion.FixedLIF", node.kind))
        print(f"  {model} {profile}: float {flt['accuracy'] * 100:.2f} %, integer "
              f"{ref_acc * 100:.2f} %, {fired / len(data):.0f} spikes per inference; attention "
              f"overflows: V register {node.vreg_overflow}, accumulator {node.acc_overflows}, "
              f"membranes {node.overflow - node.vreg_overflow - node.acc_overflows}; FixedLIF "
              f"overflows {sum(overflow[n] for n in overflow if n != 'b0_attn')}")
        assert ref_acc >= flt["accuracy"] - ACCURACY_BOUND, (model, profile, flt["accuracy"], ref_acc)
        assert ref_acc > 0.9, (model, profile, ref_acc)


@test
def bundled_bsa_digits_equal_the_integer_reference():
    check_bundled("bsa")


@test
def bundled_ssa_digits_equal_the_integer_reference():
    check_bundled("ssa")


# ---------------------------------------------------------------- hand-made integer nodes


@test
def analog_fraction_is_dropped_toward_minus_infinity():
    # Analog input (direct encoding, k/16 values of both signs) through integer weights into a
    # FixedLIF that keeps nothing from step to step (du, dv at unity) and fires +1 above 0 and
    # -1 below 0: its output is the sign of floor(sum), -1 for a sum of -0.25 (not 0).
    W = rng.integers(-3, 4, (12, 6)).astype(np.int64)
    (Nir().node("input", "Input", shape=np.array([6]))
     .node("fc", "Linear", weight=W)
     .node("lif", "ternion.FixedLIF", du=np.int64(4095), dv=np.int64(4096), vth=np.int64(0),
           vth_lo=np.int64(0))
     .node("output", "Output", shape=np.array([12]))
     .edge("input", "fc").edge("fc", "lif").edge("lif", "output").write(path("analog.h5")))
    data = (rng.integers(-16, 17, (40, 6)) / 16).astype(np.float32)
    with h5py.File(path("analog_in.h5"), "w") as f:
        f["data"] = data
    _, _, _, rec = Reference(path("analog.h5")).run(data, 2, True, record=("lif",))
    sums = data.astype(np.float64) @ W.T
    assert np.count_nonzero((sums < 0) & (sums > -1)) > 10  # fractions that floor to -1
    assert np.array_equal(rec["lif"][:, 0], np.sign(np.floor(sums)))
    for engine in ("event", "dense"):
        run("run", path("analog.h5"), "--input", path("analog_in.h5"), "--timesteps", 2,
            "--engine", engine, "--trace", path("analog_tr.h5"), "--record", "spikes")
        assert np.array_equal(trace_spikes(path("analog_tr.h5"), "lif"), rec["lif"]), engine



def attention_case(name, typ, N, D_in, D, heads, node, samples=3, T=24, rate=0.5, dp=None):
    """Input [N, D_in] spikes -> one integer attention node -> Output, random integer weights."""
    params = dict(heads=np.int64(heads), **(dp or {}), **node)
    for p in "qkv":
        params[f"{p}_weight"] = rng.integers(-12, 13, (D, D_in)).astype(np.int64)
        params[f"{p}_bias"] = rng.integers(-6, 7, D).astype(np.int64)
    m = path(f"{name}.h5")
    (Nir().node("input", "Input", shape=np.array([N, D_in]))
     .node("attn", typ, **params)
     .node("output", "Output", shape=np.array([N, D]))
     .edge("input", "attn").edge("attn", "output").write(m))
    spikes = (rng.random((samples, T, N, D_in)) < rate).astype(np.int8)
    spikes_file(path(f"{name}_in.h5"), spikes)
    return m, spikes


def check_case(name, m, spikes):
    """Spikes of the node at every step, its spike total and ops.overflow against the reference,
    both engines, 1 and 3 threads. Returns the reference's node (its register counts)."""
    ref = Reference(m)
    _, counts, overflow, rec = ref.run(spikes, spikes.shape[1], False, record=("attn",))
    want = rec["attn"].astype(np.int8)
    assert np.count_nonzero(want) > 50, (name, np.count_nonzero(want))
    for engine in ("event", "dense"):
        for threads in (1, 3):
            tr = path(f"{name}_{engine}{threads}_tr.h5")
            j = run_json("run", m, "--input", path(f"{name}_in.h5"), "--engine", engine,
                         "--threads", threads, "--trace", tr, "--record", "spikes")
            got = trace_spikes(tr, "attn")
            bad = np.argwhere(got != want)
            assert bad.size == 0, (name, engine, threads, bad[:5])
            layer = [l for l in j["layers"] if l["name"] == "attn"][0]
            assert layer["spikes"] == counts["attn"], (name, engine, layer["spikes"], counts["attn"])
            assert layer["ops"]["overflow"] == overflow["attn"], (name, engine, threads,
                                                                 layer["ops"]["overflow"], overflow)
    node = ref.live["attn"]
    print(f"  {name}: {np.count_nonzero(want)} spikes ({np.count_nonzero(want < 0)} negative), "
          f"overflows: V register {node.vreg_overflow}, accumulator {node.acc_overflows}, "
          f"membranes {node.overflow - node.vreg_overflow - node.acc_overflows}"
          + (f"; sums where the shift rounding matters {node.rounding_matters}"
             if node.kind == "ternion.BSA" else ""))
    return node


INT8_LIKE = dict(datapath="loihi", current_bits=np.int64(32), membrane_overflow="saturate",
                 du_offset=np.int64(0), input_shift=np.int64(0), threshold_shift=np.int64(0),
                 compare=">=")


@test
def handmade_integer_bsa():
    # A 7-bit V register fed << 1 (saturates), shifts capped at 3 and rounded toward zero (the
    # sums differ from floor shifts), a 6-bit saturating accumulator, 12-bit membranes without
    # alignment shifts, ">=".
    node = dict(INT8_LIKE, membrane_bits=np.int64(12), value_bits=np.int64(7),
                value_shift=np.int64(1), shift_cap=np.int64(3), shift_rounding="toward_zero",
                acc_bits=np.int64(6), acc_overflow="saturate",
                q_vth=np.int64(8), q_vth_lo=np.int64(-8), q_dv=np.int64(1024),
                k_vth=np.int64(6), k_vth_lo=np.int64(-9), k_dv=np.int64(2048),
                k_bias_mant=np.int64(3), k_bias_exp=np.int64(1),
                out_vth=np.int64(30), out_vth_lo=np.int64(-25), out_dv=np.int64(512))
    m, spikes = attention_case("bsa_hand", "ternion.BSA", 6, 10, 8, 2, node)
    n = check_case("bsa_hand", m, spikes)
    assert n.vreg_overflow > 0 and n.acc_overflows > 0 and n.rounding_matters > 0, n.__dict__
    # Floor shifts, no cap, a wrapping 8-bit accumulator, Loihi's datapath (alignment shifts
    # of 6, ">", 12-bit symmetric saturating membranes), the output's input shifted right.
    node2 = dict(datapath="loihi", membrane_bits=np.int64(12), value_bits=np.int64(12),
                 value_shift=np.int64(3), acc_bits=np.int64(8), acc_overflow="wrap",
                 q_vth=np.int64(6), q_vth_lo=np.int64(-6), q_dv=np.int64(1024),
                 k_vth=np.int64(5), k_vth_lo=np.int64(-7), k_dv=np.int64(2048),
                 out_vth=np.int64(12), out_vth_lo=np.int64(-12), out_dv=np.int64(512),
                 out_input_exp=np.int64(-3))
    m, spikes = attention_case("bsa_hand2", "ternion.BSA", 7, 10, 8, 2, node2)
    n = check_case("bsa_hand2", m, spikes)
    assert n.acc_overflows > 0, n.__dict__


@test
def handmade_integer_ssa():
    # The count (Q K^T) V in a 4-bit saturating accumulator, the attention group's input
    # shifted right by one; 10-bit membranes.
    node = dict(datapath="loihi", membrane_bits=np.int64(10), acc_bits=np.int64(4),
                q_vth=np.int64(2), q_dv=np.int64(2048), k_vth=np.int64(2), k_dv=np.int64(1000),
                v_vth=np.int64(1), v_dv=np.int64(0), v_bias_mant=np.int64(-5), v_bias_exp=np.int64(1),
                attn_vth=np.int64(5), attn_dv=np.int64(2048), attn_input_exp=np.int64(-1))
    m, spikes = attention_case("ssa_hand", "ternion.SSA", 8, 12, 8, 1, node)
    n = check_case("ssa_hand", m, spikes)
    assert n.acc_overflows > 0, n.__dict__


@test
def handmade_integer_sdsa():
    # The column counts in a 3-bit accumulator (saturating for "qk", wrapping for "kv").
    for form in ("qk", "kv"):
        node = dict(datapath="loihi", membrane_bits=np.int64(12), acc_bits=np.int64(3),
                    acc_overflow="wrap" if form == "kv" else "saturate", form=form,
                    q_vth=np.int64(3), q_dv=np.int64(2048), k_vth=np.int64(2), k_dv=np.int64(1024),
                    v_vth=np.int64(3), v_dv=np.int64(3000),
                    attn_vth=np.int64(2), attn_dv=np.int64(2048), attn_input_exp=np.int64(1),
                    attn_bias_mant=np.int64(-1))
        m, spikes = attention_case(f"sdsa_hand_{form}", "ternion.SDSA", 9, 10, 8, 2, node)
        n = check_case(f"sdsa_hand_{form}", m, spikes)
        assert n.acc_overflows > 0, n.__dict__


finish()
