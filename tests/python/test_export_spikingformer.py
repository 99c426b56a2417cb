"""ternion.export of Spikingformer against PyTorch: every neuron layer spike for spike, the
attentions' Q/K/V totals, and the predictions; images repeated T times (the CIFAR and ImageNet
files) and frames (the DVS files).

Fixtures are small modules written here (spikingformer_standins.py) with the official code's
structure and order of operations, seeded random weights and BatchNorm statistics calibrated on
data."""
import h5py
import numpy as np
import pytest
import torch

import helpers as H
import spikingformer_standins as sf
import ternion

torch.set_num_threads(1)

INNER = ("q_lif", "k_lif", "v_lif")


def build(seed, image=16, **cfg):
    """The stand-in with calibrated BatchNorms and 3 inputs: images [3, C, H, W], or with
    frames=True event-count-like frames [3, T, C, H, W]."""
    gen = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    net = sf.vit_snn(**cfg)
    H.randomize_bn(net, gen)
    with torch.no_grad():  # the class then follows the features, not the random bias
        net.head.bias.zero_()
    c = cfg.get("in_channels", 3)
    if cfg.get("frames"):
        inp = lambda b: torch.randint(0, 3, (b, cfg["T"], c, image, image),  # noqa: E731
                                      generator=gen).float()
    else:
        inp = lambda b: torch.rand(b, c, image, image, generator=gen)  # noqa: E731
    H.calibrate(net, [inp(16) for _ in range(3)])
    return net, inp(3)


