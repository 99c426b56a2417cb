#!/usr/bin/python3
"""Benchmark: an official spiking Transformer's own PyTorch code against ternion running its export,
side by side, 1 thread, PyTorch at batch 16 (docs/benchmarks.md).

Models (built from the official repositories' model files, which this script imports; none of
their code is in this repository):
  qkformer  zhouchenlin2096/QKFormer `cifar10/model.py`, the CIFAR-10 configuration of its
            `cifar10/cifar10.yml`: 32x32 images, patch 4, 384 dims, 8 heads, 4 layers, T = 4,
            SpikingJelly 0.0.0.0.12 `clock_driven` MultiStepLIFNode with the torch backend
  sdt_v3    BICLab/Spike-Driven-Transformer-V3 `SDT_V3/Classification/Model_Base/models.py`,
            `Spiking_vit_MetaFormer_Spike_SepConv` (integer MultiSpike neurons, D = 4, T = 1):
            the repository has no CIFAR-10 configuration, so by default its smallest ImageNet
            model, `Efficient_Spiking_Transformer_t` (224x224 images, widths 24/48/96/128,
            8 heads, 1000 classes); --image and --dims change it
Weights are the official initialisation (seeded). BatchNorms get weight 1 and one bias b for the
whole model, their running statistics from train-mode passes over 16 calibration images, and b
is set by bisection so that the mean firing rate of the neuron layers (the fraction of non-zero
outputs) is --rate. Then ternion.export writes the model with BatchNorm folded, and rounds
alternate:
  * PyTorch: torch.set_num_threads(1), no_grad, reset before each forward, a batch of 16 images:
    seconds / 16 (median of --reps forwards after a warm-up);
  * ternion: `ternion run --threads 1` on 32 images: `timing.sample_ms.median`.
Medians over the rounds and their ratio are printed with the CPU model, ternion's kernel level and
PyTorch's CPU capability. To time the AVX2 paths on an AVX-512 machine run it again with
TERNION_ISA=v3 ATEN_CPU_CAPABILITY=avx2 DNNL_MAX_CPU_ISA=AVX2 OPENBLAS_CORETYPE=Haswell.

  PYTHONPATH=python nice /usr/bin/python3 bench/official_cifar.py --model qkformer \\
      --official PATH/QKFormer --spikingjelly PATH/spikingjelly-0.0.0.0.12 [--rounds 3]
"""
import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import types

import h5py
import numpy as np
import torch
import torch.nn as nn

import ternion
from ternion.tools._peers import import_checkout
from ternion.tools.check_spikingformer import stub_timm_einops


