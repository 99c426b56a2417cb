#!/usr/bin/env python3
"""Counting conventions against independent recounts from the peers' documented rules.

Each model is run once with a trace of every spiking layer; the test then recounts what
syops-counter (github.com/iCGY96/syops-counter, syops/ops.py at d6dad5a) and NeuroBench's
SynapticOperations (github.com/NeuroBench/neurobench, metrics/workload/synaptic_operations.py)
would report for the same activity, one module call per sample and step, with numpy, and
compares with `ternion run --count syops|neurobench --json`. The dense engine must report the
same counts as the event engine in every mode.
"""
import h5py
import numpy as np

from harness import finish, path, run_json, test
from nirfile import Nir, spikes_file, trace_spikes

rng = np.random.default_rng(7)
MODES = ("exact", "neurobench", "paper", "syops")


def rel_close(a, b, tol=1e-6):
    return abs(a - b) <= tol * max(1.0, abs(a), abs(b))


def conv2d(x, w, pad):
    """Cross-correlation of x [C, H, W] with w [Co, C, k, k], stride 1, zero padding."""
    C, H, W = x.shape
    k = w.shape[-1]
    xp = np.pad(x, ((0, 0), (pad, pad), (pad, pad)))
    OH, OW = H + 2 * pad - k + 1, W + 2 * pad - k + 1
    y = np.zeros((w.shape[0], OH, OW))
    for ky in range(k):
        for kx in range(k):
            y += np.einsum("chw,oc->ohw", xp[:, ky:ky + OH, kx:kx + OW], w[:, :, ky, kx])
    return y


def syops_spike(x):
    """syops' spike_rate test on one call's input: (passes, rate)."""
    u = np.unique(x)
    if len(u) <= 2 and x.max() <= 1 and x.min() >= 0:
        return True, float(x.mean())
    return False, 1.0


def syops_weight_layer(calls, dense_per_call):
    """Linear/Conv hook: (dense + bias) x rate as AC for spike inputs, else as MAC."""
    ac = mac = 0.0
    for x in calls:
        spike, rate = syops_spike(x)
        if spike:
            ac += dense_per_call * rate
        else:
            mac += dense_per_call
    return ac, mac


def syops_lif(calls):
    """LIFNode / MultiStepLIFNode / IFNode hook: one AC per input element, no MAC."""
    return float(sum(x.size for x in calls)), 0.0


def syops_pool(calls):
    """Pooling hook (max and average): input elements x rate as AC for spike inputs, else MAC."""
    ac = mac = 0.0
    for x in calls:
        spike, rate = syops_spike(x)
        if spike:
            ac += x.size * rate
        else:
            mac += x.size
    return ac, mac


def sj_lif(inputs, tau=2.0, vth=1.0):
    """SpikingJelly LIFNode (decay_input, hard reset to 0, fires on >=) over [T, ...] inputs."""
    v = np.zeros(inputs.shape[1:], np.float32)
    out = np.zeros_like(inputs, dtype=np.float32)
    for t in range(inputs.shape[0]):
        v = (v + (inputs[t] - v) * np.float32(1.0 / tau)).astype(np.float32)
        out[t] = v >= vth
        v[out[t] > 0] = 0
    return out


# conv(2->4, 3x3, pad 1) - LIF - AvgPool 2 - conv(4->4, 3x3, pad 1) - LIF - flatten - fc(64->5) - LIF
C, H, W, T, S = 2, 8, 8, 4, 6