def tokens_of(net, image):
    pools = sum(isinstance(m, torch.nn.MaxPool2d) for m in net.patch_embed.modules())
    return (image // 2 ** pools) ** 2


def token_major(s, tokens):
    """[B, T, C*N] spikes in PyTorch's channel-major order -> ternion's tokens [B, T, N*C]."""
    B, T, n = s.shape
    return np.ascontiguousarray(s.reshape(B, T, n // tokens, tokens).transpose(0, 1, 3, 2)
                                ).reshape(B, T, n)


def expected(rec, tokens):
    """PyTorch's spikes per ternion node: the tokenizer's as they are, the blocks' in token order;
    each attn_lif is its ternion.SSA node's output; Q/K/V apart (compared as totals)."""
    want, inner = {}, {}
    for path, s in rec.items():
        head, _, leaf = path.rpartition(".")
        if path.startswith("patch_embed"):
            want[path] = s
        elif leaf in INNER:
            inner[path] = s
        elif leaf == "attn_lif":
            want[head] = token_major(s, tokens)
        else:
            want[path] = token_major(s, tokens)
    return want, inner


def run_case(tmp_path, ternion_bin, net, x, fold_bn):
    out, rec = H.torch_spikes(net, x)
    model = tmp_path / "spikingformer.h5"
    rep = ternion.export(net, x, model, fold_bn=fold_bn)
    inp = tmp_path / "in.h5"
    if net.frames:
        with h5py.File(inp, "w") as f:
            f.create_dataset("frames", data=x.numpy().astype(np.float32))
    else:
        H.write_input(inp, data=x.numpy())
    js, tern = H.run_ternion(ternion_bin, model, inp, tmp_path / "trace.h5")
    nodes = {origin: name for name, (_, origin) in rep.nodes.items()}
    return out, rec, rep, js, tern, nodes


CASES = [
    dict(seed=3, image=16, embed_dims=32, num_heads=2, depths=2, T=4),
    dict(seed=4, image=64, embed_dims=32, num_heads=2, depths=1, T=4, mlp_ratios=2,
         num_classes=5, layout="imagenet"),
    dict(seed=5, image=64, embed_dims=32, num_heads=2, depths=1, T=4, layout="imagenet",
         frames=True, tau=1.5, in_channels=2),
]


@pytest.mark.parametrize("cfg", CASES, ids=["cifar", "imagenet", "dvs"])
@pytest.mark.parametrize("fold_bn", [True, False], ids=["folded", "unfolded"])
def test_spikingformer_spike_for_spike(tmp_path, ternion_bin, cfg, fold_bn):
    cfg = dict(cfg)
    seed, image = cfg.pop("seed"), cfg.pop("image")
    net, x = build(seed, image=image, **cfg)
    out, rec, rep, js, tern, nodes = run_case(tmp_path, ternion_bin, net, x, fold_bn)
    assert rep.timesteps == cfg["T"] and not rep.time_first
    assert rep.encoding == ("" if cfg.get("frames") else "direct")
    types = [t for t, _ in rep.nodes.values()]
    assert types.count("ternion.SSA") == cfg["depths"]
    assert types.count("ternion.SJLIF") == 4 + 3 * cfg["depths"]
    assert ("ternion.BatchNorm" in types) == (not fold_bn)
    with h5py.File(rep.path, "r") as f:
        for name, (t, _) in rep.nodes.items():
            g = f[f"node/nodes/{name}"]
            if t == "ternion.SSA":
                assert g["attn_v_threshold"][()] == 0.5 and g["scale"][()] == 0.125
                assert g["association"][()].decode() == \
                    ("kv" if cfg.get("layout") == "imagenet" else "qk")
            if t == "ternion.SJLIF":
                assert g["tau"][()] == cfg.get("tau", 2.0)
    want, inner = expected(rec, tokens_of(net, image))
    # the tokenizer's 4 LIFs; per block proj_lif, attn_lif (the SSA node), mlp1_lif, mlp2_lif
    assert len(want) == 4 + 4 * cfg["depths"]
    assert H.compare_spikes(want, tern, nodes) > 1000
    layers = {L["name"]: L for L in js["layers"]}
    for path, s in inner.items():
        att = layers[nodes[path.rpartition(".")[0]]]["attention"]
        key = f"{path[-5]}_spikes"
        assert att[key] == int(s.sum()), f"{path}: ternion {att[key]}, torch {int(s.sum())}"
    for path, s in list(want.items()) + list(inner.items()):
        assert s.any() and s.mean() < 0.9, f"{path} firing rate {s.mean()}"
    assert js["predictions"] == out.argmax(1).tolist()


def test_spikingformer_residual_is_not_a_spike_stream(tmp_path, ternion_bin):
    """The blocks add BatchNorm outputs: the same file whose proj_lif reads the SSA's spikes
    instead of the stream no longer matches, so the comparison sees where the neurons sit."""
    net, x = build(3, image=16, embed_dims=32, num_heads=2, depths=1, T=4)
    _, rec = H.torch_spikes(net, x)
    model = tmp_path / "sf.h5"
    rep = ternion.export(net, x, model)
    nodes = {origin: name for name, (_, origin) in rep.nodes.items()}
    with h5py.File(model, "r+") as f:
        edges = [tuple(e.decode() for e in row) for row in f["node/edges"][()]]
        lif = nodes["block.0.mlp.mlp1_lif"]
        edges = [(nodes["block.0.attn"] if t == lif else s, t) for s, t in edges]
        del f["node/edges"]
        f.create_dataset("node/edges", data=np.array(edges, dtype=object),
                         dtype=h5py.string_dtype("utf-8"))
    inp = tmp_path / "in.h5"
    H.write_input(inp, data=x.numpy())
    _, tern = H.run_ternion(ternion_bin, model, inp, tmp_path / "trace.h5")
    want, _ = expected(rec, tokens_of(net, 16))
    assert not np.array_equal(tern[lif], want["block.0.mlp.mlp1_lif"])


def test_spikingformer_refusals_name_the_module(tmp_path):
    net, x = build(1, image=16, embed_dims=32, num_heads=2, depths=1, T=2)
    net.block[0].attn.k_lif = sf.lif(tau=3.0)
    with pytest.raises(ternion.ExportError) as e:
        ternion.export(net, x, tmp_path / "a.h5")
    assert "block.0.attn" in str(e.value) and "differ" in str(e.value)
    net.block[0].attn.k_lif = sf.lif()
    net.block[0].mlp.mlp1_conv = torch.nn.Conv2d(32, 128, 3, padding=1)
    with pytest.raises(ternion.ExportError) as e:
        ternion.export(net, x, tmp_path / "b.h5")
    assert "block.0.mlp.mlp1_conv" in str(e.value) and "1x1" in str(e.value)
    net.block[0].mlp.mlp1_conv = torch.nn.Conv2d(32, 128, 1)
    net.patch_embed.block3_mp = torch.nn.AvgPool2d(2)
    with pytest.raises(ternion.ExportError) as e:
        ternion.export(net, x, tmp_path / "c.h5")
    assert "patch_embed.block3_mp" in str(e.value) and "MaxPool2d" in str(e.value)
    net.patch_embed.block3_mp = torch.nn.MaxPool2d(3, 2, 1)
    net.block[0].attn.proj_lif = torch.nn.ReLU()
    with pytest.raises(ternion.ExportError) as e:
        ternion.export(net, x, tmp_path / "d.h5")
    assert "block.0.attn.proj_lif" in str(e.value) and "LIF" in str(e.value)
    net.block[0].attn.proj_lif = sf.lif()
    del net.block[0].attn.v_conv
    with pytest.raises(ternion.ExportError) as e:
        ternion.export(net, x, tmp_path / "e.h5")
    assert "block.0.attn" in str(e.value) and "v_conv" in str(e.value)