def load(a):
    stub_timm_einops()
    if a.model == "qkformer":
        import_checkout("spikingjelly", a.spikingjelly)
        import spikingjelly.clock_driven.neuron as sjn
        if sjn.cupy is None:
            sjn.cupy = object()  # lets backend='cupy' build; every neuron runs 'torch' below
        path = os.path.join(a.official, "cifar10", "model.py")
    else:
        sys.modules.setdefault("torchinfo", types.ModuleType("torchinfo"))
        path = os.path.join(a.official, "SDT_V3", "Classification", "Model_Base", "models.py")
    spec = importlib.util.spec_from_file_location(f"official_{a.model}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def build(mod, a):
    torch.manual_seed(a.seed)
    if a.model == "qkformer":
        net = mod.QKFormer(img_size_h=32, img_size_w=32, patch_size=4, embed_dims=384,
                           num_heads=8, mlp_ratios=4, in_channels=3, num_classes=10,
                           depths=4, sr_ratios=1, T=4)
        for m in net.modules():
            if hasattr(m, "backend"):
                m.backend = "torch"
    else:
        net = mod.Spiking_vit_MetaFormer_Spike_SepConv(
            img_size_h=a.image, img_size_w=a.image, patch_size=16,
            embed_dim=[int(d) for d in a.dims.split(",")], num_heads=a.heads, mlp_ratios=4,
            in_channels=3, num_classes=1000, qkv_bias=False, depths=8, sr_ratios=1)
    return net


def reset(net):
    for m in net.modules():
        if hasattr(m, "reset") and m is not net:
            m.reset()


def neuron_modules(net):
    return [m for m in net.modules() if type(m).__name__ in ("MultiStepLIFNode", "MultiSpike")]


def forward(net, x):
    reset(net)
    with torch.no_grad():
        y = net(x)
    reset(net)
    return y[0] if isinstance(y, tuple) else y


def firing_rate(net, x):
    rates, hooks = [], []
    for m in neuron_modules(net):
        hooks.append(m.register_forward_hook(
            lambda mod, i, o: rates.append(float((o != 0).float().mean()))))
    forward(net, x)
    for h in hooks:
        h.remove()
    return statistics.mean(rates), min(rates), max(rates)


def calibrate(net, x, a):
    """One BatchNorm bias for the whole model, bisected to the target mean firing rate."""
    bns = [m for m in net.modules() if isinstance(m, (nn.BatchNorm1d, nn.BatchNorm2d))]

    def with_bias(b):
        for m in bns:
            m.reset_running_stats()
            m.momentum = None
            with torch.no_grad():
                m.weight.fill_(1.0)
                m.bias.fill_(b)
        net.train()
        forward(net, x)
        net.eval()
        return firing_rate(net, x)

    lo, hi = -3.0, 3.0
    for _ in range(a.bisect):
        mid = (lo + hi) / 2
        if with_bias(mid)[0] < a.rate:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2, with_bias((lo + hi) / 2)


def torch_time(net, x, reps):
    torch.set_num_threads(1)
    forward(net, x)  # warm-up
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        forward(net, x)
        times.append(time.perf_counter() - t0)
    return statistics.median(times) / len(x) * 1e3


def ternion_time(binary, model, inp):
    p = subprocess.run([binary, "run", model, "--input", inp, "--threads", "1", "--json",
                        "--no-progress"], capture_output=True, text=True)
    if p.returncode:
        sys.exit(p.stderr)
    js = json.loads(p.stdout)
    return js["timing"]["sample_ms"]["median"], js["timing"]["kernels"], js["predictions"]


def cpu_model():
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return "unknown"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", choices=("qkformer", "sdt_v3"), required=True)
    ap.add_argument("--official", required=True, help="checkout of the official repository")
    ap.add_argument("--spikingjelly", help="SpikingJelly 0.0.0.0.12 (qkformer)")
    ap.add_argument("--ternion", default="build/ternion")
    ap.add_argument("--rate", type=float, default=0.15)
    ap.add_argument("--bisect", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--image", type=int, default=224, help="sdt_v3's image side")
    ap.add_argument("--dims", default="24,48,96,128")
    ap.add_argument("--heads", type=int, default=8)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))
    net = build(load(a), a)
    gen = torch.Generator().manual_seed(a.seed)
    size = 32 if a.model == "qkformer" else a.image
    calib = torch.rand(16, 3, size, size, generator=gen)
    x = torch.rand(16, 3, size, size, generator=gen)
    bias, (rate, rmin, rmax) = calibrate(net, calib, a)
    pred_torch = forward(net, x).argmax(1).tolist()
    tmp = tempfile.mkdtemp(prefix="ternion-official-")
    model, inp = os.path.join(tmp, "m.h5"), os.path.join(tmp, "in.h5")
    ternion.export(net, x, model)
    with h5py.File(inp, "w") as f:
        f.create_dataset("data", data=np.concatenate([x.numpy()] * 2).astype(np.float32))
    print(f"{a.model}: CPU {cpu_model()}; torch {torch.__version__} "
          f"(ATEN_CPU_CAPABILITY={os.environ.get('ATEN_CPU_CAPABILITY', 'default')}); "
          f"BatchNorm bias {bias:.4f}: neuron layers fire {rate:.3f} on average "
          f"({rmin:.3f}-{rmax:.3f})", flush=True)
    tt, tn = [], []
    for r in range(a.rounds):
        tt.append(torch_time(net, x, a.reps))
        ms, kernels, pred = ternion_time(a.ternion, model, inp)
        tn.append(ms)
        print(f"round {r}: PyTorch {tt[-1]:.2f} ms/sample (batch 16), ternion {ms:.2f} ms/sample "
              f"({kernels})", flush=True)
    same = sum(p == q for p, q in zip(pred[:16], pred_torch))
    print(f"medians: PyTorch {statistics.median(tt):.2f}, ternion {statistics.median(tn):.2f} "
          f"ms/sample; ternion {statistics.median(tt) / statistics.median(tn):.2f}x faster "
          f"({same}/16 predictions equal)")


if __name__ == "__main__":
    main()
