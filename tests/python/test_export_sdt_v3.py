"""ternion.export of Spike-driven Transformer V3 (integer MultiSpike neurons, T = 1, D = 4)
against PyTorch: every MultiSpike layer count for count, the attention's Q/K/V totals, the
predictions; and the operation counts against an independent recount of the D-virtual-step
expansion (each count k as k binary spikes over D virtual steps, every synaptic layer's ACs
as the pairs of those spikes with non-zero weights).

Fixtures are the stand-ins of sdt_v3_standins.py (written from the official equations), with
seeded random weights and BatchNorm statistics calibrated on data."""
import h5py
import numpy as np
import pytest
import torch
import torch.nn.functional as F

import helpers as H
import sdt_v3_standins as v3
import ternion

torch.set_num_threads(1)

D = 4  # MultiSpike's max_value: the virtual binary steps of one integer spike


def build(seed, image=32, **cfg):
    gen = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    net = v3.Model(**cfg)
    H.randomize_bn(net, gen)
    with torch.no_grad():
        net.head.bias.zero_()
    inp = lambda b: torch.rand(b, 3, image, image, generator=gen)  # noqa: E731
    H.calibrate(net, [inp(16) for _ in range(3)])
    return net, inp(3)


def torch_counts(net, x):
    """(logits, {module path: integer counts [B, 1, n] as int8}) of every MultiSpike: its
    output times Norm, in PyTorch's memory order."""
    rec, hooks = {}, []
    for name, m in net.named_modules():
        if isinstance(m, v3.MultiSpike):
            def hook(mod, inp, out, name=name):
                k = (out * mod.Norm).detach()
                assert torch.equal(k, torch.round(k))
                rec[name] = k.reshape(k.shape[0], 1, -1).to(torch.int8).numpy()
            hooks.append(m.register_forward_hook(hook))
    with torch.no_grad():
        out = net(x)
    for h in hooks:
        h.remove()
    return out, rec