def write_conv_net():
    w1 = rng.normal(0, 0.6, (4, C, 3, 3)).astype(np.float32)
    b1 = rng.normal(0.3, 0.2, 4).astype(np.float32)
    w2 = rng.normal(0, 0.9, (4, 4, 3, 3)).astype(np.float32)
    w2[0, 0] = 0.0  # zero weights: skipped by NeuroBench's effective count, not by syops
    b2 = rng.normal(0.2, 0.2, 4).astype(np.float32)
    wf = rng.normal(0, 0.5, (5, 64)).astype(np.float32)
    bf = rng.normal(1.2, 0.1, 5).astype(np.float32)  # the last layer fires on its bias too
    conv = dict(stride=np.array([1, 1]), padding=np.array([1, 1]), dilation=np.array([1, 1]), groups=1)
    lif = dict(tau=np.float32(2.0), v_threshold=np.float32(1.0))
    (Nir().node("input", "Input", shape=np.array([C, H, W]))
     .node("conv1", "Conv2d", weight=w1, bias=b1, input_shape=np.array([H, W]), **conv)
     .node("lif1", "ternion.SJLIF", **lif)
     .node("pool", "AvgPool2d", kernel_size=np.array([2, 2]), stride=np.array([2, 2]), padding=np.array([0, 0]))
     .node("conv2", "Conv2d", weight=w2, bias=b2, input_shape=np.array([4, 4]), **conv)
     .node("lif2", "ternion.SJLIF", **lif)
     .node("flat", "Flatten", start_dim=0, end_dim=-1, input_type=np.array([4, 4, 4]))
     .node("fc", "Affine", weight=wf, bias=bf).node("lif3", "ternion.SJLIF", **lif)
     .node("output", "Output", shape=np.array([5]))
     .edge("input", "conv1").edge("conv1", "lif1").edge("lif1", "pool").edge("pool", "conv2")
     .edge("conv2", "lif2").edge("lif2", "flat").edge("flat", "fc").edge("fc", "lif3").edge("lif3", "output")
     .write(path("syconv.h5")))
    with h5py.File(path("syconv_in.h5"), "w") as f:
        f["data"] = rng.random((S, C, H, W)).astype(np.float32)
    return w1, b1, w2, b2, wf, bf


def run_conv(mode, engine="event", trace=False):
    args = ["run", path("syconv.h5"), "--input", path("syconv_in.h5"), "--timesteps", T,
            "--count", mode, "--engine", engine]
    if trace:
        args += ["--trace", path("syconv_tr.h5"), "--record", "spikes"]
    return run_json(*args)


@test
def syops_mode_equals_syops_rules_on_a_conv_avgpool_net():
    w1, b1, w2, b2, wf, bf = write_conv_net()
    j = run_conv("syops", trace=True)
    spk = {n: trace_spikes(path("syconv_tr.h5"), n).astype(np.float32) for n in ("lif1", "lif2", "lif3")}
    with h5py.File(path("syconv_in.h5"), "r") as f:
        x = f["data"][()]
    s1 = spk["lif1"].reshape(S, T, 4, H, W)
    s2 = spk["lif2"].reshape(S, T, 4, 4, 4)
    # The membranes' inputs, recomputed: conv1 of the image (every step), conv2 of the pooled
    # spikes; each call's syops test needs the actual values.
    cur1 = [conv2d(x[s], w1, 1) + b1[:, None, None] for s in range(S)]
    pooled = s1.reshape(S, T, 4, 4, 2, 4, 2).mean((4, 6))
    cur2 = [[conv2d(pooled[s, t], w2, 1) + b2[:, None, None] for t in range(T)] for s in range(S)]
    cur3 = [[wf @ s2[s, t].reshape(-1) + bf for t in range(T)] for s in range(S)]
    conv1_per = 3 * 3 * C * 4 * H * W + 4 * H * W        # dense over padding + bias per position
    conv2_per = 3 * 3 * 4 * 4 * 4 * 4 + 4 * 4 * 4
    fc_per = 64 * 5 + 5                                  # numel(input) x out + out (bias once)
    parts = [
        syops_weight_layer([x[s] for s in range(S) for _ in range(T)], conv1_per),
        syops_lif([cur1[s] for s in range(S) for _ in range(T)]),
        syops_pool([s1[s, t] for s in range(S) for t in range(T)]),
        syops_weight_layer([pooled[s, t] for s in range(S) for t in range(T)], conv2_per),
        syops_lif([cur2[s][t] for s in range(S) for t in range(T)]),
        syops_weight_layer([s2[s, t] for s in range(S) for t in range(T)], fc_per),
        syops_lif([cur3[s][t] for s in range(S) for t in range(T)]),
    ]
    ac = sum(p[0] for p in parts) / S
    mac = sum(p[1] for p in parts) / S
    assert rel_close(j["syops"]["ac"], ac), (j["syops"], ac, mac)
    assert rel_close(j["syops"]["mac"], mac), (j["syops"], ac, mac)
    assert rel_close(j["per_inference"]["energy_pj"], 0.9 * ac + 4.6 * mac)
    assert s2.sum() > 0 and spk["lif3"].sum() > 0, "the recount saw no activity"
    assert parts[5][0] > 0


