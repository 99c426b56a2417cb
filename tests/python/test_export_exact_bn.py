"""ternion.export(..., fold_bn=False): BatchNorm kept unfolded and rounded as PyTorch's CPU
kernels round it, so that a Spikformer's spikes equal PyTorch's in every layer.

PyTorch's eval BatchNorm computes ((y - mean) * invstd) * gamma + beta elementwise when its
input is strided (Spikformer's BatchNorm1d on transposed tokens) and y * alpha + (beta - mean *
alpha), with fused multiply-adds, when it is contiguous (after a convolution); folding it into
the weights rounds differently again. Fixtures are written here and in sj_standins.py from the
documented structure; nothing is fetched. Run: /usr/bin/python3 -m pytest tests/python
--ternion build/ternion"""
import h5py
import numpy as np
import pytest
import torch
import torch.nn as nn

import helpers as H
from ternion.exporter.converters import bn_params
from ternion.exporter.graph import write_model

torch.set_num_threads(1)


def random_bn(cls, c, gen):
    bn = cls(c).eval()
    with torch.no_grad():
        bn.running_mean.copy_(torch.randn(c, generator=gen))
        bn.running_var.copy_(0.01 + 3 * torch.rand(c, generator=gen))
        bn.weight.copy_(2 * torch.rand(c, generator=gen) - 0.5)
        bn.bias.copy_(torch.randn(c, generator=gen))
    return bn


def ternion_bn(tmp_path, ternion_bin, bn, x, form, axis):
    """Input -> ternion.BatchNorm -> Output on data x [S, ...]: the node's output values."""
    shape = x.shape[1:]
    p = bn_params(bn)
    p.update(form=form, axis=np.int64(axis))
    nodes = {"input": ("Input", {"shape": np.array(shape, np.int64)}),
             "bn": ("ternion.BatchNorm", p),
             "output": ("Output", {"shape": np.array(shape, np.int64)})}
    model = tmp_path / f"bn_{form}.h5"
    write_model(model, nodes, [("input", "bn"), ("bn", "output")],
                {"timesteps": np.int64(1), "encoding": "direct"})
    inp = tmp_path / "x.h5"
    H.write_input(inp, data=x.numpy())
    trace = tmp_path / "trace.h5"
    H.run_ternion(ternion_bin, model, inp, trace, "--record-nodes", "bn", record="membrane")
    with h5py.File(trace, "r") as f:
        return f["nodes/bn/observables/v/data"][()][:, 0]


def test_batchnorm_node_rounds_as_pytorch(tmp_path, ternion_bin):
    gen = torch.Generator().manual_seed(3)
    C = 48
    # Tokens [N, C], normalised over C through a transpose (strided input): "normalize".
    bn1 = random_bn(nn.BatchNorm1d, C, gen)
    x = 4 * torch.randn(6, 20, C, generator=gen)
    with torch.no_grad():
        want = bn1(x.transpose(1, 2)).transpose(1, 2).reshape(6, -1).numpy()
        contiguous = bn1(x.transpose(1, 2).contiguous()).transpose(1, 2).reshape(6, -1).numpy()
    got = ternion_bn(tmp_path, ternion_bin, bn1, x, "normalize", -1)
    assert np.array_equal(got.view(np.int32), want.view(np.int32))
    assert (contiguous != want).sum() > 0  # the layout does change PyTorch's rounding
    assert (ternion_bn(tmp_path, ternion_bin, bn1, x, "fma", -1) != want).sum() > 0
    # Channels first [C, H, W] after a convolution (contiguous): "fma".
    bn2 = random_bn(nn.BatchNorm2d, C, gen)
    x = 4 * torch.randn(4, C, 5, 7, generator=gen)
    with torch.no_grad():
        want = bn2(x).reshape(4, -1).numpy()
    got = ternion_bn(tmp_path, ternion_bin, bn2, x, "fma", 0)
    assert np.array_equal(got.view(np.int32), want.view(np.int32))
    assert (ternion_bn(tmp_path, ternion_bin, bn2, x, "normalize", 0) != want).sum() > 0


@pytest.mark.parametrize("seed,cfg", [
    (7, dict(embed_dims=32, num_heads=4, depths=2, T=4)),
    (5, dict(embed_dims=64, num_heads=4, depths=2, T=4)),
])
def test_spikformer_unfolded_batchnorm_spike_for_spike(tmp_path, ternion_bin, seed, cfg):
    from test_export import spikformer_case

    rep = spikformer_case(tmp_path, ternion_bin, seed, fold_bn=False, **cfg)
    types = [t for t, _ in rep.nodes.values()]
    # SPS: five conv BatchNorms; per block the projection's and the MLP's two (Q/K/V's are
    # inside ternion.SSA, as q_bn_form).
    assert types.count("ternion.BatchNorm") == 5 + 3 * cfg["depths"]
    with h5py.File(rep.path, "r") as f:
        ssa = [g for g in f["node/nodes"].values() if g["type"][()] == b"ternion.SSA"]
        assert all(g["q_bn_form"][()] == b"normalize" for g in ssa)
        bns = {n: g for n, g in f["node/nodes"].items() if g["type"][()] == b"ternion.BatchNorm"}
        assert bns["patch_embed.proj_bn"]["form"][()] == b"fma"
        assert bns["block.0.mlp.fc1_bn"]["form"][()] == b"normalize"


def test_linear_batchnorm_values_folded_and_unfolded(tmp_path, ternion_bin):
    """Linear + BatchNorm1d through the exporter, on spikes: unfolded, ternion's output equals
    PyTorch's bit for bit; folded, it differs in the last bits (the reason for fold_bn=False)."""
    import ternion

    gen = torch.Generator().manual_seed(5)
    torch.manual_seed(5)
    net = nn.Sequential(nn.Linear(64, 96), random_bn(nn.BatchNorm1d, 96, gen)).eval()
    x = (torch.rand(32, 64, generator=gen) < 0.3).float()
    with torch.no_grad():
        # PyTorch's nn.Linear sums in its BLAS's order, which varies with the library and the
        # CPU (OpenBLAS picks its kernels by instruction set); the reference BLAS sums in
        # ascending input order, then adds the bias, as ternion does. The Linear is recomputed
        # in that order here, so what is compared is the BatchNorm's rounding.
        lin = net[0]
        acc = torch.zeros(x.shape[0], lin.out_features)
        for k in range(lin.in_features):
            acc = acc + x[:, k:k + 1] * lin.weight[:, k]
        want = net[1](acc + lin.bias).numpy()
    inp = tmp_path / "x.h5"
    H.write_input(inp, data=x.numpy())
    differ = {}
    for fold in (True, False):
        model = tmp_path / f"m{int(fold)}.h5"
        rep = ternion.export(net, x, model, timesteps=1, fold_bn=fold)
        last = list(rep.nodes)[-2]  # the node before Output
        assert rep.nodes[last][0] == ("Affine" if fold else "ternion.BatchNorm")
        trace = tmp_path / f"t{int(fold)}.h5"
        H.run_ternion(ternion_bin, model, inp, trace, "--record-nodes", last, record="membrane")
        with h5py.File(trace, "r") as f:
            got = f[f"nodes/{last}/observables/v/data"][()][:, 0]
        differ[fold] = int((got.view(np.int32) != want.view(np.int32)).sum())
    assert differ[False] == 0
    assert differ[True] > 0
