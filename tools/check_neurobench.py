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
    ap.add_argument("--models", default="mlp,rleaky,bsa_digits,ssa_digits",
                    help="comma-separated: mlp, rleaky, bsa_digits, ssa_digits, bsa_fmnist")
    ap.add_argument("--images", type=int, default=360,
                    help="test images for the bundled Transformers (digits: 360 in all)")
    a = ap.parse_args()
    sys.path[:0] = [a.neurobench, a.snntorch]
    stub_tqdm()

    models = a.models.split(",")
    if "mlp" in models:
        check_mlp(a)
    if "rleaky" in models:
        check_rleaky(a)
    for m in models:
        if m not in ("mlp", "rleaky"):
            check_transformer(a, m)


def check_mlp(a):
    import snntorch as snn
    from neurobench.benchmarks import Benchmark
    from neurobench.metrics.static import ConnectionSparsity, Footprint
    from neurobench.metrics.workload import (ActivationSparsity, MembraneUpdates,
                                             SynapticOperations)
    from neurobench.models import SNNTorchModel

    print("== snnTorch Linear-Leaky-Linear-Leaky")
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


def close(x, y, rel=1e-6):
    return abs(float(x) - float(y)) <= rel * max(1.0, abs(float(x)), abs(float(y)))


def per_layer_synops(names):
    """NeuroBench's own SynapticOperations, one instance per connection layer: each subclass
    hands the metric a view of the model that holds only that layer's hook."""
    from neurobench.metrics.workload import SynapticOperations

    class View:
        def __init__(self, hook):
            self.connection_hooks = [hook]

    classes = []
    for i, name in enumerate(names):
        def call(self, model, preds, data, i=i):
            return SynapticOperations.__call__(self, View(model.connection_hooks[i]), preds, data)
        classes.append(type(f"SynOps[{name}]", (SynapticOperations,), {"__call__": call}))
    return classes


def run_ternion(a, model, data, labels, extra=()):
    with tempfile.TemporaryDirectory() as d:
        inp = os.path.join(d, "in.h5")
        with h5py.File(inp, "w") as f:
            f["data" if data.dtype != np.int8 else "spikes"] = data
            f["labels"] = labels.astype(np.int64)
        cmd = [a.ternion, "run", model, "--input", inp, "--count", "neurobench", "--json",
               "--no-progress", *extra]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode:
            sys.exit(r.stderr)
        return json.loads(r.stdout)


def table(rows):
    """rows: (label, NeuroBench, ternion); prints them and returns whether all are equal."""
    ok = True
    print(f"  {'figure':38} {'NeuroBench':>16} {'ternion':>16}")
    for k, v, w in rows:
        eq = close(v, w)
        ok &= eq
        print(f"  {k:38} {float(v):16.6f} {float(w):16.6f}{'' if eq else '  DIFFERS'}")
    return ok