@test
def neurobench_mode_equals_synaptic_operations_on_the_conv_net():
    w1, b1, w2, b2, wf, bf = write_conv_net()
    j = run_conv("neurobench", trace=True)
    s1 = trace_spikes(path("syconv_tr.h5"), "lif1").astype(np.float32).reshape(S, T, 4, H, W)
    s2 = trace_spikes(path("syconv_tr.h5"), "lif2").astype(np.float32).reshape(S, T, 4, 4, 4)
    with h5py.File(path("syconv_in.h5"), "r") as f:
        x = f["data"][()]
    pooled = s1.reshape(S, T, 4, 4, 2, 4, 2).mean((4, 6))
    # Effective ops: binarised input and weights through the layer, bias off, outputs summed.
    # AC when the call's input is all in {-1, 0, 1}, else MAC. Dense: everything set to one.
    eff_ac = eff_mac = 0.0
    for layer, calls, w in (("conv1", [x[s] for s in range(S) for _ in range(T)], w1),
                            ("conv2", [pooled[s, t] for s in range(S) for t in range(T)], w2)):
        for c in calls:
            n = conv2d((c != 0).astype(float), (w != 0).astype(float), 1).sum()
            if np.isin(c, (-1, 0, 1)).all():
                eff_ac += n
            else:
                eff_mac += n
    for s in range(S):
        for t in range(T):
            eff_ac += ((wf != 0).astype(int) @ (s2[s, t].reshape(-1) != 0).astype(int)).sum()
    dense = T * (conv2d(np.ones((C, H, W)), np.ones(w1.shape), 1).sum()
                 + conv2d(np.ones((4, 4, 4)), np.ones(w2.shape), 1).sum() + wf.size)
    nb = j["neurobench"]
    assert rel_close(nb["Dense"], dense), (nb["Dense"], dense)
    assert rel_close(nb["Effective_ACs"], eff_ac / S), (nb, eff_ac / S)
    assert rel_close(nb["Effective_MACs"], eff_mac / S), (nb, eff_mac / S)
    # ActivationSparsity over the three LIF layers; ConnectionSparsity and Footprint from the
    # weights (w2[0, 0] is a zero 3x3 kernel).
    s3 = trace_spikes(path("syconv_tr.h5"), "lif3")
    outputs = S * T * (4 * H * W + 64 + 5)
    assert rel_close(nb["ActivationSparsity"], 1 - (s1.sum() + s2.sum() + s3.sum()) / outputs)
    weights = [w1, w2, wf]
    zeros = sum(int((w == 0).sum()) for w in weights)
    assert zeros == 9
    assert nb["ConnectionSparsity"] == round(zeros / sum(w.size for w in weights), 4)
    assert nb["Footprint"] == 4 * (sum(w.size for w in weights) + 4 + 4 + 5)


@test
def counts_and_energy_do_not_depend_on_the_engine():
    write_conv_net()
    for mode in MODES:
        a, d = run_conv(mode, "event"), run_conv(mode, "dense")
        for la, ld in zip(a["layers"], d["layers"]):
            assert la["ops"] == ld["ops"], (mode, la["name"], la["ops"], ld["ops"])
        assert a["per_inference"]["energy_pj"] == d["per_inference"]["energy_pj"], mode
        for key in ("neurobench", "syops", "paper"):
            assert a.get(key) == d.get(key), (mode, key)


