"""ternion.export of snnTorch, Norse and Sinabs networks (stand-ins from each framework's
documented equations, peer_standins.py) against the stand-ins' own step-by-step simulation:
spike for spike in every neuron layer and the same predictions, with no `--from` flag (the file
carries its conventions). Weights are multiples of 1/64 and inputs spikes: sums are exact."""
import h5py
import numpy as np
import pytest
import torch
import torch.nn as nn

import helpers as H
import peer_standins as ps
import ternion

torch.set_num_threads(1)


def dyadic_linear(n_in, n_out, gen, scale=1.0, bias=True):
    lin = nn.Linear(n_in, n_out, bias=bias)
    with torch.no_grad():
        lin.weight.copy_(torch.round((torch.rand(n_out, n_in, generator=gen) * 2 - 1) * scale * 64) / 64)
        if bias:
            lin.bias.copy_(torch.round((torch.rand(n_out, generator=gen) * 2 - 1) * 16) / 64)
    return lin


def step_run(net, x):
    """x [B, T, n]: steps the network T times; returns (output [B, T, ...], {module path:
    outputs [B, T, n] as float32}) for every neuron module."""
    rec, hooks = {}, []
    for name, m in net.named_modules():
        if isinstance(m, (ps.Leaky, ps._NorseCell, ps._SinabsLayer)):
            rec[name] = []
            hooks.append(m.register_forward_hook(
                lambda mod, i, o, name=name: rec[name].append(o.detach().clone())))
    ps.reset_net(net)
    with torch.no_grad():
        out = torch.stack([net(x[:, t]) for t in range(x.shape[1])], 1)
    for h in hooks:
        h.remove()
    ps.reset_net(net)
    return out, {k: torch.stack(v, 1).numpy() for k, v in rec.items()}


def check(net, tmp_path, ternion_bin, n_in, T=40, B=6, p=0.3, seed=0, spiking_out=True):
    gen = torch.Generator().manual_seed(seed)
    n_in = n_in if isinstance(n_in, tuple) else (n_in,)
    x = (torch.rand(B, T, *n_in, generator=gen) < p).to(torch.float32)
    out, rec = step_run(net, x)
    model, inp, trace = tmp_path / "m.h5", tmp_path / "in.h5", tmp_path / "tr.h5"
    report = ternion.export(net, x[:, 0], model, timesteps=T)
    H.write_input(inp, spikes=x.numpy().astype(np.int8))
    j, tern = H.run_ternion(ternion_bin, model, inp, trace)
    node_of = {origin: name for name, (_, origin) in report.nodes.items()}
    total = 0
    for path, s in rec.items():
        node = node_of[path]
        if node not in tern:  # a readout (LI): compared through the predictions
            continue
        t = tern[node].reshape(s.shape)
        assert (t == s).all(), f"{path}: {(t != s).sum()} of {s.size} differ"
        total += int(s.sum())
    assert j["predictions"] == out.sum(1).argmax(-1).tolist()
    return j, total


def test_snntorch_leaky_default_and_synaptic(tmp_path, ternion_bin):
    gen = torch.Generator().manual_seed(3)
    beta = torch.rand(32, generator=gen) * 0.2 + 0.75
    net = nn.Sequential(dyadic_linear(20, 32, gen), ps.Leaky(beta=beta),  # subtract, delay
                        dyadic_linear(32, 24, gen), ps.Synaptic(alpha=0.6, beta=0.85),
                        dyadic_linear(24, 5, gen), ps.Leaky(beta=0.9, threshold=0.5,
                                                            reset_mechanism="zero"))
    j, total = check(net, tmp_path, ternion_bin, 20)
    assert total > 300
    with h5py.File(tmp_path / "m.h5") as f:
        assert f["node/metadata/from"][()].decode() == "snntorch"
        assert f["node/nodes/1/reset_delay"][()] == 1
    assert j["load_options"]["dt"] == 1e-4 and j["load_options"]["from"] == "snntorch"


def test_snntorch_without_reset_delay(tmp_path, ternion_bin):
    gen = torch.Generator().manual_seed(4)
    net = nn.Sequential(dyadic_linear(16, 24, gen, scale=1.5),
                        ps.Leaky(beta=0.9, reset_delay=False),
                        dyadic_linear(24, 4, gen), ps.Leaky(beta=0.8, reset_delay=False))
    _, total = check(net, tmp_path, ternion_bin, 16, p=0.4)
    assert total > 200


def dyadic_(m, gen, scale):
    """A Linear or Conv2d's weights and bias as multiples of 1/64 (exact sums with spikes)."""
    with torch.no_grad():
        m.weight.copy_(torch.round((torch.rand(m.weight.shape, generator=gen) * 2 - 1) * scale
                                   * 64) / 64)
        m.bias.copy_(torch.round((torch.rand(m.bias.shape, generator=gen) * 2 - 1) * 8) / 64)
    return m


