#!/usr/bin/env python3
"""Writes the fuzzers' seed corpus: small valid models, inputs, weights and profiles.

  /usr/bin/python3 tests/fuzz/make_seeds.py tests/fuzz/corpus   (the committed corpus; byte-identical reruns)
"""
import os
import shutil
import sys

import h5py
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..")
out = sys.argv[1] if len(sys.argv) > 1 else "seeds"
for d in ("model", "input", "profile", "weights"):
    os.makedirs(os.path.join(out, d), exist_ok=True)
F32 = np.float32


def nir(fname, nodes, edges, fixed_strings=False):
    with h5py.File(fname, "w") as f:
        f["version"] = "1.0.0"
        g = f.create_group("node")
        g["type"] = "NIRGraph"
        ng = g.create_group("nodes")
        for name, (typ, params) in nodes.items():
            n = ng.create_group(name)
            n["type"] = typ
            for k, v in params.items():
                n.create_dataset(k, data=v, chunks=True if np.ndim(v) else None)
        g["edges"] = np.array(edges, dtype="S16" if fixed_strings else h5py.string_dtype())
        g.create_group("metadata")["timesteps"] = np.int64(4)


n = 4
nir(os.path.join(out, "model", "lif.h5"),
    {"input": ("Input", {"shape": np.array([3])}), "fc": ("Linear", {"weight": np.ones((n, 3), F32)}),
     "lif": ("LIF", {"tau": np.full(n, 2e-3, F32), "r": np.ones(n, F32), "v_leak": np.zeros(n, F32),
                     "v_threshold": np.ones(n, F32)}),
     "output": ("Output", {"shape": np.array([n])})},
    [("input", "fc"), ("fc", "lif"), ("lif", "output")])
nir(os.path.join(out, "model", "conv.h5"),
    {"input": ("Input", {"shape": np.array([1, 4, 4])}),
     "conv": ("Conv2d", {"weight": np.ones((2, 1, 3, 3), F32), "stride": np.array([1, 1]),
                         "padding": np.array([1, 1]), "groups": np.int64(1)}),
     "if": ("IF", {"r": F32(1), "v_threshold": F32(1)}),
     "pool": ("MaxPool2d", {"kernel_size": np.array([2, 2])}),
     "flat": ("Flatten", {}), "output": ("Output", {})},
    [("input", "conv"), ("conv", "if"), ("if", "pool"), ("pool", "flat"), ("flat", "output")],
    fixed_strings=True)
d = 8
nir(os.path.join(out, "model", "ssa.h5"),
    {"input": ("Input", {"shape": np.array([2, d])}),
     "attn": ("ternion.SSA", {"q_weight": np.ones((d, d), F32), "k_weight": np.ones((d, d), F32),
                              "v_weight": np.ones((d, d), F32), "heads": np.int64(2)}),
     "mean": ("ternion.TokenMean", {}), "output": ("Output", {})},
    [("input", "attn"), ("attn", "mean"), ("mean", "output")])
with h5py.File(os.path.join(out, "input", "spikes.h5"), "w") as f:
    f.create_dataset("spikes", data=np.eye(3, dtype=np.int8)[None].repeat(2, 0), chunks=(1, 3, 3))
    f["labels"] = np.array([0, 1])
with h5py.File(os.path.join(out, "input", "data.h5"), "w") as f:
    f["data"] = np.linspace(-1, 1, 6, dtype=F32).reshape(2, 3)
with h5py.File(os.path.join(out, "weights", "cat.h5"), "w") as f:
    f["W_A"] = np.ones((d, 2), F32)
    f["W_V"] = np.eye(d, dtype=F32)
    f["W_O"] = np.eye(d, dtype=F32)
    f["b_V"] = np.zeros(d, F32)
with h5py.File(os.path.join(out, "weights", "softmax.h5"), "w") as f:
    for k in ("W_Q", "W_K", "W_V", "W_O"):
        f[k] = np.eye(d, dtype=F32)
    f["heads"] = np.int64(2)
for p in sorted(os.listdir(os.path.join(ROOT, "hw", "profiles"))):
    shutil.copy(os.path.join(ROOT, "hw", "profiles", p), os.path.join(out, "profile", p))


def array_seeds(out):
    """IDX images (raw and gzip), .npy spikes, and event streams (.npz as SpikingJelly saves
    them, structured .npy as Tonic gives them); the events' first byte picks format and rule."""
    import gzip
    import io
    import struct
    for d in ("idx", "npy", "events"):
        os.makedirs(os.path.join(out, d), exist_ok=True)
    img = (np.arange(2 * 4 * 4) * 17 % 256).astype(np.uint8)
    idx = bytes([0, 0, 8, 3]) + struct.pack(">III", 2, 4, 4) + img.tobytes()
    with open(os.path.join(out, "idx", "raw"), "wb") as f:
        f.write(idx)
    with open(os.path.join(out, "idx", "gz"), "wb") as f:
        f.write(gzip.compress(idx, mtime=0))
    np.save(os.path.join(out, "npy", "spikes.npy"), (np.arange(24).reshape(2, 3, 4) % 3 - 1).astype(np.int8))
    np.save(os.path.join(out, "npy", "floats.npy"), np.ones((2, 2, 3), np.float32))
    t = np.array([0, 3, 5, 9, 12, 20], np.int64)
    xy = np.array([1, 4, 7, 2, 9, 3], np.int64)
    buf = io.BytesIO()
    np.savez(buf, t=t, x=xy, y=xy[::-1].copy(), p=np.array([0, 1, 1, 0, 1, 0], np.int64))
    with open(os.path.join(out, "events", "npz"), "wb") as f:
        f.write(bytes([0x30]) + buf.getvalue())
    tonic = np.zeros(6, dtype=[("x", "<i2"), ("y", "<i2"), ("t", "<i8"), ("p", "<i1")])
    tonic["x"], tonic["y"], tonic["t"], tonic["p"] = xy, xy[::-1], t, [1, 0, 1, 1, 0, 0]
    buf = io.BytesIO()
    np.save(buf, tonic)
    with open(os.path.join(out, "events", "npy"), "wb") as f:
        f.write(bytes([0x25]) + buf.getvalue())


array_seeds(out)
print(f"seeds in {out}")
