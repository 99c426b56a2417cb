#!/usr/bin/env python3
"""ternion's `--count neurobench` against NeuroBench itself, on the same snnTorch network.

A local check, not part of the test suite (NeuroBench and snnTorch are not Debian packages):
give it source checkouts of NeuroBench (github.com/NeuroBench/neurobench) and snnTorch
(github.com/jeshraghian/snntorch):

    /usr/bin/python3 tools/check_neurobench.py --neurobench ~/src/neurobench \\
        --snntorch ~/src/snntorch --ternion build/ternion

It builds Linear-Leaky-Linear-Leaky in snnTorch (subtract-free zero reset, dyadic weights so
every sum is exact), runs NeuroBench's Benchmark with SynapticOperations, ActivationSparsity,
MembraneUpdates, ConnectionSparsity and Footprint on random spike trains, writes the same
network as a NIR file (snnTorch's Leaky: tau = dt / (1 - beta), r = tau / dt, Euler), runs
`ternion run --count neurobench --json` on the same spikes and prints both tools' figures.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import types

import h5py
import numpy as np
import torch
import torch.nn as nn

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))


def stub_tqdm():
    """NeuroBench shows a progress bar with tqdm; a silent stand-in when it is missing."""
    try:
        import tqdm  # noqa: F401
    except ImportError:
        m = types.ModuleType("tqdm")
        m.tqdm = lambda it=None, *a, **k: it
        sys.modules["tqdm"] = m


def write_nir(path, layers, dt):
    """layers: [(weight, beta)], each Linear (no bias) then a Leaky with threshold 1."""
    with h5py.File(path, "w") as f:
        f["version"] = "1.0.0"
        g = f.create_group("node")
        g["type"] = "NIRGraph"
        nodes = g.create_group("nodes")
        nodes.create_group("input")["type"] = "Input"
        nodes["input/shape"] = np.array([layers[0][0].shape[1]])
        edges, prev = [], "input"
        for i, (w, beta) in enumerate(layers):
            fc, lif = f"fc{i}", f"lif{i}"
            nodes.create_group(fc)["type"] = "Linear"
            nodes[f"{fc}/weight"] = w
            n = w.shape[0]
            tau = np.full(n, dt / (1 - beta), np.float32)
            lg = nodes.create_group(lif)
            lg["type"] = "LIF"
            for k, v in dict(tau=tau, r=tau / dt, v_leak=np.zeros(n), v_threshold=np.ones(n),
                             v_reset=np.zeros(n)).items():
                lg[k] = np.asarray(v, np.float32)
            edges += [(prev, fc), (fc, lif)]
            prev = lif
        nodes.create_group("output")["type"] = "Output"
        nodes["output/shape"] = np.array([layers[-1][0].shape[0]])
        edges.append((prev, "output"))
        g["edges"] = np.array(edges, dtype=h5py.string_dtype())


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--neurobench", required=True)
    ap.add_argument("--snntorch", required=True)
    ap.add_argument("--ternion", default=os.path.join(ROOT, "build", "ternion"))
    ap.add_argument("--samples", type=int, default=16)
    ap.add_argument("--timesteps", type=int, default=20)
    a = ap.parse_args()
    sys.path[:0] = [a.neurobench, a.snntorch]
    stub_tqdm()
    import snntorch as snn
    from neurobench.benchmarks import Benchmark
    from neurobench.metrics.static import ConnectionSparsity, Footprint
    from neurobench.metrics.workload import (ActivationSparsity, MembraneUpdates,
                                             SynapticOperations)
    from neurobench.models import SNNTorchModel

    rng = np.random.default_rng(0)
    S, T, n_in, n_h, n_out, dt = a.samples, a.timesteps, 24, 16, 5, 1e-3
    w0 = (rng.integers(-24, 25, (n_h, n_in)) / 32).astype(np.float32)
    w1 = (rng.integers(-24, 25, (n_out, n_h)) / 32).astype(np.float32)
    w0[0, :6] = 0  # a few zero weights for ConnectionSparsity
    b0, b1 = 0.75, 0.5
    lk = dict(init_hidden=True, reset_mechanism="zero", reset_delay=False)
    net = nn.Sequential(nn.Linear(n_in, n_h, bias=False), snn.Leaky(beta=b0, **lk),
                        nn.Linear(n_h, n_out, bias=False),
                        snn.Leaky(beta=b1, output=True, **lk))
    with torch.no_grad():
        net[0].weight.copy_(torch.from_numpy(w0))
        net[2].weight.copy_(torch.from_numpy(w1))
    x = (rng.random((S, T, n_in)) < 0.3).astype(np.float32)
    y = np.arange(S) % n_out
    loader = torch.utils.data.DataLoader(
        torch.utils.data.TensorDataset(torch.from_numpy(x), torch.from_numpy(y)), batch_size=4)
    bench = Benchmark(SNNTorchModel(net), loader, [], [lambda spk: spk.sum(1).argmax(-1)],
                      [[ConnectionSparsity, Footprint],
                       [SynapticOperations, ActivationSparsity, MembraneUpdates]])
    theirs = bench.run(quiet=True)

    with tempfile.TemporaryDirectory() as d:
        write_nir(os.path.join(d, "m.h5"), [(w0, b0), (w1, b1)], dt)
        with h5py.File(os.path.join(d, "in.h5"), "w") as f:
            f["spikes"] = x.astype(np.int8)
            f["labels"] = y.astype(np.int64)
        r = subprocess.run([a.ternion, "run", os.path.join(d, "m.h5"), "--input",
                            os.path.join(d, "in.h5"), "--dt", str(dt), "--count", "neurobench",
                            "--json", "--no-progress"], capture_output=True, text=True)
        if r.returncode:
            sys.exit(r.stderr)
        ours = json.loads(r.stdout)["neurobench"]
    so = theirs["SynapticOperations"]
    pairs = [("Effective_ACs", so["Effective_ACs"]), ("Effective_MACs", so["Effective_MACs"]),
             ("Dense", so["Dense"]), ("ActivationSparsity", theirs["ActivationSparsity"]),
             ("MembraneUpdates", theirs["MembraneUpdates"]),
             ("ConnectionSparsity", theirs["ConnectionSparsity"]),
             ("Footprint", theirs["Footprint"])]
    print("Footprint also counts snnTorch's neuron buffers (beta, threshold, ...), which a NIR")
    print("file does not carry: NeuroBench's figure is larger by those bytes.")
    print(f"{'metric':20} {'NeuroBench':>14} {'ternion':>14}")
    for k, v in pairs:
        print(f"{k:20} {float(v):14.6f} {float(ours[k]):14.6f}"
              f"{'' if abs(float(v) - float(ours[k])) <= 1e-9 * max(1, abs(float(v))) else '  differs'}")


if __name__ == "__main__":
    main()