@test
def syops_mode_on_an_ssa_block_follows_its_module_rules():
    """One Spikformer SSA: Q/K/V Linear(+bias) + BatchNorm + LIF, attention LIF; matmuls free."""
    N, D, H, Tb, Sb = 8, 16, 2, 4, 5
    p = {}
    for q in "qkv":
        p[f"{q}_weight"] = rng.normal(0, 0.4, (D, D)).astype(np.float32)
        p[f"{q}_bias"] = rng.normal(0, 0.1, D).astype(np.float32)
        p[f"{q}_bn_weight"] = np.ones(D, np.float32)
        p[f"{q}_bn_bias"] = np.full(D, 0.5, np.float32)
        p[f"{q}_bn_running_mean"] = np.zeros(D, np.float32)
        p[f"{q}_bn_running_var"] = np.ones(D, np.float32)
    (Nir().node("input", "Input", shape=np.array([N, D]))
     .node("attn", "ternion.SSA", heads=H, **p)
     .node("output", "Output", shape=np.array([N, D]))
     .edge("input", "attn").edge("attn", "output").write(path("ssa.h5")))
    xs = (rng.random((Sb, Tb, N, D)) < 0.3).astype(np.float32)
    xs[0, 0] = 0  # an all-zero call passes the spike test with rate 0
    spikes_file(path("ssa_in.h5"), xs)
    j = run_json("run", path("ssa.h5"), "--input", path("ssa_in.h5"), "--count", "syops")
    lin_per = 3 * (N * D * D + D)
    ac = syops_weight_layer([xs[s, t] for s in range(Sb) for t in range(Tb)], lin_per)[0]
    calls = Sb * Tb
    bn_mac = calls * 3 * 2 * N * D      # affine BatchNorm on analog input: 2 MACs per element
    lif = calls * 4 * N * D             # Q, K, V and attention LIFs: an AC per element
    assert rel_close(j["syops"]["ac"], (ac + lif) / Sb), (j["syops"], (ac + lif) / Sb)
    assert rel_close(j["syops"]["mac"], bn_mac / Sb), (j["syops"], bn_mac / Sb)


@test
def every_spiking_attention_is_priced_from_its_typed_counters_in_every_mode():
    """SSA, SDSA and BSA alone: each mode finds the counters it needs and says how it counted."""
    N, D, H, Tb, Sb = 8, 16, 2, 3, 4
    xs = (rng.random((Sb, Tb, N, D)) < 0.3).astype(np.float32)
    spikes_file(path("att_in.h5"), xs)
    emitted = 0
    for kind in ("SSA", "SDSA", "BSA"):
        p = {f"{q}_weight": rng.normal(0, 0.5, (D, D)).astype(np.float32) for q in "qkv"}
        p["q_weight"][:, 3] = 0.0  # a dead input column: its spikes reach only K and V
        (Nir().node("input", "Input", shape=np.array([N, D]))
         .node("attn", f"ternion.{kind}", heads=H, **p)
         .node("output", "Output", shape=np.array([N, D]))
         .edge("input", "attn").edge("attn", "output").write(path(f"att_{kind}.h5")))
        # Projection synaptic events: each input spike reaches the non-zero weights of its
        # column in Q, K and V.
        fan = sum((p[f"{q}_weight"] != 0).sum(0) for q in "qkv")
        pairs = float((xs * fan).sum())
        runs = {m: run_json("run", path(f"att_{kind}.h5"), "--input", path("att_in.h5"), "--count", m)
                for m in MODES}
        layer = {m: next(l for l in runs[m]["layers"] if l["name"] == "attn") for m in MODES}
        att = layer["exact"]["attention"]
        assert att["proj_ac"] == pairs, (kind, att, pairs)
        assert att["q_spikes"] > 0 and att["k_spikes"] > 0, (kind, att)
        stages = att["proj_ac"] + att["score_ac"] + att["norm_ac"] + att["mix_ac"]
        assert stages == layer["exact"]["ops"]["ac"], (kind, att, layer["exact"]["ops"])
        nb = runs["neurobench"]["neurobench"]
        assert rel_close(nb["Effective_ACs"] * Sb, pairs), (kind, nb, pairs)
        assert rel_close(nb["attention_matmul"]["ac"] * Sb, stages - pairs), (kind, nb)
        paper = layer["paper"]
        assert "fallback" not in paper["count_basis"] and "proj_macs" in paper["count_basis"], paper
        fr_in = xs.sum() / xs.size
        assert paper["sop"] >= fr_in * Tb * 3 * N * D * D * (1 - 1e-9), (kind, paper["sop"])
        assert not any("structure" in n for n in runs["paper"]["energy_notes"]), runs["paper"]["energy_notes"]
        assert runs["syops"]["syops"]["ac"] > 0, kind
        for m in MODES:
            assert runs[m]["per_inference"]["energy_pj"] > 0, (kind, m)
        ops = layer["exact"]["ops"]
        assert ops["spike_write_bytes"] == 4 * ops["spikes_out"], (kind, ops)
        emitted += ops["spikes_out"]
    assert emitted > 0  # the spike-write check saw output spikes


