"""ternion's `--count lemaire --profile lemaire` against SpikingJelly's estimate_lemaire_energy.

A local check, not part of the test suite (SpikingJelly is not a Debian package): give it a
source checkout (or `git archive` export) of SpikingJelly with
`spikingjelly/activation_based/op_counter/analytical_energy` (github.com/fangwei123456/spikingjelly,
checked at afb1322):

    PYTHONPATH=python /usr/bin/python3 -m ternion.tools.check_lemaire \\
        --spikingjelly ~/src/spikingjelly --ternion build/ternion

It builds small networks with SpikingJelly's single-step LIFNode (torch backend, eval mode),
feeds each one sample of random spikes step by step (a batch of 1, as ternion counts one module
call per sample and step), writes the same weights as a ternion model file, runs both
estimators on the same spikes and prints both totals, their parts and the relative difference.
Debian 12's torch (1.13) lacks a few names this SpikingJelly imports at module level but never
calls in a no-grad forward pass; minimal stand-ins are installed for them when missing.
"""
import argparse
import importlib
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

from ternion.tools._peers import import_checkout, ternion_binary


def old_torch_stand_ins():
    """Names newer torch has and SpikingJelly imports; unused by a no-grad forward pass."""
    import torch.autograd.graph as graph
    import torch.library as library
    import torch.nn.modules.module as mm

    if not hasattr(torch._C, "_ExcludeDispatchKeyGuard"):
        class _ExcludeGuard:
            """1.13's ExcludeDispatchKeyGuard holds while it lives; newer torch's is a context
            manager under a private name."""

            def __init__(self, keys):
                self.keys = keys

            def __enter__(self):
                self.guard = torch._C.ExcludeDispatchKeyGuard(self.keys)

            def __exit__(self, *exc):
                del self.guard

        torch._C._ExcludeDispatchKeyGuard = _ExcludeGuard
    if not hasattr(graph, "register_multi_grad_hook"):
        graph.register_multi_grad_hook = None  # only for tensors that require grad
    if not hasattr(library, "custom_op"):
        class _Op:
            def __init__(self, f):
                self.f = f

            def __call__(self, *a, **k):
                return self.f(*a, **k)

            def __getattr__(self, name):
                return lambda *a, **k: (lambda g: g)

        library.custom_op = lambda *a, **k: _Op
    for name in ("register_fake", "register_autograd"):
        if not hasattr(library, name):
            setattr(library, name, lambda *a, **k: (lambda g: g))
    try:
        importlib.import_module("torch.utils.module_tracker")
    except ImportError:
        class ModuleTracker:
            """The module stack (`parents`, "Global" always in it) from global forward hooks."""

            def __init__(self):
                self.parents = {"Global"}
                self._names = {}

            def _get_mod_name(self, mod):
                return self._names.setdefault(mod, f"{type(mod).__name__}#{len(self._names)}")

            def _maybe_set_engine_callback(self):
                pass

            def _fw_pre_hook(self, mod, inputs):
                self._get_append_fn(mod, self._get_mod_name(mod), False)()

            def _fw_post_hook(self, mod, inputs, output):
                self._get_pop_fn(mod, self._get_mod_name(mod), False)()

            def __enter__(self):
                self._hooks = (mm.register_module_forward_pre_hook(self._fw_pre_hook),
                               mm.register_module_forward_hook(self._fw_post_hook))
                return self

            def __exit__(self, *exc):
                for h in self._hooks:
                    h.remove()

        mod = types.ModuleType("torch.utils.module_tracker")
        mod.ModuleTracker = ModuleTracker
        sys.modules["torch.utils.module_tracker"] = mod


class Steps(nn.Module):
    """Runs a single-step network over x [T, 1, ...], one call per step."""

    def __init__(self, net):
        super().__init__()
        self.net = net

    def forward(self, x):
        return torch.stack([self.net(x[t]) for t in range(x.shape[0])])


def nir_file(fname, nodes, edges):
    with h5py.File(fname, "w") as f:
        f["version"] = "1.0.0"
        g = f.create_group("node")
        g["type"] = "NIRGraph"
        ng = g.create_group("nodes")
        for name, typ, params in nodes:
            n = ng.create_group(name)
            n["type"] = typ
            for k, v in params.items():
                n[k] = v
        g["edges"] = np.array(edges, dtype=h5py.string_dtype())


def sj_lif_params(lif):
    p = dict(tau=np.float32(lif.tau), v_threshold=np.float32(lif.v_threshold))
    if lif.v_reset is None:
        p["reset_mode"] = "subtract"
    else:
        p["v_reset"] = np.float32(lif.v_reset)
    return p


