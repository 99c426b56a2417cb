"""Shared steps of the exporter tests: calibrate BatchNorm, record every neuron's spikes in
PyTorch, run the ternion CLI with a trace, read the trace back."""
import json
import subprocess

import h5py
import numpy as np
import torch
import torch.nn as nn

import sj_standins as sj


def randomize_bn(net, gen):
    """Random affine BatchNorm parameters (so neurons fire at different rates)."""
    for m in net.modules():
        if isinstance(m, (nn.BatchNorm1d, nn.BatchNorm2d)):
            with torch.no_grad():
                m.weight.copy_(0.6 + 0.8 * torch.rand(m.weight.shape, generator=gen))
                m.bias.copy_(0.2 + 0.6 * torch.rand(m.bias.shape, generator=gen))
            m.momentum = None  # cumulative average over the calibration batches


def calibrate(net, batches):
    """BatchNorm running statistics from data (train-mode forward passes), then eval mode."""
    net.train()
    with torch.no_grad():
        for x in batches:
            sj.reset_net(net)
            net(x)
    net.eval()
    sj.reset_net(net)


def torch_spikes(net, x):
    """Forward in eval mode; returns (output, {module path: spikes [B, T, n] int8}) for every
    SpikingJelly-like neuron. The neurons see [T, B, ...] inputs."""
    rec, hooks = {}, []
    for name, m in net.named_modules():
        if isinstance(m, sj.BaseNode):
            def hook(mod, inp, out, name=name):
                T, B = out.shape[:2]
                rec[name] = out.detach().reshape(T, B, -1).transpose(0, 1).to(torch.int8).numpy()
            hooks.append(m.register_forward_hook(hook))
    sj.reset_net(net)
    with torch.no_grad():
        out = net(x)
    for h in hooks:
        h.remove()
    sj.reset_net(net)
    return out, rec


def write_input(path, data=None, spikes=None, labels=None):
    with h5py.File(path, "w") as f:
        if data is not None:
            f.create_dataset("data", data=np.asarray(data, np.float32))
        if spikes is not None:
            f.create_dataset("spikes", data=np.asarray(spikes, np.int8))
        if labels is not None:
            f.create_dataset("labels", data=np.asarray(labels, np.int64))


def run_ternion(ternion, model, inp, trace, *extra, record="spikes"):
    """`ternion run MODEL --input INP --trace TRACE --record spikes --spike-format grid --json`;
    returns (json report, {node: spikes [S, T, n] int8})."""
    cmd = [ternion, "run", str(model), "--input", str(inp), "--trace", str(trace), "--record",
           record, "--spike-format", "grid", "--json", "--no-progress", *map(str, extra)]
    p = subprocess.run(cmd, capture_output=True, text=True)
    assert p.returncode == 0, f"{' '.join(cmd)} failed:\n{p.stderr}"
    spikes = {}
    with h5py.File(trace, "r") as f:
        for node, g in f["nodes"].items():
            if "observables/spikes/data" in g:
                spikes[node] = g["observables/spikes/data"][()]
    return json.loads(p.stdout), spikes


def compare_spikes(torch_rec, tern, node_of):
    """Asserts spike-for-spike equality per neuron module; node_of maps module path -> node.
    Returns the number of spikes compared."""
    total = 0
    for path, s in torch_rec.items():
        node = node_of[path]
        assert node in tern, f"{node} ({path}) not in the trace: {sorted(tern)}"
        t = tern[node]
        assert t.shape == s.shape, f"{path}: ternion {t.shape}, torch {s.shape}"
        diff = np.argwhere(t != s)
        assert diff.size == 0, (f"{path}: {len(diff)} of {s.size} spikes differ, first at "
                                f"[sample, step, neuron] {diff[0].tolist()}")
        total += int(s.sum())
    return total