def check_rleaky(a):
    """snnTorch Linear -> RLeaky (all-to-all Linear recurrence) -> Linear -> Leaky."""
    import snntorch as snn
    from neurobench.benchmarks import Benchmark
    from neurobench.metrics.workload import (ActivationSparsity, MembraneUpdates,
                                             SynapticOperations)
    from neurobench.models import SNNTorchModel

    print("== snnTorch Linear-RLeaky(Linear recurrence)-Linear-Leaky")
    rng = np.random.default_rng(1)
    S, T, n_in, n_h, n_out, dt = a.samples, a.timesteps, 20, 16, 4, 1e-3
    w0 = (rng.integers(-24, 25, (n_h, n_in)) / 32).astype(np.float32)
    wr = (rng.integers(-12, 13, (n_h, n_h)) / 32).astype(np.float32)
    w1 = (rng.integers(-24, 25, (n_out, n_h)) / 32).astype(np.float32)
    wr[:3, :3] = 0
    b0, b1 = 0.75, 0.5
    # Reset by subtraction: snnTorch's reset-to-zero RLeaky evaluates its state function, and so
    # the recurrent Linear, twice per step (_base_zero), which NeuroBench would count twice.
    rl = snn.RLeaky(beta=b0, linear_features=n_h, init_hidden=True, reset_mechanism="zero",
                    reset_delay=False)
    lk = snn.Leaky(beta=b1, init_hidden=True, output=True, reset_mechanism="zero",
                   reset_delay=False)
    net = nn.Sequential(nn.Linear(n_in, n_h, bias=False), rl, nn.Linear(n_h, n_out, bias=False),
                        lk)
    with torch.no_grad():
        net[0].weight.copy_(torch.from_numpy(w0))
        rl.recurrent.weight.copy_(torch.from_numpy(wr))
        rl.recurrent.bias.zero_()
        net[2].weight.copy_(torch.from_numpy(w1))
    x = (rng.random((S, T, n_in)) < 0.3).astype(np.float32)
    y = np.arange(S) % n_out
    loader = torch.utils.data.DataLoader(
        torch.utils.data.TensorDataset(torch.from_numpy(x), torch.from_numpy(y)), batch_size=4)
    model = SNNTorchModel(net)
    names = [n for n, m in net.named_modules() if isinstance(m, nn.Linear)]
    per = per_layer_synops(names)
    bench = Benchmark(model, loader, [], [lambda spk: spk.sum(1).argmax(-1)],
                      [[], [SynapticOperations, ActivationSparsity, MembraneUpdates, *per]])
    theirs = bench.run(quiet=True)

    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "m.h5")
        with h5py.File(path, "w") as f:
            f["version"] = "1.0.0"
            g = f.create_group("node")
            g["type"] = "NIRGraph"
            nodes = g.create_group("nodes")

            def lif(grp, n, beta):
                tau = np.full(n, dt / (1 - beta), np.float32)
                grp["type"] = "LIF"
                for k, v in dict(tau=tau, r=tau / dt, v_leak=np.zeros(n), v_threshold=np.ones(n),
                                 v_reset=np.zeros(n)).items():
                    grp[k] = np.asarray(v, np.float32)

            nodes.create_group("input")["type"] = "Input"
            nodes["input/shape"] = np.array([n_in])
            nodes.create_group("fc0")["type"] = "Linear"
            nodes["fc0/weight"] = w0
            rnn = nodes.create_group("rnn")
            rnn["type"] = "NIRGraph"
            rn = rnn.create_group("nodes")
            rn.create_group("input")["type"] = "Input"
            rn["input/shape"] = np.array([n_h])
            lif(rn.create_group("lif"), n_h, b0)
            rn.create_group("w_rec")["type"] = "Linear"
            rn["w_rec/weight"] = wr
            rn.create_group("output")["type"] = "Output"
            rn["output/shape"] = np.array([n_h])
            rnn["edges"] = np.array([("input", "lif"), ("lif", "w_rec"), ("w_rec", "lif"),
                                     ("lif", "output")], dtype=h5py.string_dtype())
            nodes.create_group("fc1")["type"] = "Linear"
            nodes["fc1/weight"] = w1
            lif(nodes.create_group("lif1"), n_out, b1)
            nodes.create_group("output")["type"] = "Output"
            nodes["output/shape"] = np.array([n_out])
            g["edges"] = np.array([("input", "fc0"), ("fc0", "rnn"), ("rnn", "fc1"),
                                   ("fc1", "lif1"), ("lif1", "output")],
                                  dtype=h5py.string_dtype())
        j = run_ternion(a, path, x.astype(np.int8), y, ["--dt", str(dt)])
    ours, layers = j["neurobench"], {l["name"]: l for l in j["layers"]}
    tl = {"0": "fc0", "1.recurrent": "rnn.w_rec", "2": "fc1"}
    # snnTorch's reset-to-zero RLeaky evaluates its state function, and so the recurrent Linear,
    # twice per step (rleaky.py, _base_zero calls _base_state_function twice, each time with the
    # previous step's spikes): NeuroBench's hook sees two identical calls. The figures below
    # halve that layer's (one product per step, as the network computes it); the raw ones are
    # printed too.
    rows, twice = [], {"Effective_ACs": 0.0, "Effective_MACs": 0.0, "Dense": 0.0}
    for cls, name in zip(per, names):
        r = dict(theirs[cls.__name__])
        c = layers[tl[name]]["counted_ops"]
        if name == "1.recurrent":
            print(f"  raw NeuroBench {name}: {r} (two calls per step)")
            for k in twice:
                twice[k] = r[k] / 2
                r[k] /= 2
        rows += [(f"{name} Effective_ACs", r["Effective_ACs"], c.get("ac", 0)),
                 (f"{name} Effective_MACs", r["Effective_MACs"], c.get("mac", 0))]
    so = theirs["SynapticOperations"]
    print(f"  raw NeuroBench SynapticOperations: {so}")
    rows += [(f"{k} (recurrent once)", so[k] - twice[k], ours[k]) for k in twice]
    rows += [("ActivationSparsity", theirs["ActivationSparsity"], ours["ActivationSparsity"]),
             ("MembraneUpdates", theirs["MembraneUpdates"], ours["MembraneUpdates"])]
    return table(rows)


if __name__ == "__main__":
    main()
