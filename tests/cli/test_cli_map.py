#!/usr/bin/env python3
"""`ternion map --chip dynapcnn` against sinabs-dynapcnn's documented rules, recomputed here:

- memories per chip layer (sinabs/backend/dynapcnn/dynapcnn_layer.py, memory_summary):
  kernel = c * 2^(ceil(log2(kh*kw)) + ceil(log2 f)), neuron = f * 2^(ceil(log2 H) + ceil(log2 W))
  (the convolution's output map), bias = f or 0; a Linear is a convolution whose kernel covers
  its [C, H, W] input;
- a layer fits a core when all three are within the core's memories (chips/dynapcnn.py's table);
- layers go to cores by Edmonds-Karp on the flow network source -> layers -> cores -> sink, each
  node's edges in insertion order, breadth-first (mapping.py), written again below.
The two fixed cases are the ones sinabs' docs and a run of sinabs give: cores [0, 1, 2, 5, 6]
for a five-layer 64x64 network, and 256/8192, 2048/4096, 16384/10 on cores 0, 1, 2 for a
2x32x32 one; a 16->32 3x3 convolution on 64x64 needs 131072 neuron entries and fits no core.
"""
import json
import os
from collections import deque

import numpy as np

from harness import expect_error, finish, path, run, test
from nirfile import Nir

KERNEL = [16384, 16384, 16384, 32768, 32768, 65536, 65536, 16384, 16384]
NEURON = [65536, 65536, 65536, 32768, 32768, 16384, 16384, 16384, 16384]
BIAS = [1024] * 9
LIF = dict(tau=np.float32(2.0), v_threshold=np.float32(1.0))
rng = np.random.default_rng(4)


def clog2(n):
    return int(np.ceil(np.log2(n)))


def memories(c, f, kh, kw, h, w, bias=True):
    return c * 2 ** (clog2(kh * kw) + clog2(f)), f * 2 ** (clog2(h) + clog2(w)), f if bias else 0


def sinabs_assignment(fits):
    """Edmonds-Karp as sinabs runs it; returns each layer's core, or None without a full match."""
    L, C = len(fits), len(KERNEL)
    sink = L + C + 1
    graph = [[] for _ in range(sink + 1)]  # edges: [to, cap, flow, reverse edge]

    def link(a, b):
        e, r = [b, 1, 0, None], [a, 0, 0, None]
        e[3], r[3] = r, e
        graph[a].append(e)
        graph[b].append(r)
    for i in range(L):
        link(0, i + 1)
    for i, cores in enumerate(fits):
        for k in cores:
            link(i + 1, L + 1 + k)
    for k in range(C):
        link(L + 1 + k, sink)
    while True:
        pred, q = [None] * len(graph), deque([0])
        while q:
            u = q.popleft()
            for e in graph[u]:
                if pred[e[0]] is None and e[0] != 0 and e[1] > e[2]:
                    pred[e[0]] = (u, e)
                    q.append(e[0])
        if pred[sink] is None:
            break
        v = sink
        while v != 0:
            u, e = pred[v]
            e[2] += 1
            e[3][2] -= 1
            v = u
    cores = [next((e[0] - L - 1 for e in graph[i + 1] if e[2] == 1), None) for i in range(L)]
    return None if None in cores else cores


def fits_of(mem):
    k, n, b = mem
    return [i for i in range(9) if k <= KERNEL[i] and n <= NEURON[i] and b <= BIAS[i]]


def conv_params(ci, co, hw, k=3, p=1, stride=1):
    return dict(weight=rng.normal(0, .1, (co, ci, k, k)).astype(np.float32),
                bias=np.zeros(co, np.float32), stride=np.array([stride, stride]),
                padding=np.array([p, p]), dilation=np.array([1, 1]), groups=1,
                input_shape=np.array([hw, hw]))


def chain(fname, in_shape, layers):
    """layers: ("conv", ci, co, hw, k, p) / ("pool", k, typ) / ("flat", C, H, W) / ("fc", n_in, n_out)
    / ("lif",); writes the NIR file and returns its node names in order."""
    n, prev, names = Nir().node("input", "Input", shape=np.array(in_shape)), "input", []
    for i, l in enumerate(layers):
        name = f"{l[0]}{i}"
        if l[0] == "conv":
            n.node(name, "Conv2d", **conv_params(*l[1:]))
        elif l[0] == "lif":
            n.node(name, "ternion.SJLIF", **LIF)
        elif l[0] == "pool":
            n.node(name, l[2] if len(l) > 2 else "SumPool2d", kernel_size=np.array([l[1], l[1]]),
                   stride=np.array([l[1], l[1]]), padding=np.array([0, 0]))
        elif l[0] == "flat":
            n.node(name, "Flatten", start_dim=0, end_dim=-1, input_type=np.array(l[1:]))
        elif l[0] == "fc":
            n.node(name, "Affine", weight=rng.normal(0, .1, (l[2], l[1])).astype(np.float32),
                   bias=np.zeros(l[2], np.float32))
        n.edge(prev, name)
        prev = name
        names.append(name)
    n.node("output", "Output").edge(prev, "output")
    n.write(path(fname))
    return names


def mapped(fname):
    return json.loads(run("map", path(fname), "--chip", "dynapcnn", "--json").stdout)


def five_layers():
    return [("conv", 2, 8, 64), ("lif",), ("pool", 2), ("conv", 8, 16, 32), ("lif",), ("pool", 2),
            ("conv", 16, 64, 16), ("lif",), ("pool", 2), ("conv", 64, 64, 8), ("lif",),
            ("flat", 64, 8, 8), ("fc", 4096, 10), ("lif",)]


