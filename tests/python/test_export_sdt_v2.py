"""ternion.export of Spike-driven Transformer V2 (Meta-SpikeFormer: binary LIF neurons, SepConv,
RepConv with BatchNorm-valued padding, SDSA-3 = LIF_0.5(Q (K^T V) * 0.125), membrane
shortcuts) against PyTorch: every LIF layer spike for spike, the attention's Q/K/V totals, the
predictions; the padded border counted as the depthwise convolution's inputs.

Fixtures are the stand-ins of sdt_v2_standins.py (written from the official equations), with
seeded random weights and BatchNorm statistics calibrated on data."""
import h5py
import numpy as np
import pytest
import torch
import torch.nn.functional as F

import helpers as H
import sdt_v2_standins as v2
import sj_standins as sj
import ternion

torch.set_num_threads(1)


def build(seed, image=64, **cfg):
    gen = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    net = v2.Spiking_vit_MetaFormer(**cfg)
    H.randomize_bn(net, gen)
    with torch.no_grad():
        for m in net.modules():
            if isinstance(m, torch.nn.Linear):
                m.bias.zero_()
    inp = lambda b: torch.rand(b, 3, image, image, generator=gen)  # noqa: E731
    H.calibrate(net, [inp(16) for _ in range(3)])
    return net, inp(3)