@test
def residual_joins_are_counted_and_an_input_of_two_is_one_neurobench_op():
    """A SEW-style join (x + x) feeding a Linear: the join adds one AC per arriving event; the
    Linear costs |2| ACs per pair in exact mode, one Effective MAC per pair in NeuroBench's."""
    n_in, n_out, Tj, Sj = 10, 4, 5, 3
    w = rng.normal(0, 1, (n_out, n_in)).astype(np.float32)
    w[:, 0] = 0.0
    (Nir().node("input", "Input", shape=np.array([n_in]))
     .node("a", "ternion.Identity").node("b", "ternion.Identity").node("join", "ternion.Identity")
     .node("fc", "Linear", weight=w).node("output", "Output", shape=np.array([n_out]))
     .edge("input", "a").edge("input", "b").edge("a", "join").edge("b", "join")
     .edge("join", "fc").edge("fc", "output").write(path("join.h5")))
    xs = (rng.random((Sj, Tj, n_in)) < 0.4).astype(np.float32)
    xs[0, 0] = 0  # a silent step: ternary, no pairs
    spikes_file(path("join_in.h5"), xs)
    pairs = float((xs * (w != 0).sum(0)).sum())
    for engine in ("event", "dense"):
        j = run_json("run", path("join.h5"), "--input", path("join_in.h5"), "--count", "neurobench",
                     "--engine", engine)
        layers = {l["name"]: l for l in j["layers"]}
        assert layers["join"]["ops"]["ac"] == 2 * xs.sum(), layers["join"]["ops"]
        assert layers["a"]["ops"].get("ac", 0) == 0
        assert layers["fc"]["ops"]["ac"] == 2 * pairs and layers["fc"]["ops"].get("mac", 0) == 0
        nb = j["neurobench"]
        assert rel_close(nb["Effective_MACs"] * Sj, pairs), (nb, pairs)
        assert nb["Effective_ACs"] == 0, nb


@test
def neurobench_membrane_updates_closed_form():
    """NeuroBench's MembraneUpdates (metrics/workload/membrane_updates.py): every membrane at
    the first step, then the membranes that differ from the previous step's. Six LIF neurons
    (v = 0.5 v + I, spike above 1, reset to 0) fed one input spike every step: two get nothing
    (v stays 0: one update), two get 2 (fire every step, so v is 0 after every step: one
    update), two get 0.5 (v = 0.5, 0.75, ...: an update every step)."""
    n, T, S, dt = 6, 5, 3, 1e-3
    tau = np.full(n, 2 * dt, np.float32)
    (Nir().node("input", "Input", shape=np.array([1]))
     .node("fc", "Linear", weight=np.array([[0], [0], [2], [2], [0.5], [0.5]], np.float32))
     .node("lif", "LIF", tau=tau, r=(tau / dt).astype(np.float32), v_leak=np.zeros(n, np.float32),
           v_threshold=np.ones(n, np.float32), v_reset=np.zeros(n, np.float32))
     .node("output", "Output", shape=np.array([n]))
     .edge("input", "fc").edge("fc", "lif").edge("lif", "output").write(path("mu.h5")))
    spikes_file(path("mu_in.h5"), np.ones((S, T, 1)))
    j = run_json("run", path("mu.h5"), "--input", path("mu_in.h5"), "--dt", "0.001",
                 "--count", "neurobench")
    assert j["neurobench"]["MembraneUpdates"] == 2 * 1 + 2 * 1 + 2 * T, j["neurobench"]
    # Other conventions do not tally membranes.
    assert run_json("run", path("mu.h5"), "--input", path("mu_in.h5"), "--dt", "0.001")\
        .get("neurobench") is None