def token_major(s, channels):
    """[B, 1, C*N] channel-major -> ternion's tokens [B, 1, N*C]."""
    B, T, n = s.shape
    return np.ascontiguousarray(s.reshape(B, T, channels, n // channels).transpose(0, 1, 3, 2)
                                ).reshape(B, T, n)


def expected(net, rec):
    """PyTorch's counts per ternion node (module path): each attn_spike is its attention node's
    output; Q/K/V apart (compared as totals); the MLP's fc2_spike runs on tokens in ternion."""
    want, inner = {}, {}
    mods = dict(net.named_modules())
    for path, s in rec.items():
        head, _, leaf = path.rpartition(".")
        if leaf in ("q_spike", "k_spike", "v_spike"):
            inner[path] = s
        elif leaf == "attn_spike":
            want[head] = token_major(s, mods[head].v_conv[0].out_channels)
        elif leaf == "fc2_spike":
            want[path] = token_major(s, mods[head].fc1_conv.out_channels)
        else:
            want[path] = s
    return want, inner


def run_case(tmp_path, ternion_bin, net, x, fold_bn):
    out, rec = torch_counts(net, x)
    model = tmp_path / "sdt_v3.h5"
    rep = ternion.export(net, x, model, fold_bn=fold_bn)
    inp = tmp_path / "in.h5"
    H.write_input(inp, data=x.numpy())
    js, tern = H.run_ternion(ternion_bin, model, inp, tmp_path / "trace.h5")
    nodes = {origin: name for name, (_, origin) in rep.nodes.items()}
    return out, rec, rep, js, tern, nodes


def virtual_steps(k):
    """Integer counts [..] -> D binary spike tensors: step t fires where k > t."""
    return [(k > t).float() for t in range(D)]


def pairs(spikes, weight, conv=None):
    """(spike, non-zero weight) pairs of one binary input through a layer: the layer applied to
    the spikes with every non-zero weight set to 1, summed."""
    mask = (weight != 0).float()
    if conv is None:  # Linear / 1x1 over tokens: spikes [N, in]
        return float((spikes @ mask.reshape(mask.shape[0], -1).T).sum())
    return float(F.conv2d(spikes[None], mask, None, conv.stride, conv.padding, conv.dilation,
                          conv.groups).sum())


def recount(net, rec):
    """ACs per consumer module of a MultiSpike, by the D-virtual-step expansion of PyTorch's own
    counts (one sample); the attention projections as one total per attention."""
    mods = dict(net.named_modules())
    acs = {}

    def k_of(path, b):
        return torch.from_numpy(rec[path][b, 0].astype(np.float32))

    for b in range(next(iter(rec.values())).shape[0]):
        def add(name, v):
            acs[name] = acs.get(name, 0.0) + v

        for path, m in mods.items():
            if isinstance(m, v3.DownSampling) and hasattr(m, "encode_spike"):
                c = m.encode_conv
                k = k_of(f"{path}.encode_spike", b).reshape(c.in_channels, -1)
                side = int(round(k.shape[1] ** 0.5))
                for s in virtual_steps(k.reshape(c.in_channels, side, side)):
                    add(f"{path}.encode_conv", pairs(s, c.weight, c))
            if isinstance(m, v3.SepConvSpike):
                for sp, seq in (("spike1", "pwconv1"), ("spike2", "dwconv"), ("spike3", "pwconv2")):
                    c = getattr(m, seq)[0]
                    k = k_of(f"{path}.{sp}", b)
                    side = int(round((k.numel() / c.in_channels) ** 0.5))
                    for s in virtual_steps(k.reshape(c.in_channels, side, side)):
                        add(f"{path}.{seq}.0", pairs(s, c.weight, c))
            if isinstance(m, v3.ConvBlock):
                for sp, cn in (("spike1", "conv1"), ("spike2", "conv2")):
                    c = getattr(m, cn)
                    k = k_of(f"{path}.{sp}", b)
                    side = int(round((k.numel() / c.in_channels) ** 0.5))
                    for s in virtual_steps(k.reshape(c.in_channels, side, side)):
                        add(f"{path}.{cn}", pairs(s, c.weight, c))
            if isinstance(m, v3.LinearAttention):
                k = k_of(f"{path}.head_spike", b)
                cin = m.q_conv[0].in_channels
                tok = k.reshape(cin, -1).T
                for s in virtual_steps(tok):
                    for nm in ("q", "k", "v"):
                        add(f"{path}.proj", pairs(s, getattr(m, f"{nm}_conv")[0].weight))
                cv = m.proj_conv[0]
                k = k_of(f"{path}.attn_spike", b).reshape(cv.in_channels, -1).T
                for s in virtual_steps(k):
                    add(f"{path}.proj_conv.0", pairs(s, cv.weight))
            if isinstance(m, v3.MLP):
                for sp, cn in (("fc1_spike", "fc1_conv"), ("fc2_spike", "fc2_conv")):
                    c = getattr(m, cn)
                    k = k_of(f"{path}.{sp}", b).reshape(c.in_channels, -1).T
                    for s in virtual_steps(k):
                        add(f"{path}.{cn}", pairs(s, c.weight))
        k = k_of("spike", b)
        for s in virtual_steps(k[None]):
            add("head", pairs(s, net.head.weight))
    return acs


@pytest.mark.parametrize("fold_bn", [True, False], ids=["folded", "unfolded"])
def test_sdt_v3_count_for_count(tmp_path, ternion_bin, fold_bn):
    net, x = build(7, image=32)
    out, rec, rep, js, tern, nodes = run_case(tmp_path, ternion_bin, net, x, fold_bn)
    assert rep.timesteps == 1 and rep.encoding == "direct"
    types = [t for t, _ in rep.nodes.values()]
    assert types.count("ternion.MultiSpikeAttention") == 2
    # per ConvBlock 5, per Block 3 + head_spike + 2 (MLP); 4 downsamplings, the head's
    assert types.count("ternion.MultiSpike") == 4 * 5 + 2 * 6 + 4 + 1
    assert ("ternion.BatchNorm" in types) == (not fold_bn)
    with h5py.File(rep.path, "r") as f:
        g = f[f"node/nodes/{nodes['block3.0.attn']}"]
        # float32(2 / sqrt(16)) / 4^3: the official scale with the three 1/Norm inside
        assert g["scale"][()] == np.float32(0.5) / 64
        assert g["max_value"][()] == 4.0 and g["v_weight"].shape == (128, 32)
    want, inner = expected(net, rec)
    assert len(want) == len(rec) - 6  # Q/K/V of two attentions compared as totals
    compared = H.compare_spikes(want, tern, nodes)
    assert compared > 20000
    # every layer fires, and integer spikes above 1 occur: the comparison sees the counts, not
    # only their support
    assert all(s.any() for s in want.values())
    assert max(int(s.max()) for s in want.values()) == D
    layers = {L["name"]: L for L in js["layers"]}
    for path, s in inner.items():
        att = layers[nodes[path.rpartition(".")[0]]]["attention"]
        key = f"{path[-7]}_spikes"
        assert att[key] == int(s.astype(np.int64).sum()), f"{path}: {att[key]}"
    for path, s in want.items():  # each MultiSpike books its virtual spikes, sum of k
        assert layers[nodes[path]]["ops"]["spikes_out"] == int(s.astype(np.int64).sum()), path
    assert js["predictions"] == out.argmax(1).tolist()
    # the D-virtual-step expansion's ACs, layer by layer
    acs = recount(net, rec)
    for path, want_ac in acs.items():
        if path.endswith(".proj"):
            got = layers[nodes[path[:-5]]]["attention"]["proj_ac"]
        else:
            got = layers[nodes[path]]["ops"]["ac"]
        assert got == int(want_ac), f"{path}: ternion {got}, expansion {int(want_ac)}"
    # per ConvBlock 5 convolutions, 4 downsamplings, per Block 3 + projections + proj_conv +
    # 2 (MLP), the head
    assert len(acs) == 4 * 5 + 4 + 2 * 7 + 1


def test_sdt_v3_counts_are_integers_not_spikes(tmp_path, ternion_bin):
    """The same file with every MultiSpike's levels cut to 0..1 (binary spikes) no longer
    matches: the comparison sees the integer counts."""
    net, x = build(7, image=32)
    _, rec = torch_counts(net, x)
    model = tmp_path / "v3.h5"
    rep = ternion.export(net, x, model)
    nodes = {origin: name for name, (_, origin) in rep.nodes.items()}
    with h5py.File(model, "r+") as f:
        g = f[f"node/nodes/{nodes['ConvBlock1_1.0.spike1']}"]
        g["max_value"][()] = 1.0
    inp = tmp_path / "in.h5"
    H.write_input(inp, data=x.numpy())
    _, tern = H.run_ternion(ternion_bin, model, inp, tmp_path / "trace.h5")
    name = nodes["ConvBlock1_1.0.spike1"]
    assert tern[name].max() == 1 and rec["ConvBlock1_1.0.spike1"].max() > 1


def test_sdt_v3_refusals_name_the_module(tmp_path):
    net, x = build(1, image=32)
    net.block3[0].attn.k_spike = v3.MultiSpike(max_value=8)
    with pytest.raises(ternion.ExportError) as e:
        ternion.export(net, x, tmp_path / "a.h5")
    assert "block3.0.attn" in str(e.value) and "same levels" in str(e.value)
    net.block3[0].attn.k_spike = v3.MultiSpike()
    net.ConvBlock2_1[0].spike2 = v3.MultiSpike(Norm=3)
    with pytest.raises(ternion.ExportError) as e:
        ternion.export(net, x, tmp_path / "b.h5")
    assert "ConvBlock2_1.0.spike2" in str(e.value) and "power of two" in str(e.value)
    net.ConvBlock2_1[0].spike2 = torch.nn.ReLU()
    with pytest.raises(ternion.ExportError) as e:
        ternion.export(net, x, tmp_path / "c.h5")
    assert "ConvBlock2_1.0.spike2" in str(e.value) and "MultiSpike" in str(e.value)
    net.ConvBlock2_1[0].spike2 = v3.MultiSpike()
    net.block4[0].mlp.fc1_conv = torch.nn.Conv1d(32, 128, 3, padding=1)
    with pytest.raises(ternion.ExportError) as e:
        ternion.export(net, x, tmp_path / "d.h5")
    assert "block4.0.mlp.fc1_conv" in str(e.value) and "1x1" in str(e.value)