def test_snntorch_recurrent_layers(tmp_path, ternion_bin):
    """RLeaky with an nn.Linear recurrent map (subtract, reset_delay), RLeaky one-to-one (V,
    zero reset: the updated membrane zeroed, unlike Leaky), RSynaptic: the recurrent input goes
    in after the decayed state and the feed-forward input, as snnTorch adds it."""
    gen = torch.Generator().manual_seed(8)
    r1 = ps.RLeaky(beta=torch.rand(24, generator=gen) * 0.2 + 0.75, linear_features=24)
    dyadic_(r1.recurrent, gen, 0.5)
    v = torch.round((torch.rand(16, generator=gen) * 2 - 1) * 32) / 64
    r2 = ps.RLeaky(beta=0.85, all_to_all=False, V=v, reset_mechanism="zero", threshold=0.5)
    r3 = ps.RSynaptic(alpha=0.6, beta=0.85, linear_features=8)
    dyadic_(r3.recurrent, gen, 0.25)
    net = nn.Sequential(dyadic_linear(20, 24, gen), r1, dyadic_linear(24, 16, gen), r2,
                        dyadic_linear(16, 8, gen), r3)
    j, total = check(net, tmp_path, ternion_bin, 20, T=60)
    assert total > 300
    with h5py.File(tmp_path / "m.h5") as f:
        edges = [tuple(e.decode() for e in row) for row in f["node/edges"][()]]
        assert ("1", "1.recurrent") in edges and ("1.recurrent", "1") in edges
        assert f["node/nodes/3.recurrent/type"][()].decode() == "Scale"
        assert f["node/nodes/5/type"][()].decode() == "CubaLIF"
    assert j["load_options"]["from"] == "snntorch"


def test_snntorch_recurrent_conv(tmp_path, ternion_bin):
    """RLeaky over a feature map with an nn.Conv2d recurrent map (kernel 3, padding 1)."""
    gen = torch.Generator().manual_seed(9)
    rc = ps.RLeaky(beta=0.8, conv2d_channels=4, kernel_size=3, threshold=0.75)
    dyadic_(rc.recurrent, gen, 0.25)
    net = nn.Sequential(dyadic_(nn.Conv2d(2, 4, 3, padding=1), gen, 1.0), rc, nn.Flatten(),
                        dyadic_linear(4 * 6 * 6, 5, gen), ps.Leaky(beta=0.9))
    _, total = check(net, tmp_path, ternion_bin, (2, 6, 6), T=30, p=0.3)
    assert total > 200


def test_snntorch_recurrent_refusals(tmp_path):
    gen = torch.Generator().manual_seed(10)
    r = ps.RLeaky(beta=0.9, linear_features=4)
    r.recurrent = nn.GRUCell(4, 4)
    with pytest.raises(ternion.ExportError, match=r"1\.recurrent \(.*GRUCell\)"):
        ternion.export(nn.Sequential(dyadic_linear(3, 4, gen), r), torch.zeros(1, 3),
                       tmp_path / "x.h5", timesteps=4)
    rs = ps.RSynaptic(alpha=0.5, beta=0.9, linear_features=4, reset_delay=False)
    with pytest.warns(UserWarning, match="reset_delay=1"):
        ternion.export(nn.Sequential(dyadic_linear(3, 4, gen), rs), torch.zeros(1, 3),
                       tmp_path / "y.h5", timesteps=4)
    with h5py.File(tmp_path / "y.h5") as f:
        assert f["node/nodes/1/reset_delay"][()] == 1


def test_norse_cells(tmp_path, ternion_bin):
    gen = torch.Generator().manual_seed(5)
    inv = torch.tensor([100.0, 125.0, 200.0, 250.0])[torch.randint(0, 4, (24,), generator=gen)]
    net = nn.Sequential(
        dyadic_linear(20, 24, gen),
        ps.LIFBoxCell(ps.P(tau_mem_inv=inv, v_leak=0.25, v_th=1.0, v_reset=-0.125)),
        dyadic_linear(24, 16, gen),
        ps.LIFCell(ps.P(tau_syn_inv=200.0, tau_mem_inv=100.0, v_leak=0.0, v_th=0.25, v_reset=0.0)),
        dyadic_linear(16, 12, gen), ps.IAFCell(ps.P(v_th=1.0, v_reset=-0.5)),
        dyadic_linear(12, 4, gen), ps.LIBoxCell(ps.P(tau_mem_inv=50.0, v_leak=0.125)))
    _, total = check(net, tmp_path, ternion_bin, 20, T=60)
    assert total > 200


def test_sinabs_layers(tmp_path, ternion_bin):
    gen = torch.Generator().manual_seed(6)
    tau = torch.tensor([4.0, 8.0, 10.0, 20.0])[torch.randint(0, 4, (24,), generator=gen)]
    net = nn.Sequential(dyadic_linear(20, 24, gen), ps.LIF(tau_mem=tau, spike_threshold=0.5),
                        dyadic_linear(24, 16, gen), ps.IAF(spike_threshold=1.0),
                        dyadic_linear(16, 5, gen), ps.ExpLeak(tau_mem=10.0))
    _, total = check(net, tmp_path, ternion_bin, 20, T=50)
    assert total > 200


def test_mixed_frameworks_refused(tmp_path):
    gen = torch.Generator().manual_seed(7)
    net = nn.Sequential(dyadic_linear(4, 4, gen), ps.Leaky(beta=0.9), dyadic_linear(4, 4, gen),
                        ps.IAF())
    with pytest.raises(ternion.ExportError, match=r"3 \(.*IAF\).*snntorch"):
        ternion.export(net, torch.zeros(1, 4), tmp_path / "x.h5", timesteps=4)