@test
def neurobench_mode_on_the_bundled_transformers_follows_its_rules():
    """The bundled BSA and SSA digits models (ternion.tools.check_neurobench compares them with
    NeuroBench itself) recounted from a spike trace by NeuroBench's rules: one call per layer,
    sample and step; Effective ops = (non-zero input, non-zero weight) pairs, ACs when the call's
    input is all in {-1, 0, 1}, else MACs; Dense = every pair with inputs and weights set to
    one, convolution padding excluded. The connection layers are the convolution, the attention
    node's Q, K and V Linears (the attention matmuls are not modules), proj, fc1, fc2 and head."""
    import os
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "models",
                        "bundled")
    Sb = 12
    with h5py.File(os.path.join(root, "digits_test.h5"), "r") as f:
        x, y = f["data"][:Sb], f["labels"][:Sb]
    with h5py.File(path("tf_in.h5"), "w") as f:
        f["data"], f["labels"] = x, y
    for kind in ("bsa", "ssa"):
        model = os.path.join(root, f"{kind}_digits.h5")
        with h5py.File(model, "r") as f:
            nodes = f["node/nodes"]
            Tb = int(f["node/metadata/timesteps"][()])
            W = {k: (nodes[k][()] != 0).astype(np.int64) for k in (
                "conv/weight", "b0_attn/q_weight", "b0_attn/k_weight", "b0_attn/v_weight",
                "b0_proj/weight", "b0_fc1/weight", "b0_fc2/weight", "head/weight")}
        j = run_json("run", model, "--input", path("tf_in.h5"), "--count", "neurobench",
                     "--trace", path("tf_tr.h5"), "--record", "spikes")
        tr = {n: trace_spikes(path("tf_tr.h5"), n).astype(np.float64)
              for n in ("conv_lif", "b0_attn", "b0_proj_lif", "b0_fc1_lif", "b0_fc2_lif")}
        D = W["b0_proj/weight"].shape[0]

        def call(inp, w):  # one Linear call on inp [N, in]: (pairs, ternary input)
            return float(((inp != 0).astype(np.int64) @ w.T).sum()), np.isin(inp, (-1, 0, 1)).all()

        per = {}
        for s in range(Sb):
            for t in range(Tb):
                img = x[s]
                n = conv2d((img != 0).astype(float), W["conv/weight"].astype(float), 1).sum()
                ternary = np.isin(img, (-1, 0, 1)).all()
                calls = [("conv", n, ternary)]
                c = tr["conv_lif"][s, t].reshape(D, 8, 8)
                tok = c.reshape(D, 4, 2, 4, 2).max((2, 4)).reshape(D, 16).T  # [N, D]
                for q in ("q", "k", "v"):
                    calls.append(("qkv", *call(tok, W[f"b0_attn/{q}_weight"])))
                calls.append(("proj", *call(tr["b0_attn"][s, t].reshape(16, D),
                                            W["b0_proj/weight"])))
                res1 = tok + tr["b0_proj_lif"][s, t].reshape(16, D)
                calls.append(("fc1", *call(res1, W["b0_fc1/weight"])))
                calls.append(("fc2", *call(tr["b0_fc1_lif"][s, t].reshape(16, -1),
                                           W["b0_fc2/weight"])))
                res2 = res1 + tr["b0_fc2_lif"][s, t].reshape(16, D)
                calls.append(("head", *call(res2.mean(0)[None], W["head/weight"])))
                for name, n, ternary in calls:
                    a, m = per.setdefault(name, [0.0, 0.0])
                    per[name] = [a + n, m] if ternary else [a, m + n]
        ac = sum(v[0] for v in per.values()) / Sb
        mac = sum(v[1] for v in per.values()) / Sb
        N, hid = 16, W["b0_fc1/weight"].shape[0]
        dense = Tb * (conv2d(np.ones((1, 8, 8)), np.ones(W["conv/weight"].shape), 1).sum()
                      + 4 * N * D * D + 2 * N * D * hid + D * W["head/weight"].shape[0])
        nb = j["neurobench"]
        assert nb["Dense"] == dense, (kind, nb["Dense"], dense)
        assert rel_close(nb["Effective_ACs"], ac), (kind, nb, ac, per)
        assert rel_close(nb["Effective_MACs"], mac), (kind, nb, mac, per)
        assert per["fc1"][1] > 0 and per["qkv"][0] > 0 and per["conv"][1] > 0  # both kinds seen
        layers = {l["name"]: l for l in j["layers"]}
        for name, lname in (("conv", "conv"), ("proj", "b0_proj"), ("fc1", "b0_fc1"),
                            ("fc2", "b0_fc2"), ("head", "head")):
            got = layers[lname]["counted_ops"]
            assert rel_close(got.get("ac", 0.0), per[name][0] / Sb), (kind, name, got, per[name])
            assert rel_close(got.get("mac", 0.0), per[name][1] / Sb), (kind, name, got, per[name])


finish()