@test
def five_layer_network_takes_sinabs_cores():
    chain("five.h5", [2, 64, 64], five_layers())
    j = mapped("five.h5")
    got = [(l["kernel_memory"], l["neuron_memory"], l["core"]) for l in j["layers"]]
    assert got == [(256, 32768, 0), (2048, 16384, 1), (16384, 16384, 2), (65536, 4096, 5),
                   (65536, 10, 6)], got
    assert j["layers"][4]["nodes"] == ["flat11", "fc12", "lif13"] and j["layers"][4]["kernel"] == [8, 8]
    assert j["layers"][0]["fits_cores"] == [0, 1, 2, 3, 4] and j["layers"][3]["fits_cores"] == [5, 6]


@test
def small_network_memories_as_sinabs_reports():
    chain("small.h5", [2, 32, 32], [("conv", 2, 8, 32), ("lif",), ("pool", 2), ("conv", 8, 16, 16),
                                    ("lif",), ("pool", 2), ("flat", 16, 8, 8), ("fc", 1024, 10),
                                    ("lif",)])
    j = mapped("small.h5")
    got = [(l["kernel_memory"], l["neuron_memory"], l["core"]) for l in j["layers"]]
    assert got == [(256, 8192, 0), (2048, 4096, 1), (16384, 10, 2)], got
    text = run("map", path("small.h5"), "--chip", "dynapcnn").stdout
    assert "conv0 > lif1 > pool2" in text and "flat6 > fc7 > lif8" in text


@test
def random_chains_match_the_rules_and_sinabs_matching():
    for trial in range(40):
        hw, c, layers, want = 2 ** int(rng.integers(3, 7)), int(rng.integers(1, 5)), [], []
        for _ in range(int(rng.integers(1, 10))):
            f = int(rng.choice([4, 8, 16, 32, 64, 96]))
            k = int(rng.choice([1, 3, 5]))
            layers += [("conv", c, f, hw, k, k // 2), ("lif",)]
            want.append(memories(c, f, k, k, hw, hw))
            if hw > 4 and rng.random() < 0.5:
                layers.append(("pool", 2))
                hw //= 2
            c = f
        chain(f"r{trial}.h5", [layers[0][1], layers[0][3], layers[0][3]], layers)
        fits = [fits_of(m) for m in want]
        cores = sinabs_assignment(fits) if all(fits) else None
        p = run("map", path(f"r{trial}.h5"), "--chip", "dynapcnn", "--json", check=False)
        if cores is None:
            assert p.returncode == 1 and p.stderr.count("\n") == 1, (trial, p.stderr)
            continue
        assert p.returncode == 0, (trial, p.stderr)
        j = json.loads(p.stdout)
        assert [(l["kernel_memory"], l["neuron_memory"], l["bias_memory"]) for l in j["layers"]] == want
        assert [l["fits_cores"] for l in j["layers"]] == fits
        assert [l["core"] for l in j["layers"]] == cores, (trial, cores)


@test
def a_layer_too_big_for_every_core_names_node_need_and_capacity():
    chain("big.h5", [16, 64, 64], [("conv", 16, 32, 64), ("lif",)])
    expect_error(["map", path("big.h5"), "--chip", "dynapcnn"], "big.h5: nodes/conv0: needs 131072 "
                 "neuron-memory entries; the largest core holds 65536 (32 x 2^(6+6))")
    chain("eleven.h5", [2, 16, 16], [x for _ in range(11) for x in (("conv", 2, 2, 16), ("lif",))])
    expect_error(["map", path("eleven.h5"), "--chip", "dynapcnn"], "no valid mapping",
                 "one chip layer per core")


@test
def layers_outside_the_cores_limits_are_refused():
    cases = {
        "maxpool.h5": ([("conv", 2, 4, 16), ("lif",), ("pool", 2, "MaxPool2d")], "nodes/pool2: max pooling"),
        "pool3.h5": ([("conv", 2, 4, 18), ("lif",), ("pool", 3)], "nodes/pool2: pooling 3x3"),
        "k17.h5": ([("conv", 2, 4, 32, 17, 0), ("lif",)], "nodes/conv0: kernel 17x17 is larger"),
        "pad8.h5": ([("conv", 2, 4, 32, 17, 8), ("lif",)], "nodes/conv0/padding: padding above the chip's 7"),
        "nolif.h5": ([("conv", 2, 4, 16), ("pool", 2)], "nodes/pool1: pooling before"),
        "rect.h5": ([("conv", 2, 4, 8, 3, 1), ("lif",), ("pool", 2), ("flat", 4, 4, 4), ("fc", 64, 3),
                     ("lif",)], None),
    }
    for fname, (layers, message) in cases.items():
        shape = [layers[0][1], layers[0][3], layers[0][3]]
        chain(fname, shape, layers)
        if message:
            expect_error(["map", path(fname), "--chip", "dynapcnn"], message)
        else:
            assert mapped(fname)["layers"][1]["kernel"] == [4, 4]
    expect_error(["map", path("rect.h5"), "--chip", "tpu"], "option --chip: unknown chip 'tpu'",
                 "dynapcnn")
    os.makedirs(path("chipdir.json"), exist_ok=True)
    expect_error(["map", path("rect.h5"), "--chip", path("chipdir.json")],
                 "chipdir.json: is a directory")
    assert "dynapcnn" in run("map", "--chips").stdout


finish()