def token_major(s, channels):
    """[B, T, C*N] channel-major -> ternion's tokens [B, T, N*C]."""
    B, T, n = s.shape
    return np.ascontiguousarray(s.reshape(B, T, channels, n // channels).transpose(0, 1, 3, 2)
                                ).reshape(B, T, n)


def expected(net, rec):
    """PyTorch's spikes per ternion node (module path): each attn_lif is its ternion.SSA node's
    output (tokens); Q/K/V apart (compared as totals); fc2_lif runs on tokens in ternion."""
    want, inner = {}, {}
    mods = dict(net.named_modules())
    for path, s in rec.items():
        head, _, leaf = path.rpartition(".")
        if leaf in ("q_lif", "k_lif", "v_lif"):
            inner[path] = s
        elif leaf == "attn_lif":
            want[head] = token_major(s, mods[head].dim)
        elif leaf == "fc2_lif":
            want[path] = token_major(s, mods[head].fc1_conv.out_channels)
        else:
            want[path] = s
    return want, inner


def run_case(tmp_path, ternion_bin, net, x, fold_bn):
    out, rec = H.torch_spikes(net, x)
    model = tmp_path / "sdt_v2.h5"
    rep = ternion.export(net, x, model, fold_bn=fold_bn)
    inp = tmp_path / "in.h5"
    H.write_input(inp, data=x.numpy())
    js, tern = H.run_ternion(ternion_bin, model, inp, tmp_path / "trace.h5")
    nodes = {origin: name for name, (_, origin) in rep.nodes.items()}
    return out, rec, rep, js, tern, nodes


def check_spikes(net, rec, js, tern, nodes, out):
    want, inner = expected(net, rec)
    compared = H.compare_spikes(want, tern, nodes)
    assert all(s.any() for s in want.values()), [p for p, s in want.items() if not s.any()]
    layers = {L["name"]: L for L in js["layers"]}
    for path, s in inner.items():
        att = layers[nodes[path.rpartition(".")[0]]]["attention"]
        key = f"{path.rpartition('.')[2][0]}_spikes"
        assert att[key] == int(s.astype(np.int64).sum()), f"{path}: {att[key]}"
    assert js["predictions"] == out.argmax(1).tolist()
    return want, inner, compared, layers


def padded_inputs(net, x):
    """{RepConv path: [T*B, C, H+2, W+2] BNAndPadLayer outputs} of one forward."""
    rec, hooks = {}, []
    for name, m in net.named_modules():
        if isinstance(m, v2.BNAndPadLayer):
            def hook(mod, inp, out, name=name):
                rec[name.rsplit(".body", 1)[0]] = out.detach()
            hooks.append(m.register_forward_hook(hook))
    sj.reset_net(net)
    with torch.no_grad():
        net(x)
    for h in hooks:
        h.remove()
    sj.reset_net(net)
    return rec


def depthwise_macs(net, x):
    """Per RepConv: the (non-zero input, non-zero weight) pairs of its depthwise convolution over
    the padded map, border included (all samples and steps)."""
    mods = dict(net.named_modules())
    macs = {}
    for path, y in padded_inputs(net, x).items():
        dw = mods[path].body[2][0]
        ones = (dw.weight != 0).float()
        macs[path] = int(F.conv2d((y != 0).float(), ones, None, dw.stride, 0, 1, dw.groups).sum())
    return macs


@pytest.mark.parametrize("fold_bn", [True, False], ids=["folded", "unfolded"])
def test_sdt_v2_spike_for_spike(tmp_path, ternion_bin, fold_bn):
    net, x = build(3, T=2)
    out, rec, rep, js, tern, nodes = run_case(tmp_path, ternion_bin, net, x, fold_bn)
    assert rep.timesteps == 2 and rep.encoding == "direct"
    types = [t for t, _ in rep.nodes.values()]
    assert types.count("ternion.SSA") == 2 and types.count("ternion.Pad") == 4
    # 4 per MS_ConvBlock, 4 downsamplings, per MS_Block head_lif + 2 (MLP), the head's
    assert types.count("ternion.SJLIF") == 4 * 4 + 4 + 2 * 3 + 1
    assert ("ternion.BatchNorm" in types) == (not fold_bn)
    with h5py.File(rep.path, "r") as f:
        g = f[f"node/nodes/{nodes['block3.0.attn']}"]
        assert "q_weight" not in g and g["dim"][()] == 32 and g["scale"][()] == 0.125
        assert g["attn_v_threshold"][()] == 0.5 and g["association"][()] == b"kv"
        pad = f[f"node/nodes/{nodes['block3.0.attn.proj_conv.0.body.1']}"]
        bn = net.block3[0].attn.proj_conv[0].body[1].bn
        want_pad = (bn.bias - bn.running_mean * bn.weight / torch.sqrt(bn.running_var + bn.eps))
        assert np.array_equal(pad["value"][()], want_pad.detach().numpy())
        assert pad["value"][()].min() != 0
    want, inner, compared, layers = check_spikes(net, rec, js, tern, nodes, out)
    assert len(want) == len(rec) - 6  # Q/K/V of two attentions compared as totals
    assert compared > 50000
    for name, L in layers.items():  # the attention has no projections of its own to count
        if L["type"] == "ternion.SSA":
            assert L["attention"]["proj_ac"] == 0 and L["attention"]["proj_mac"] == 0
        if L["type"] == "ternion.Pad":
            assert L["ops"]["ac"] == 0 and L["ops"]["mac"] == 0
    # the depthwise convolutions after the padding: one MAC per pair, the border's included
    macs = depthwise_macs(net, x)
    by_node = {}
    for path, n in macs.items():
        attn = path.rsplit(".", 2)[0]
        key = f"{attn}.qkv_conv.0" if path.endswith(("q_conv.0", "k_conv.0", "v_conv.0")) \
            else path
        by_node[key] = by_node.get(key, 0) + n
    for key, n in by_node.items():
        assert layers[nodes[f"{key}.body.2.0"]]["ops"]["mac"] == n, key
    assert len(by_node) == 4


def test_sdt_v2_kd_head_and_three_steps(tmp_path, ternion_bin):
    """kd=True (head and head_kd averaged), T = 3, heads of 16 and 24 channels, two blocks in
    stage 3. (Every attention must fire on the calibration data: an attn_lif that never does
    leaves its proj_conv BatchNorms with zero variance, which multiply last-bit differences of
    the convolutions' sums by about 1/sqrt(eps) each.)"""
    net, x = build(2, T=3, kd=True, embed_dim=(8, 16, 32, 48), num_heads=2, depths=(2, 1))
    out, rec, rep, js, tern, nodes = run_case(tmp_path, ternion_bin, net, x, False)
    assert rep.timesteps == 3
    assert [t for t, _ in rep.nodes.values()].count("ternion.SSA") == 3
    want, _, compared, _ = check_spikes(net, rec, js, tern, nodes, out)
    assert compared > 50000 and "head_sum" in rep.nodes


def test_sdt_v2_padding_value_matters(tmp_path, ternion_bin):
    """The same file with zero padding instead of the BatchNorm's values no longer matches:
    the comparison sees the border."""
    net, x = build(3, T=2)
    _, rec, rep, _, _, nodes = run_case(tmp_path, ternion_bin, net, x, True)
    with h5py.File(rep.path, "r+") as f:
        for name, (typ, _) in rep.nodes.items():
            if typ == "ternion.Pad":
                f[f"node/nodes/{name}/value"][...] = 0
    inp = tmp_path / "in.h5"
    js, tern = H.run_ternion(ternion_bin, rep.path, inp, tmp_path / "trace0.h5")
    want, inner = expected(net, rec)
    differ = sum(int((tern[nodes[p]] != s).sum()) for p, s in want.items())
    layers = {L["name"]: L for L in js["layers"]}
    q = layers[nodes["block3.0.attn"]]["attention"]["q_spikes"]
    assert differ > 0 or q != int(inner["block3.0.attn.q_lif"].astype(np.int64).sum())


def test_sdt_v2_refusals_name_the_module(tmp_path):
    net, x = build(1, image=32)
    attn = net.block3[0].attn
    attn.k_lif = v2.lif(0.75)
    with pytest.raises(ternion.ExportError) as e:
        ternion.export(net, x, tmp_path / "a.h5")
    assert "block3.0.attn" in str(e.value) and "differ" in str(e.value)
    attn.k_lif = v2.lif()
    attn.head_lif = sj.MultiStepParametricLIFNode()
    with pytest.raises(ternion.ExportError) as e:
        ternion.export(net, x, tmp_path / "b.h5")
    assert "block3.0.attn.head_lif" in str(e.value) and "LIF" in str(e.value)
    attn.head_lif = v2.lif()
    body = attn.v_conv[0].body
    body[2][0] = torch.nn.Conv2d(32, 32, 3, bias=False)
    with pytest.raises(ternion.ExportError) as e:
        ternion.export(net, x, tmp_path / "c.h5")
    assert "block3.0.attn.v_conv.0.body.2.0" in str(e.value) and "depthwise" in str(e.value)
    body[2][0] = torch.nn.Conv2d(32, 32, 3, groups=32, bias=False)
    net.block4[0].attn = torch.nn.Identity()
    with pytest.raises(ternion.ExportError) as e:
        ternion.export(net, x, tmp_path / "d.h5")
    assert "block4.0.attn" in str(e.value) and "MS_Attention_RepConv_qkv_id" in str(e.value)
    net, x = build(1, image=32)
    net.ConvBlock1_2[0].Conv.lif2 = torch.nn.ReLU()
    with pytest.raises(ternion.ExportError) as e:
        ternion.export(net, x, tmp_path / "e.h5")
    assert "ConvBlock1_2.0.Conv.lif2" in str(e.value)
    net, x = build(1, image=32)
    with pytest.raises(ternion.ExportError) as e:
        ternion.export(net, x[None], tmp_path / "f.h5")
    assert "images [B, C, H, W]" in str(e.value)
