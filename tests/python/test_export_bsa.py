"""BSA as a drop-in for the attention of each backbone (ternion.reference.bsa.swap_attention):
the swapped model exported with attention="bsa" and run by ternion gives PyTorch's BSA outputs
spike for spike, the same spike totals in every other neuron layer and the same predictions; each
BSA node's counters and its counts in all four conventions equal a recount written here from the
documented rules (docs/cost-model.md §2, docs/transformer-format.md §3.3).

The backbones are the stand-ins of the other exporter tests (written from the official model
code's equations); weights random, BatchNorm statistics calibrated on data."""
import numpy as np
import pytest
import torch

import helpers as H
import qkformer_standins as qk
import sdt_standins as sdt
import sj_standins as sj
import spikingformer_standins as sf
import ternion
from ternion.exporter import ExportError
from ternion.reference import bsa

torch.set_num_threads(1)

BACKBONES = {
    "spikformer": lambda: sj.Spikformer(embed_dims=32, num_heads=2, depths=2, T=4),
    "spikingformer": lambda: sf.vit_snn(embed_dims=32, num_heads=2, depths=2, T=4),
    "qkformer": lambda: qk.spiking_transformer(embed_dims=32, num_heads=2, depths=2, T=3,
                                               stages=2),
    "sdt": lambda: sdt.SpikeDrivenTransformer(embed_dims=32, num_heads=4, depths=2, T=4),
}
PROJ_IN = {"spikformer": "q_linear", "spikingformer": "q_conv", "qkformer": "q_conv",
           "sdt": "q_conv"}


def build(backbone, seed=3, samples=6):
    gen = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    net = BACKBONES[backbone]()
    swapped = bsa.swap_attention(net)
    H.randomize_bn(net, gen)
    with torch.no_grad():  # centred residual branches and head: the classes follow the features
        for name, m in net.named_modules():
            if name.rpartition(".")[2] in ("rpe_bn", "proj_bn", "fc2_bn"):
                m.bias.copy_(0.6 * torch.rand(m.bias.shape, generator=gen) - 0.3)
        net.head.bias.zero_()
    img = lambda b: torch.rand(b, 3, 16, 16, generator=gen)  # noqa: E731
    H.calibrate(net, [img(16) for _ in range(3)])  # the differentiable (training) form
    bsa.set_exact(net)
    return net, swapped, img(samples)


