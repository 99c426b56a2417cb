#!/usr/bin/python3
"""Writes the Spikformer block of the PyTorch reference script spikformer_block.py (passed with
--script; see docs/benchmarks.md) as a ternion model
file plus its Bernoulli(rate) input spike file, so `ternion run` and the PyTorch script time
exactly the same work (same weights, same BatchNorm calibration, same input spikes).

The PyTorch script is executed in-process (runpy, with the given arguments) and its `model` and
`x` are taken from it: nothing about the block is re-implemented here except the export.
  block:  ternion.SSA (q/k/v Linear+BN+LIF, attention LIF v_th 0.5, scale 0.125)
          -> Affine proj (BN folded) -> ternion.SJLIF -> Identity (x + y)
          -> Affine fc1 -> SJLIF -> Affine fc2 -> SJLIF -> Identity (x1 + m) -> Output
  input:  /spikes int8 [B, T, N, D] (the script's x[T, B, N, D], transposed).
Also writes <prefix>.json with the script's firing rates and counts for comparison.

Usage: /usr/bin/python3 bench/make_spikformer_block.py --out /tmp/blk --rate 0.2 --B 1 [--repeat 20]
       [--script path/to/spikformer_block.py] [--N 64 --D 384 --heads 12 --T 4]
"""
import argparse
import io
import json
import os
import runpy
import sys
from contextlib import redirect_stdout

ap = argparse.ArgumentParser()
ap.add_argument("--out", required=True, help="output prefix: <out>_model.h5, <out>_input.h5")
ap.add_argument("--script", default="/work/shared/peers/perf/spikformer_block.py")
ap.add_argument("--rate", type=float, default=0.2)
ap.add_argument("--B", type=int, default=1)
ap.add_argument("--N", type=int, default=64)
ap.add_argument("--D", type=int, default=384)
ap.add_argument("--heads", type=int, default=12)
ap.add_argument("--T", type=int, default=4)
ap.add_argument("--seed", type=int, default=0)
ap.add_argument("--bn_bias", type=float, default=0.5)
ap.add_argument("--repeat", type=int, default=1,
                help="write the B samples this many times (steady-state timing of a batch)")
args = ap.parse_args()

argv = [args.script, "--rate", str(args.rate), "--B", str(args.B), "--N", str(args.N), "--D",
        str(args.D), "--heads", str(args.heads), "--T", str(args.T), "--seed", str(args.seed),
        "--bn_bias", str(args.bn_bias), "--repeats", "1", "--warmup", "0", "--threads", "1"]
saved = sys.argv
sys.argv = argv
buf = io.StringIO()
with redirect_stdout(buf):
    g = runpy.run_path(args.script, run_name="__main__")
sys.argv = saved
model, x, res = g["model"], g["x"], g["res"]

import h5py  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402


def fold(m):
    """LinBNLIF -> folded (weight (out, in), bias (out)) float32, BN in eval mode."""
    w = m.lin.weight.detach().double()
    b = m.lin.bias.detach().double()
    bn = m.bn
    s = bn.weight.detach().double() / torch.sqrt(bn.running_var.double() + bn.eps)
    return ((w * s[:, None]).float().numpy(),
            ((b - bn.running_mean.double()) * s + bn.bias.detach().double()).float().numpy())


lif = dict(tau=np.float32(2.0), decay_input=np.int64(1), v_threshold=np.float32(1.0),
           v_reset=np.float32(0.0))
nodes = {"input": ("Input", dict(shape=np.array([args.N, args.D], np.int64)))}
a = dict(heads=np.int64(args.heads), lif_tau=np.float32(2.0), lif_decay_input=np.int64(1),
         lif_v_threshold=np.float32(1.0), lif_v_reset=np.float32(0.0), attn_tau=np.float32(2.0),
         attn_v_threshold=np.float32(0.5), scale=np.float32(model.attn.scale))
for nm in ("q", "k", "v"):
    a[nm + "_weight"], a[nm + "_bias"] = fold(getattr(model.attn, nm))
nodes["attn"] = ("ternion.SSA", a)
for name, m in (("proj", model.attn.proj), ("fc1", model.mlp.fc1), ("fc2", model.mlp.fc2)):
    w, b = fold(m)
    nodes[name] = ("Affine", dict(weight=w, bias=b))
    nodes[name + "_lif"] = ("ternion.SJLIF", dict(lif))
nodes["res1"] = ("ternion.Identity", {})
nodes["res2"] = ("ternion.Identity", {})
nodes["output"] = ("Output", dict(shape=np.array([args.N, args.D], np.int64)))
edges = [("input", "attn"), ("attn", "proj"), ("proj", "proj_lif"), ("input", "res1"),
         ("proj_lif", "res1"), ("res1", "fc1"), ("fc1", "fc1_lif"), ("fc1_lif", "fc2"),
         ("fc2", "fc2_lif"), ("res1", "res2"), ("fc2_lif", "res2"), ("res2", "output")]

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
from ternion.exporter.graph import write_model  # noqa: E402

write_model(args.out + "_model.h5", nodes, edges)
with h5py.File(args.out + "_input.h5", "w") as f:
    sp = x.numpy().astype(np.int8).transpose(1, 0, 2, 3)
    f.create_dataset("spikes", data=np.concatenate([sp] * args.repeat, axis=0))
json.dump(dict(torch_script=res, argv=argv), open(args.out + ".json", "w"))
print(json.dumps(dict(model=args.out + "_model.h5", input=args.out + "_input.h5",
                      lif_firing_rates=res["lif_firing_rates"],
                      linear_acs_per_sample=res["linear_acs_per_sample"])))