def models(neuron, T, rng):
    """(name, SpikingJelly network, ternion nodes, edges, input spikes [T, 1, ...])."""
    out = []
    for soft in (False, True):
        lif = neuron.LIFNode(tau=2.0, v_reset=None if soft else 0.0)
        fc = nn.Linear(8, 4)
        with torch.no_grad():
            fc.weight.copy_(torch.tensor(rng.normal(0.3, 0.5, (4, 8)), dtype=torch.float32))
            fc.bias.copy_(torch.tensor(rng.normal(0.2, 0.1, 4), dtype=torch.float32))
        nodes = [("input", "Input", dict(shape=np.array([8]))),
                 ("fc", "Affine", dict(weight=fc.weight.detach().numpy(), bias=fc.bias.detach().numpy())),
                 ("lif", "ternion.SJLIF", sj_lif_params(lif)),
                 ("output", "Output", dict(shape=np.array([4])))]
        edges = [("input", "fc"), ("fc", "lif"), ("lif", "output")]
        x = (rng.random((T, 1, 8)) < 0.3).astype(np.float32)
        out.append((f"Linear(8, 4) + LIF ({'soft' if soft else 'hard'} reset)",
                    nn.Sequential(fc, lif), nodes, edges, x))
    conv = nn.Conv2d(2, 3, 3, padding=1, bias=False)
    fc = nn.Linear(108, 5, bias=False)
    with torch.no_grad():
        conv.weight.copy_(torch.tensor(rng.normal(0.25, 0.4, (3, 2, 3, 3)), dtype=torch.float32))
        fc.weight.copy_(torch.tensor(rng.normal(0.2, 0.3, (5, 108)), dtype=torch.float32))
    l1, l2 = neuron.LIFNode(tau=2.0), neuron.LIFNode(tau=2.0)
    net = nn.Sequential(conv, l1, nn.Flatten(), fc, l2)
    one = np.array([1, 1])
    nodes = [("input", "Input", dict(shape=np.array([2, 6, 6]))),
             ("conv", "Conv2d", dict(weight=conv.weight.detach().numpy(), stride=one, padding=one,
                                     dilation=one, groups=1, input_shape=np.array([6, 6]))),
             ("lif1", "ternion.SJLIF", sj_lif_params(l1)),
             ("flat", "Flatten", dict(start_dim=0, end_dim=-1, input_type=np.array([3, 6, 6]))),
             ("fc", "Linear", dict(weight=fc.weight.detach().numpy())),
             ("lif2", "ternion.SJLIF", sj_lif_params(l2)),
             ("output", "Output", dict(shape=np.array([5])))]
    edges = [("input", "conv"), ("conv", "lif1"), ("lif1", "flat"), ("flat", "fc"),
             ("fc", "lif2"), ("lif2", "output")]
    x = (rng.random((T, 1, 2, 6, 6)) < 0.25).astype(np.float32)
    out.append(("Conv2d(2, 3, 3x3) + LIF + Linear(108, 5) + LIF", net, nodes, edges, x))
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python3 -m ternion.tools.check_lemaire",
                                 description=__doc__.split("\n")[0])
    ap.add_argument("--spikingjelly", help="source checkout of SpikingJelly (default: import it)")
    ap.add_argument("--ternion", default=os.path.join("build", "ternion"),
                    help="the ternion binary (default: build/ternion)")
    ap.add_argument("--timesteps", type=int, default=6)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args(argv)
    ternion_binary(a.ternion)
    old_torch_stand_ins()
    import_checkout("spikingjelly", a.spikingjelly)
    from spikingjelly.activation_based import functional, neuron
    from spikingjelly.activation_based.op_counter.analytical_energy import estimate_lemaire_energy

    rng = np.random.default_rng(a.seed)
    worst = 0.0
    for name, net, nodes, edges, x in models(neuron, a.timesteps, rng):
        model = Steps(net).eval()
        functional.reset_net(model)
        with torch.no_grad():
            sj = estimate_lemaire_energy(model, torch.tensor(x))
        with tempfile.TemporaryDirectory() as d:
            nir_file(os.path.join(d, "m.h5"), nodes, edges)
            with h5py.File(os.path.join(d, "in.h5"), "w") as f:
                f["spikes"] = np.moveaxis(x, 0, 1).astype(np.int8)  # [samples, T, ...]
            r = subprocess.run([a.ternion, "run", os.path.join(d, "m.h5"), "--input",
                                os.path.join(d, "in.h5"), "--count", "lemaire", "--profile",
                                "lemaire", "--json", "--no-progress"],
                               capture_output=True, text=True)
            if r.returncode:
                sys.exit(r.stderr)
            ours = json.loads(r.stdout)["lemaire"]
        rel = abs(ours["total_pj"] - sj.total_pj) / max(1.0, abs(sj.total_pj))
        worst = max(worst, rel)
        print(f"{name}, T = {a.timesteps}:")
        print(f"  SpikingJelly: {sj.total_pj:.6f} pJ = ops {sj.breakdown_pj['ops_pj']:.6f} + "
              f"addressing {sj.breakdown_pj['addressing_pj']:.6f} + memory "
              f"{sj.breakdown_pj['memory_pj']:.6f}")
        print(f"  ternion:      {ours['total_pj']:.6f} pJ = ops {ours['ops_pj']:.6f} + "
              f"addressing {ours['addressing_pj']:.6f} + memory {ours['memory_pj']:.6f}")
        print(f"  relative difference {rel:.3g}")
        print(f"  SpikingJelly counts {sj.counts} buffers {sj.buffer_sizes_bytes}")
    return 0 if worst < 1e-9 else 1


if __name__ == "__main__":
    sys.exit(main())
