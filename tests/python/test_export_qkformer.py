"""ternion.export of QKFormer against PyTorch: every neuron layer spike for spike, the attentions'
Q/K(/V) and mask neurons, and the predictions.

Fixtures are small modules written here (qkformer_standins.py) with the official code's
structure and order of operations, seeded random weights and BatchNorm statistics calibrated on
data."""
import h5py
import numpy as np
import pytest
import torch

import helpers as H
import qkformer_standins as qk
import ternion

torch.set_num_threads(1)

INNER = ("q_lif", "k_lif", "v_lif", "attn_lif")


def build(seed, image=16, **cfg):
    gen = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    net = qk.spiking_transformer(**cfg)
    H.randomize_bn(net, gen)
    with torch.no_grad():  # the class then follows the features, not the random bias
        net.head.bias.zero_()
    img = lambda b: torch.rand(b, cfg.get("in_channels", 3), image, image, generator=gen)  # noqa
    H.calibrate(net, [img(16) for _ in range(3)])
    return net, img(12)


def token_major(s, tokens):
    """[B, T, C*N] spikes in PyTorch's channel-major order -> ternion's tokens [B, T, N*C]."""
    B, T, n = s.shape
    return np.ascontiguousarray(s.reshape(B, T, n // tokens, tokens).transpose(0, 1, 3, 2)
                                ).reshape(B, T, n)


def stage_tokens(net, rec, path):
    """The number of tokens of a stage's blocks: its patch embedding's H*W."""
    i = path.split(".")[0][len("stage"):]
    s = rec[f"patch_embed{i}.proj_res_lif"]
    return s.shape[2] // getattr(net, f"patch_embed{i}").proj_res_conv.out_channels


def expected(net, rec):
    """PyTorch's spikes per ternion node: the blocks' neurons in token order; each
    Spiking_Self_Attention's attn_lif is ternion.SSA's output; each Token_QK_Attention's output
    mask * K, which ternion.QKAttention emits, is built from k_lif and attn_lif."""
    want, inner = {}, {}
    for path, s in rec.items():
        head, _, leaf = path.rpartition(".")
        if not path.startswith("stage"):
            want[path] = s
            continue
        tokens = stage_tokens(net, rec, path)
        if head.endswith(".ssa") and leaf == "attn_lif":
            want[head] = token_major(s, tokens)
            inner[path] = s
        elif leaf in INNER:
            inner[path] = s
        else:
            want[path] = token_major(s, tokens)
    for path in [p for p in inner if p.endswith(".tssa.k_lif")]:
        a = path.rpartition(".")[0]
        k, m = inner[path], inner[f"{a}.attn_lif"]
        B, T, n = k.shape
        heads = net.get_submodule(a).num_heads
        tokens = m.shape[2] // heads
        out = k.reshape(B, T, heads, n // (heads * tokens), tokens) * \
            m.reshape(B, T, heads, 1, tokens)
        want[a] = token_major(out.reshape(B, T, n), tokens)
    return want, inner


def qk_case(tmp_path, ternion_bin, seed, fold_bn=True, image=16, **cfg):
    net, x = build(seed, image=image, **cfg)
    out, rec = H.torch_spikes(net, x)
    model = tmp_path / "qkformer.h5"
    rep = ternion.export(net, x, model, fold_bn=fold_bn)
    assert not rep.time_first and rep.timesteps == cfg["T"] and rep.encoding == "direct"
    inp = tmp_path / "in.h5"
    H.write_input(inp, data=x.numpy())
    js, tern = H.run_ternion(ternion_bin, model, inp, tmp_path / "trace.h5")
    nodes = {origin: name for name, (_, origin) in rep.nodes.items()}
    want, inner = expected(net, rec)
    return net, out, rep, js, tern, nodes, want, inner


def check_inner(js, nodes, inner):
    """Q, K, V and mask spikes inside each attention node: totals from the JSON report."""
    layers = {L["name"]: L for L in js["layers"]}
    for path, s in inner.items():
        head, _, leaf = path.rpartition(".")
        att = layers[nodes[head]]["attention"]
        if leaf == "attn_lif":
            if not head.endswith(".tssa"):
                continue  # SSA's attn_lif is the node's output, compared element by element
            key = "mask_channels"  # QKAttention: the mask neurons that fired
        else:
            key = f"{leaf[0]}_spikes"
        assert att[key] == int(s.sum()), f"{path}: ternion {att[key]}, torch {int(s.sum())}"
        assert s.any(), f"{path} never fires"


CASES = [
    dict(seed=2, embed_dims=32, num_heads=2, depths=1, T=4, mlp_ratios=4, stages=3),
    dict(seed=5, embed_dims=32, num_heads=2, depths=2, T=3, mlp_ratios=2, stages=2,
         in_channels=2, num_classes=4),
]


@pytest.mark.parametrize("cfg", CASES, ids=["3stages", "2stages_2blocks"])
@pytest.mark.parametrize("fold_bn", [True, False], ids=["folded", "unfolded"])
def test_qkformer_spike_for_spike(tmp_path, ternion_bin, cfg, fold_bn):
    net, out, rep, js, tern, nodes, want, inner = qk_case(tmp_path, ternion_bin,
                                                          fold_bn=fold_bn, **cfg)
    types = [t for t, _ in rep.nodes.values()]
    stages = cfg["stages"]
    assert types.count("ternion.QKAttention") == stages - 1
    assert types.count("ternion.SSA") == cfg["depths"]
    with h5py.File(rep.path, "r") as f:
        for name, (t, _) in rep.nodes.items():
            if t in ("ternion.QKAttention", "ternion.SSA"):
                g = f[f"node/nodes/{name}"]
                assert g["attn_v_threshold"][()] == 0.5 and ("q_bn_form" in g) == (not fold_bn)
                assert g["form" if t == "ternion.QKAttention" else "association"][()].decode() \
                    == ("token" if t == "ternion.QKAttention" else "kv")
    assert ("ternion.BatchNorm" in types) == (not fold_bn)
    check_inner(js, nodes, inner)
    # every neuron outside the attentions' insides (3 per patch embedding; proj_lif, mlp1_lif
    # and mlp2_lif per block), plus each attention's output
    blocks = stages - 1 + cfg["depths"]
    assert len(want) == 3 * stages + 4 * blocks
    n = H.compare_spikes(want, tern, nodes)
    assert n > 1000
    for path, s in want.items():
        assert s.any() and s.mean() < 0.9, f"{path} firing rate {s.mean()}"
    assert js["predictions"] == out.argmax(1).tolist()


def test_qkformer_channel_form_is_not_the_official_code(tmp_path, ternion_bin):
    """The same file with QKAttention's channel form no longer matches: the comparison above is
    sensitive to the attention's mapping."""
    net, x = build(2, embed_dims=32, num_heads=2, depths=1, T=4, stages=2)
    _, rec = H.torch_spikes(net, x)
    model = tmp_path / "qk.h5"
    rep = ternion.export(net, x, model)
    with h5py.File(model, "r+") as f:
        for g in f["node/nodes"].values():
            if g["type"][()].decode() == "ternion.QKAttention":
                del g["form"]
                g.create_dataset("form", data="channel", dtype=h5py.string_dtype("utf-8"))
    inp = tmp_path / "in.h5"
    H.write_input(inp, data=x.numpy())
    _, tern = H.run_ternion(ternion_bin, model, inp, tmp_path / "trace.h5")
    nodes = {origin: name for name, (_, origin) in rep.nodes.items()}
    want, _ = expected(net, rec)
    assert not np.array_equal(tern[nodes["stage1.0.tssa"]], want["stage1.0.tssa"])


def test_qkformer_refusals_name_the_module(tmp_path):
    net, x = build(1, embed_dims=32, num_heads=2, depths=1, T=2, stages=2)
    net.stage1[0].tssa.k_lif = qk.MultiStepLIFNode(tau=3.0)
    with pytest.raises(ternion.ExportError) as e:
        ternion.export(net, x, tmp_path / "a.h5")
    assert "stage1.0.tssa" in str(e.value) and "differ" in str(e.value)
    net.stage1[0].tssa.k_lif = qk.lif()
    net.stage1[0].mlp.mlp1_conv = torch.nn.Conv2d(16, 64, 3, padding=1)
    with pytest.raises(ternion.ExportError) as e:
        ternion.export(net, x, tmp_path / "b.h5")
    assert "stage1.0.mlp.mlp1_conv" in str(e.value) and "1x1" in str(e.value)
    net.stage1[0].mlp.mlp1_conv = torch.nn.Conv2d(16, 64, 1)
    net.patch_embed2.proj4_maxpool = torch.nn.AvgPool2d(2)
    with pytest.raises(ternion.ExportError) as e:
        ternion.export(net, x, tmp_path / "c.h5")
    assert "patch_embed2.proj4_maxpool" in str(e.value) and "MaxPool2d" in str(e.value)
    net.patch_embed2.proj4_maxpool = torch.nn.MaxPool2d(3, 2, 1)
    del net.stage2[0].ssa.v_conv
    with pytest.raises(ternion.ExportError) as e:
        ternion.export(net, x, tmp_path / "d.h5")
    assert "stage2.0.ssa" in str(e.value)
    with pytest.raises(ternion.ExportError) as e:  # [B, T, C, H, W] sequences
        ternion.export(build(1, embed_dims=32, num_heads=2, depths=1, T=2, stages=2)[0],
                       x.unsqueeze(1).repeat(1, 2, 1, 1, 1), tmp_path / "e.h5")
    assert "images [B, C, H, W]" in str(e.value)