def capture(net, x):
    """PyTorch forward with every neuron recorded: SpikingJelly-like LIFs ({path: [B, T, n]}),
    and per BSA module its projections' input [B, T, n_in], Q, K and output [B, T, N, D]."""
    taps, hooks = {}, []

    def tap(key, take):
        def hook(mod, inp, out):
            taps[key] = take(inp, out).detach()
        return hook

    for path, m in net.named_modules():
        if isinstance(m, bsa.BipolarSelfAttention):
            hooks += [getattr(m, f"{nm}_tsn").register_forward_hook(
                tap((path, nm), lambda i, o: o)) for nm in ("q", "k", "attn")]
            hooks.append(getattr(m, PROJ_IN[m.backbone]).register_forward_hook(
                tap((path, "in"), lambda i, o: i[0])))
    out, rec = H.torch_spikes(net, x)
    for h in hooks:
        h.remove()
    B = x.shape[0]
    att = {}
    for (path, what), t in taps.items():
        if what == "in":  # the projection reads T*B frames
            t = t.reshape(-1, B, *t.shape[1:]).transpose(0, 1).reshape(B, t.shape[0] // B, -1)
        else:  # the TSNs see [T, B, N, D]
            t = t.transpose(0, 1)
        att.setdefault(path, {})[what] = t.numpy()
    return out, rec, att


def recount(a, heads):
    """The BSA node's counters from its captured tensors (docs/cost-model.md, exact mode)."""
    X, Q, K, O = a["in"], a["q"], a["k"], a["attn"]
    S, T, N, D = Q.shape
    dh = D // heads
    assert np.all(X == np.round(X)) and np.abs(X).max() <= 16  # spikes or small integer sums
    nq = (Q != 0).sum(axis=2)  # [S, T, D]: non-zero Q per channel over the tokens
    nk = (K != 0).sum(axis=2)
    hs = S * T * heads
    return dict(proj_ac=int(np.abs(X).sum()) * 3 * D, proj_mac=0,
                score_ac=int((nq * nk).sum()), norm_ac=2 * N * N * hs, norm_shift=N * N * hs,
                norm_cmp=N * N * hs, mix_ac=N * N * dh * hs, mix_shift=N * N * dh * hs,
                q_spikes=int((Q != 0).sum()), k_spikes=int((K != 0).sum()), v_spikes=0,
                q_neg_spikes=int((Q < 0).sum()), k_neg_spikes=int((K < 0).sum()),
                out_neg_spikes=int((O < 0).sum()))


def syops_ac_mac(X, N, D, bias, bn):
    """syops-counter's rule for the node (docs/cost-model.md §2.4), per inference: the Q/K/V
    linears (3 N D_in D ops + out_features per call, when biased) times the input's rate when the call's input is
    spikes (at most two distinct values, all in [0, 1]), else as MACs; one AC per neuron element
    (Q, K and output TSNs: 3 N D per call); the unfolded BatchNorms 2 MACs per element."""
    S, T, n_in = X.shape
    per = 3 * n_in * D + bias
    ac = mac = 0.0
    for s in range(S):
        for t in range(T):
            v = np.unique(X[s, t])
            if len(v) <= 2 and v.min() >= 0 and v.max() <= 1:
                ac += per * X[s, t].mean()
            else:
                mac += per
    return ac / S + 3 * N * D * T, mac / S + bn * T


def check_counts(js_by_mode, layer, a, heads, bias):
    S, T, N, D = a["q"].shape
    want = recount(a, heads)
    exact = js_by_mode["exact"][layer]
    assert exact["attention"] == {**exact["attention"], **want}
    ac = want["proj_ac"] + want["score_ac"] + want["norm_ac"] + want["mix_ac"]
    assert exact["ops"]["ac"] == ac and exact["ops"]["mac"] == 0
    assert exact["ops"]["shift"] == want["norm_shift"] + want["mix_shift"]
    # paper: fr_in T (3 N D_in D) + T H N^2 (D/H) fr_Q fr_K + the Shiftmax and Shiftmax.V adds
    X = a["in"]
    fr_in = (X != 0).sum() / X.size
    fq, fk = want["q_spikes"] / (S * T * N * D), want["k_spikes"] / (S * T * N * D)
    paper = fr_in * T * 3 * X.shape[2] * D + T * heads * N * N * (D // heads) * fq * fk + \
        (want["norm_ac"] + want["mix_ac"]) / S
    assert js_by_mode["paper"][layer]["counted_ops"]["ac"] == pytest.approx(paper, rel=1e-9)
    sac, smac = syops_ac_mac(X, N, D, bias, 2 * 3 * N * D)
    got = js_by_mode["syops"][layer]["counted_ops"]
    assert got["ac"] == pytest.approx(sac, rel=1e-9)
    assert got.get("mac", 0) == pytest.approx(smac, rel=1e-9)
    # neurobench: the node's products all priced, on the attention matmul line
    nb = js_by_mode["neurobench"][layer]
    assert nb["attention_matmul"] and nb["counted_ops"]["ac"] == pytest.approx(ac / S, rel=1e-12)


def token_major(a):
    """[B, T, N, D] -> ternion's [B, T, N*D] token-major spikes."""
    return a.reshape(a.shape[0], a.shape[1], -1).astype(np.int8)


@pytest.mark.parametrize("backbone", list(BACKBONES))
def test_bsa_drop_in_spike_for_spike_and_counted(tmp_path, ternion_bin, backbone):
    net, swapped, x = build(backbone)
    assert swapped and all(isinstance(net.get_submodule(p), bsa.BipolarSelfAttention)
                           for p in swapped)
    out, rec, att = capture(net, x)
    model = tmp_path / "m.h5"
    rep = ternion.export(net, x, model, fold_bn=False, attention="bsa")
    types = [t for t, _ in rep.nodes.values()]
    assert types.count("ternion.BSA") == len(swapped)
    assert "ternion.SSA" not in types and "ternion.SDSA" not in types
    inp = tmp_path / "in.h5"
    H.write_input(inp, data=x.numpy())
    js, tern = H.run_ternion(ternion_bin, model, inp, tmp_path / "trace.h5")
    assert js["predictions"] == out.argmax(1).tolist()
    node_of = {origin: name for name, (_, origin) in rep.nodes.items()}
    fired = 0
    for path, s in rec.items():  # every LIF: the same spikes in total (layouts differ)
        if path not in node_of:  # inside QKFormer's Q-K token attention, which stays
            assert type(net.get_submodule(path.rpartition(".")[0])).__name__ == \
                "Token_QK_Attention", path
            continue
        assert int(tern[node_of[path]].sum()) == int(s.sum()), path
        fired += int(s.sum())
    assert fired > 1000
    js_by_mode = {}
    for mode in ("exact", "paper", "syops", "neurobench"):
        j = js if mode == "exact" else H.run_ternion(
            ternion_bin, model, inp, tmp_path / f"{mode}.h5", "--count", mode)[0]
        js_by_mode[mode] = {L["name"]: L for L in j["layers"]}
    for path in swapped:
        a, node = att[path], node_of[path]
        got = tern[node]  # the BSA output, spike for spike (both polarities)
        assert np.array_equal(got, token_major(a["attn"])), path
        assert (a["attn"] < 0).any() and (a["attn"] > 0).any() and (a["q"] < 0).any()
        m = net.get_submodule(path)
        has_bias = getattr(m, PROJ_IN[backbone]).bias is not None
        D = a["q"].shape[3]
        check_counts(js_by_mode, node, a, m.num_heads, 3 * D * has_bias)  # out_features a call


def test_bsa_training_form_matches_the_exact_one_and_has_gradients():
    """exact=False (torch's matmul, float Shiftmax) is the training form: on random projections
    it gives the exact form's spikes, and gradients reach all three projections."""
    m = bsa.BipolarSelfAttention.from_attention(sj.SSA(16, 2), "spikformer")
    gen = torch.Generator().manual_seed(1)
    p = [(2 * torch.randn(3, 2, 9, 16, generator=gen)).requires_grad_() for _ in range(3)]
    fast = m.attention(*p)
    fast.sum().backward()
    assert all(t.grad is not None and t.grad.abs().sum() > 0 for t in p)
    m.exact = True
    with torch.no_grad():
        exact = m.attention(*p)
    assert torch.equal(fast.detach(), exact) and (exact < 0).any() and (exact > 0).any()


def test_bsa_tsn_and_shiftmax_follow_their_equations():
    tsn = bsa.TSN(v_threshold=1.0, decay=0.5)
    x = torch.tensor([[0.6], [0.8], [-1.5], [-0.4], [0.3]])
    # u: 0.6, 0.3+0.8=1.1 (fire +1, reset), -1.5 (fire -1), -0.4, -0.2+0.3=0.1
    assert tsn(x).flatten().tolist() == [0.0, 1.0, -1.0, 0.0, 0.0]
    m = bsa.BipolarSelfAttention.from_attention(
        sj.SSA(4, 1), "spikformer", exact=True)
    q = torch.tensor([[[[1.0, 0, 0, 0], [0, 0, 0, 0]]]])  # [T=1, B=1, N=2, D=4]
    k = torch.tensor([[[[1.0, 0, 0, 0], [-1.0, 0, 0, 0]]]])
    v = torch.tensor([[[[4.0, 0, 0, 0], [8.0, 0, 0, 0]]]])
    y = m.attention(q * 2, k * 2, v)  # TSN fires at 2 >= 1: Q, K as written
    # row 0: scores (1, -1), gamma = ceil(log2(2 + 0.5)) = 2 -> weights 2^-1, 2^-3: 2 + 1 = 3
    # row 1: scores (0, 0), gamma = 1 -> 1/2 each: 2 + 4 = 6; both fire +1 (>= 0.5)
    assert m.last_scores.flatten().tolist() == [1.0, -1.0, 0.0, 0.0]
    assert y[..., 0].flatten().tolist() == [1.0, 1.0]


def test_bsa_export_refusals_name_the_module(tmp_path):
    net = sf.vit_snn(embed_dims=32, num_heads=2, depths=1, T=2)
    x = torch.rand(2, 3, 16, 16)
    with pytest.raises(ExportError, match=r"block\.0\.attn is a SSA attention"):
        ternion.export(net, x, tmp_path / "m.h5", attention="bsa")
    with pytest.raises(ExportError, match="attention must be None or 'bsa'"):
        ternion.export(net, x, tmp_path / "m.h5", attention="ssa")
    bsa.swap_attention(net)
    net.block[0].attn.k_tsn.v_threshold = 0.5
    with pytest.raises(ExportError, match=r"block\.0\.attn.*q_tsn .* and k_tsn .* differ"):
        ternion.export(net, x, tmp_path / "m.h5")
    net.block[0].attn.backbone = "sdt"
    with pytest.raises(ExportError, match="built for 'sdt' but sits in a spikingformer model"):
        ternion.export(net, x, tmp_path / "m.h5")
    assert not (tmp_path / "m.h5").exists()
    with pytest.raises(ValueError, match="no spikformer self-attention"):
        bsa.swap_attention(net, backbone="spikformer")
    with pytest.raises(ValueError, match="not a Spikformer, Spikingformer"):
        bsa.swap_attention(torch.nn.Linear(2, 2))
