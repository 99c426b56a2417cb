"""ternion.export of the Spike-driven Transformer v1 against PyTorch: every neuron layer spike
for spike, the attention's Q/K/V and mask neurons, and the predictions.

Fixtures are small modules written here (sdt_standins.py) with the official code's structure and
order of operations, seeded random weights and BatchNorm statistics calibrated on data."""
import h5py
import numpy as np
import pytest
import torch

import helpers as H
import sdt_standins as sdt
import ternion

torch.set_num_threads(1)

QKV = ("q_lif", "k_lif", "v_lif")


def build(seed, image=16, **cfg):
    gen = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    net = sdt.SpikeDrivenTransformer(**cfg)
    H.randomize_bn(net, gen)
    with torch.no_grad():  # branches that end in the residual stream: centred, so it does not drift
        for name, m in net.named_modules():
            if name.rpartition(".")[2] in ("rpe_bn", "proj_bn", "fc2_bn"):
                m.bias.copy_(0.6 * torch.rand(m.bias.shape, generator=gen) - 0.3)
    img = lambda b: torch.rand(b, cfg.get("in_channels", 3), image, image, generator=gen)  # noqa
    H.calibrate(net, [img(16) for _ in range(3)])
    return net, img(12)


def token_major(s, tokens):
    """[B, T, C*N] spikes in PyTorch's channel-major order -> ternion's tokens [B, T, N*C]."""
    B, T, n = s.shape
    return np.ascontiguousarray(s.reshape(B, T, n // tokens, tokens).transpose(0, 1, 3, 2)
                                ).reshape(B, T, n)


def expected(net, rec, dim):
    """PyTorch's spikes per ternion node: neurons of the blocks in token order, and each
    attention's output Q * mask, which ternion.SDSA emits, built from q_lif and the mask."""
    want, inner = {}, {}
    tokens = rec["block.0.attn.shortcut_lif"].shape[2] // dim
    for path, s in rec.items():
        head, _, leaf = path.rpartition(".")
        if leaf in QKV or leaf == "talking_heads_lif":
            inner[path] = s
        elif path.startswith("block."):
            want[path] = token_major(s, tokens)
        else:
            want[path] = s
    for i in range(len(net.block)):
        a = f"block.{i}.attn"
        q, m = inner[f"{a}.q_lif"], inner[f"{a}.talking_heads_lif"]
        B, T, n = q.shape
        heads = net.block[i].attn.num_heads
        # q_lif fired on [C, H, W] (channel-major); the mask is one neuron per channel
        out = q.reshape(B, T, dim, n // dim) * m.reshape(B, T, dim, 1)
        want[a] = np.ascontiguousarray(out.transpose(0, 1, 3, 2)).reshape(B, T, n)
        assert m.shape[2] == dim and dim % heads == 0
    return want, inner


def sdt_case(tmp_path, ternion_bin, seed, form=None, fold_bn=True, **cfg):
    net, x = build(seed, **cfg)
    out, rec = H.torch_spikes(net, x)
    model = tmp_path / "sdt.h5"
    rep = ternion.export(net, x, model, fold_bn=fold_bn)
    assert not rep.time_first and rep.timesteps == cfg["T"] and rep.encoding == "direct"
    if form is not None:  # the negative control: the same file with another SDSA form
        with h5py.File(model, "r+") as f:
            for g in f["node/nodes"].values():
                if g["type"][()].decode() == "ternion.SDSA":
                    del g["form"]
                    g.create_dataset("form", data=form, dtype=h5py.string_dtype("utf-8"))
    inp = tmp_path / "in.h5"
    H.write_input(inp, data=x.numpy())
    js, tern = H.run_ternion(ternion_bin, model, inp, tmp_path / "trace.h5")
    nodes = {origin: name for name, (_, origin) in rep.nodes.items()}
    want, inner = expected(net, rec, cfg["embed_dims"])
    return net, out, rep, js, tern, nodes, want, inner


def check_inner(js, nodes, inner):
    """Q, K, V and mask spikes inside each ternion.SDSA: totals from the JSON report."""
    layers = {L["name"]: L for L in js["layers"]}
    for path, s in inner.items():
        head, _, leaf = path.rpartition(".")
        att = layers[nodes[head]]["attention"]
        key = "mask_channels" if leaf == "talking_heads_lif" else f"{leaf[0]}_spikes"
        assert att[key] == int(s.sum()), f"{path}: ternion {att[key]}, torch {int(s.sum())}"
        assert s.any(), f"{path} never fires"


@pytest.mark.parametrize("cfg", [
    dict(seed=3, embed_dims=32, num_heads=2, depths=2, T=4, mlp_ratios=4, pooling_stat="0011"),
    dict(seed=8, embed_dims=16, num_heads=2, depths=1, T=3, mlp_ratios=1, pooling_stat="1100",
         in_channels=2, num_classes=4),
], ids=["dim32_2blocks", "dim16_mlp_ratio1"])
@pytest.mark.parametrize("fold_bn", [True, False], ids=["folded", "unfolded"])
def test_sdt_spike_for_spike(tmp_path, ternion_bin, cfg, fold_bn):
    net, out, rep, js, tern, nodes, want, inner = sdt_case(tmp_path, ternion_bin,
                                                           fold_bn=fold_bn, **cfg)
    types = [t for t, _ in rep.nodes.values()]
    assert types.count("ternion.SDSA") == cfg["depths"]
    with h5py.File(rep.path, "r") as f:
        for name, (t, _) in rep.nodes.items():
            if t == "ternion.SDSA":
                g = f[f"node/nodes/{name}"]
                assert g["form"][()].decode() == "kv" and g["attn_v_threshold"][()] == 0.5
                assert ("q_bn_form" in g) == (not fold_bn)
    assert ("ternion.BatchNorm" in types) == (not fold_bn)
    check_inner(js, nodes, inner)
    # every neuron module that fires in PyTorch's forward, plus each attention's output
    assert len(want) == 4 + 4 * cfg["depths"] + 1
    n = H.compare_spikes(want, tern, nodes)
    assert n > 1000
    for path, s in want.items():
        assert s.any() and s.mean() < 0.9, f"{path} firing rate {s.mean()}"
    assert js["predictions"] == out.argmax(1).tolist()


def test_sdt_paper_form_is_not_the_official_code(tmp_path, ternion_bin):
    """The same file with SDSA's paper form (mask from Q*K, applied to V) no longer matches:
    the comparison above is sensitive to the attention's mapping."""
    cfg = dict(seed=3, embed_dims=32, num_heads=2, depths=2, T=4, mlp_ratios=4,
               pooling_stat="0011")
    _, _, _, _, tern, nodes, want, _ = sdt_case(tmp_path, ternion_bin, form="qk", **cfg)
    attn = nodes["block.0.attn"]
    assert not np.array_equal(tern[attn], want["block.0.attn"])


def test_sdt_refusals_name_the_module(tmp_path):
    net, x = build(1, embed_dims=16, num_heads=2, depths=2, T=2)
    net.block[1].attn.dvs = True
    with pytest.raises(ternion.ExportError) as e:
        ternion.export(net, x, tmp_path / "a.h5")
    assert "block.1.attn" in str(e.value) and "dvs" in str(e.value)
    net.block[1].attn.dvs = False
    net.block[0].attn.k_lif = sdt.MultiStepLIFNode(tau=3.0)
    with pytest.raises(ternion.ExportError) as e:
        ternion.export(net, x, tmp_path / "b.h5")
    assert "block.0.attn" in str(e.value) and "differ" in str(e.value)
    net.block[0].attn.k_lif = sdt.lif()
    net.block[0].mlp.fc1_conv = torch.nn.Conv2d(16, 64, 3, padding=1)
    with pytest.raises(ternion.ExportError) as e:
        ternion.export(net, x, tmp_path / "c.h5")
    assert "block.0.mlp.fc1_conv" in str(e.value) and "1x1" in str(e.value)
    with pytest.raises(ternion.ExportError) as e:  # [B, T, C, H, W] sequences
        ternion.export(build(1, embed_dims=16, num_heads=2, depths=1, T=2)[0],
                       x.unsqueeze(1).repeat(1, 2, 1, 1, 1), tmp_path / "d.h5")
    assert "images [B, C, H, W]" in str(e.value)
