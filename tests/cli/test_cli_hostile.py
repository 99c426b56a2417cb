#!/usr/bin/env python3
"""A hostile corpus, generated here: every node type's parameters with the wrong type, rank,
shape or range, NaN/Inf, values beyond float32, absurd declared sizes; malformed metadata and
edge lists; input layouts; bad options; output paths that collide with inputs. Every case must
fail with exit 1 and exactly one stderr line that names the file and the field (or the option),
leave no output file or temporary behind and leave every input byte for byte unchanged.

A few valid files close to the edge (fixed-length string edge lists, float-stored integers)
must run.

  /usr/bin/python3 tests/cli/test_cli_hostile.py build/ternion
"""
import hashlib
import json
import os
import shutil
import struct

import h5py
import numpy as np

from harness import TMP, finish, path, run, test

F32 = np.float32


class Huge:
    """A dataset declared with `shape` but never written: a few KB on disk."""

    def __init__(self, shape, dtype="f4"):
        self.shape, self.dtype = shape, dtype


def put(g, name, v):
    if isinstance(v, Huge):
        chunk = tuple(min(d, 1024) for d in v.shape)
        g.create_dataset(name, shape=v.shape, dtype=v.dtype, chunks=chunk)
    elif isinstance(v, str):
        g[name] = v
    else:
        g.create_dataset(name, data=v)


def write_nir(fname, nodes, edges, meta=None, edges_raw=None):
    with h5py.File(fname, "w") as f:
        f["version"] = "1.0.0"
        g = f.create_group("node")
        g["type"] = "NIRGraph"
        ng = g.create_group("nodes")
        for name, (typ, params) in nodes.items():
            n = ng.create_group(name)
            n["type"] = typ
            for k, v in params.items():
                put(n, k, v)
        if edges_raw is not None:
            put(g, "edges", edges_raw)
        else:
            g["edges"] = np.array(edges, dtype=h5py.string_dtype())
        if meta:
            m = g.create_group("metadata")
            for k, v in meta.items():
                put(m, k, v)


def spikes(fname, shape, labels=None, seed=1):
    rng = np.random.default_rng(seed)
    with h5py.File(fname, "w") as f:
        f["spikes"] = (rng.random(shape) < 0.3).astype(np.int8)
        if labels is not None:
            f["labels"] = np.asarray(labels, np.int64)


# ------------------------------------------------------------------ base models
# Each: (nodes, edges, input shape per sample, classes). Small enough to run in milliseconds.

def chain(*names):
    return [(a, b) for a, b in zip(names, names[1:])]


def neuron_model(typ, params, n=8, n_in=6):
    w = np.full((n, n_in), 0.25, F32)
    nodes = {"input": ("Input", {"shape": np.array([n_in])}),
             "fc": ("Linear", {"weight": w}),
             "cell": (typ, params),
             "output": ("Output", {"shape": np.array([n])})}
    return nodes, chain("input", "fc", "cell", "output"), (n_in,), n


def neurons(n=8):
    full = lambda v: np.full(n, v, F32)  # noqa: E731
    return {
        "LIF": {"tau": full(2e-3), "r": full(1.0), "v_leak": full(0.0), "v_threshold": full(1.0),
                "v_reset": full(0.0)},
        "LI": {"tau": full(2e-3), "r": full(1.0), "v_leak": full(0.0)},
        "IF": {"r": full(1.0), "v_threshold": full(1.0), "v_reset": full(0.0)},
        "I": {"r": full(1.0)},
        "CubaLIF": {"tau_syn": full(2e-3), "tau_mem": full(4e-3), "r": full(1.0), "v_leak": full(0.0),
                    "v_threshold": full(1.0), "v_reset": full(0.0), "w_in": full(1.0)},
        "Threshold": {"threshold": full(0.5)},
        "ternion.SJLIF": {"tau": F32(2.0), "decay_input": np.int64(1), "v_threshold": F32(1.0),
                          "v_reset": F32(0.0)},
        "ternion.TernaryLIF": {"decay": F32(0.5), "v_threshold": F32(1.0)},
    }


def conv2d_model(**conv):
    p = {"weight": np.full((4, 2, 3, 3), 0.1, F32), "bias": np.zeros(4, F32),
         "stride": np.array([1, 1]), "padding": np.array([1, 1]), "dilation": np.array([1, 1]),
         "groups": np.int64(1)}
    p.update(conv)
    nodes = {"input": ("Input", {"shape": np.array([2, 6, 6])}),
             "conv": ("Conv2d", p),
             "if": ("IF", {"r": F32(1.0), "v_threshold": F32(1.0), "v_reset": F32(0.0)}),
             "pool": ("SumPool2d", {"kernel_size": np.array([2, 2]), "stride": np.array([2, 2]),
                                    "padding": np.array([0, 0])}),
             "flat": ("Flatten", {"start_dim": np.int64(0), "end_dim": np.int64(-1)}),
             "fc": ("Affine", {"weight": np.full((3, 36), 0.1, F32), "bias": np.zeros(3, F32)}),
             "output": ("Output", {"shape": np.array([3])})}
    return nodes, chain("input", "conv", "if", "pool", "flat", "fc", "output"), (2, 6, 6), 3


def conv1d_model():
    p = {"weight": np.full((3, 2, 3), 0.1, F32), "stride": np.array([1]),
         "padding": np.array([1]), "dilation": np.array([1]), "groups": np.int64(1)}
    nodes = {"input": ("Input", {"shape": np.array([2, 10])}),
             "conv": ("Conv1d", p),
             "if": ("IF", {"r": F32(1.0), "v_threshold": F32(1.0), "v_reset": F32(0.0)}),
             "flat": ("Flatten", {"start_dim": np.int64(0), "end_dim": np.int64(-1)}),
             "fc": ("Linear", {"weight": np.full((4, 30), 0.1, F32)}),
             "output": ("Output", {"shape": np.array([4])})}
    return nodes, chain("input", "conv", "if", "flat", "fc", "output"), (2, 10), 4


def attention_model(typ):
    d = 8
    p = {"q_weight": np.full((d, d), 0.2, F32), "k_weight": np.full((d, d), 0.2, F32),
         "v_weight": np.full((d, d), 0.2, F32), "q_bias": np.zeros(d, F32), "heads": np.int64(2)}
    if typ == "ternion.SSA":
        p.update({"lif_tau": F32(2.0), "attn_tau": F32(2.0), "scale": F32(0.125)})
    if typ == "ternion.BSA":
        p.update({"qk_decay": F32(0.5), "out_v_threshold": F32(0.5)})
    nodes = {"input": ("Input", {"shape": np.array([4, d])}),
             "attn": (typ, p),
             "mean": ("ternion.TokenMean", {}),
             "output": ("Output", {"shape": np.array([d])})}
    return nodes, chain("input", "attn", "mean", "output"), (4, d), d


def scale_model():
    nodes = {"input": ("Input", {"shape": np.array([5])}),
             "sc": ("Scale", {"scale": np.full(5, 0.5, F32)}),
             "output": ("Output", {"shape": np.array([5])})}
    return nodes, chain("input", "sc", "output"), (5,), 5


# ------------------------------------------------------------------ the corpus

CASES = []  # (label, build(dir) -> (args, expect_file, expect_field, inputs, outputs))


def sha(p):
    return hashlib.sha256(open(p, "rb").read()).hexdigest()


def model_case(label, model, mutate, field, extra=(), meta=None, also=None, dt=True):
    """A run of `model` (after `mutate(nodes, edges, meta)`) that must be refused on `field`."""
    def build(d):
        nodes, edges, shape, classes = model()
        nodes = {k: (t, dict(p)) for k, (t, p) in nodes.items()}
        m = dict(meta or {})
        raw = mutate(nodes, edges, m)
        mf, inp, tr = os.path.join(d, "model.h5"), os.path.join(d, "in.h5"), os.path.join(d, "trace.h5")
        write_nir(mf, nodes, edges, m, edges_raw=raw)
        spikes(inp, (2, 4, *shape), labels=[0, classes - 1])
        args = ["run", mf, "--input", inp, *(["--dt", "1e-3"] if dt else []), "--no-progress",
                "--trace", tr, *extra]
        return args, mf, field, [mf, inp], [tr], also
    CASES.append((label, build))


def set_param(node, param, value):
    def mutate(nodes, edges, meta):
        if value is None:
            del nodes[node][1][param]
        else:
            nodes[node][1][param] = value
    return mutate


def bad_values(n):
    """Mutations every numeric parameter must refuse, by name."""
    return {
        "string": "abc",
        "nan": np.full(n, np.nan, F32),
        "inf": np.full(n, np.inf, F32),
        "ninf": np.float64(-np.inf),
        "f32overflow": np.full(n, 1e300),
        "absurd": Huge((545_000_000,)),
        "wrong_len": np.ones(n + 3, F32),
        "compound": np.zeros(n, dtype=[("a", "f4"), ("b", "i4")]),
    }


def add_param_cases(label, model, node, params, n):
    for p in params:
        for kind, v in bad_values(n).items():
            if kind == "wrong_len" and n == 1:
                v = np.ones(3, F32)
            # A wrong length may be blamed on the first parameter read, naming this one too.
            field = f"nodes/{node}/" if kind == "wrong_len" else f"nodes/{node}/{p}"
            model_case(f"{label}.{p}.{kind}", model, set_param(node, p, v), field, also=p)


# Neuron parameters: every parameter of every neuron type.
for typ, params in neurons().items():
    per_neuron = typ not in ("ternion.SJLIF", "ternion.TernaryLIF")
    add_param_cases(typ, (lambda t=typ, ps=params: neuron_model(t, ps)), "cell", list(params),
                    8 if per_neuron else 1)
# Range errors of neuron parameters.
for typ, p, v in [("LIF", "tau", np.full(8, -1e-3, F32)), ("LIF", "tau", np.zeros(8, F32)),
                  ("CubaLIF", "tau_syn", np.zeros(8, F32)), ("LI", "tau", np.full(8, -2.0, F32)),
                  ("ternion.SJLIF", "tau", F32(0.0)), ("ternion.SJLIF", "decay_input", np.int64(7)),
                  ("ternion.TernaryLIF", "decay", F32(1.5)),
                  ("ternion.TernaryLIF", "v_threshold", F32(-1.0))]:
    model_case(f"{typ}.{p}.range{len(CASES)}", lambda t=typ: neuron_model(t, neurons()[t]),
               set_param("cell", p, v), f"nodes/cell/{p}")
# A missing required parameter.
for typ, p in [("LIF", "tau"), ("LIF", "v_threshold"), ("CubaLIF", "tau_mem"), ("Threshold", "threshold")]:
    model_case(f"{typ}.{p}.missing", lambda t=typ: neuron_model(t, neurons()[t]),
               set_param("cell", p, None), f"nodes/cell/{p}")

# Linear / Affine / Scale.
add_param_cases("Linear", lambda: neuron_model("IF", neurons()["IF"]), "fc", ["weight"], 48)
add_param_cases("Affine", conv2d_model, "fc", ["weight", "bias"], 3)
add_param_cases("Scale", scale_model, "sc", ["scale"], 5)
for label, v in [("rank1", np.ones(48, F32)), ("rank3", np.ones((8, 6, 1), F32)),
                 ("empty", np.ones((0, 6), F32)), ("in_mismatch", np.ones((8, 7), F32))]:
    model_case(f"Linear.weight.{label}", lambda: neuron_model("IF", neurons()["IF"]),
               set_param("fc", "weight", v), "nodes/fc/weight")

# Conv2d: every parameter.
for p, v in [("stride", np.array([], np.int64)), ("stride", np.array([0, 1])),
             ("stride", np.array([1, 1, 1])), ("stride", np.array([1.5, 1])),
             ("dilation", np.array([], np.int64)), ("dilation", np.array([0, 0])),
             ("padding", np.array([], np.int64)), ("padding", np.array([-1, 0])),
             ("padding", np.array([1, 1, 1])), ("padding", "diagonal"),
             ("groups", F32(1.5)), ("groups", np.int64(3)), ("groups", np.int64(0)),
             ("groups", np.float64(1e300)), ("groups", np.array([1, 1])),
             ("weight", np.ones((0, 2, 3, 3), F32)), ("weight", np.ones((4, 2, 0, 3), F32)),
             ("weight", np.ones((4, 2, 3), F32)), ("weight", np.ones((4, 2, 9, 9), F32)),
             ("weight", np.full((4, 2, 3, 3), np.nan, F32)), ("weight", Huge((1 << 16, 1 << 16, 3, 3))),
             ("weight", Huge((400_000_000, 1, 1, 1))),
             ("bias", np.ones(5, F32)), ("bias", np.full(4, 1e300)), ("bias", "x")]:
    model_case(f"Conv2d.{p}.{len(CASES)}", lambda pp={p: v}: conv2d_model(**pp), lambda *a: None,
               f"nodes/conv/{p}")
# Conv1d: empty and short arrays (used to crash).
for p, v in [("stride", np.array([], np.int64)), ("dilation", np.array([], np.int64)),
             ("padding", np.array([], np.int64)), ("stride", np.array([1, 1])),
             ("dilation", np.array([1, 2])), ("stride", np.array([0])), ("dilation", np.array([-1])),
             ("weight", np.ones((3, 2), F32)), ("weight", np.ones((3, 2, 0), F32)),
             ("groups", F32(0.5))]:
    model_case(f"Conv1d.{p}.{len(CASES)}", conv1d_model, set_param("conv", p, v), f"nodes/conv/{p}")
# Pooling and Flatten.
for p, v in [("kernel_size", np.array([], np.int64)), ("kernel_size", np.array([0, 2])),
             ("kernel_size", np.array([2, 2, 2])), ("kernel_size", np.array([9, 9])),
             ("stride", np.array([], np.int64)), ("stride", np.array([0, 0])),
             ("padding", np.array([-1, -1])), ("kernel_size", None)]:
    model_case(f"SumPool2d.{p}.{len(CASES)}", conv2d_model, set_param("pool", p, v), f"nodes/pool/{p}")
for p, v in [("start_dim", F32(0.5)), ("start_dim", np.int64(7)), ("end_dim", F32(np.nan)),
             ("start_dim", "zero")]:
    model_case(f"Flatten.{p}.{len(CASES)}", conv2d_model, set_param("flat", p, v), f"nodes/flat/{p}")

# Attention nodes.
for typ in ("ternion.SSA", "ternion.SDSA", "ternion.BSA"):
    short = typ.split(".")[1]
    for p, v in [("q_weight", np.ones(8, F32)), ("k_weight", np.ones((8, 7), F32)),
                 ("v_weight", np.full((8, 8), np.inf, F32)), ("q_bias", np.ones(3, F32)),
                 ("q_weight", Huge((100_000, 100_000))), ("heads", np.int64(3)),
                 ("heads", F32(1.5)), ("heads", np.int64(0)), ("heads", 9.3e18),
                 ("q_bn_running_var", np.ones(5, F32)),
                 ("q_bn_running_var", Huge((545_000_000,)))]:
        model_case(f"{short}.{p}.{len(CASES)}", lambda t=typ: attention_model(t),
                   set_param("attn", p, v), f"nodes/attn/{p}")
    prefixes = {"ternion.SSA": ["lif_", "attn_"], "ternion.SDSA": ["lif_", "attn_"],
                "ternion.BSA": []}[typ]
    for pre in prefixes:
        for p, v in [("tau", np.float64(1e300)), ("tau", F32(-1)), ("v_threshold", np.float64(1e300)),
                     ("decay_input", np.int64(2))]:
            model_case(f"{short}.{pre}{p}.{len(CASES)}", lambda t=typ: attention_model(t),
                       set_param("attn", pre + p, v), f"nodes/attn/{pre}{p}")
    if typ == "ternion.SSA":
        for v in (np.float64(1e300), np.float64(np.nan), "big"):
            model_case(f"SSA.scale.{len(CASES)}", lambda: attention_model("ternion.SSA"),
                       set_param("attn", "scale", v), "nodes/attn/scale")
    if typ == "ternion.BSA":
        for p, v in [("qk_decay", F32(2.0)), ("qk_v_threshold", np.float64(1e300)),
                     ("out_v_threshold", F32(0.0)), ("out_decay", F32(np.nan))]:
            model_case(f"BSA.{p}.{len(CASES)}", lambda: attention_model("ternion.BSA"),
                       set_param("attn", p, v), f"nodes/attn/{p}")

# Node types and groups.
model_case("type.unknown", lambda: neuron_model("IF", neurons()["IF"]),
           lambda n, e, m: n.__setitem__("cell", ("Hyperbolic", {})), "nodes/cell/type")
model_case("input.shape.zero", lambda: neuron_model("IF", neurons()["IF"]),
           set_param("input", "shape", np.array([0])), "nodes/input/shape")
model_case("input.shape.absurd", lambda: neuron_model("IF", neurons()["IF"]),
           set_param("input", "shape", np.array([1 << 20, 1 << 20])), "nodes/input/shape")
model_case("input.shape.float", lambda: neuron_model("IF", neurons()["IF"]),
           set_param("input", "shape", np.array([5.5])), "nodes/input/shape")


# Edges.
def edges_case(label, mutate_edges, raw=None):
    def mutate(nodes, edges, meta):
        mutate_edges(edges)
        return raw
    model_case(f"edges.{label}", lambda: neuron_model("IF", neurons()["IF"]), mutate, "edges")


edges_case("duplicate", lambda e: e.append(("input", "fc")))
edges_case("unknown_target", lambda e: e.append(("cell", "nowhere")))
edges_case("unknown_source", lambda e: e.append(("ghost", "cell")))
edges_case("three_columns", lambda e: None, raw=np.array([["input", "fc", "x"]], dtype=h5py.string_dtype()))
edges_case("numeric", lambda e: None, raw=np.array([[0, 1], [1, 2]]))
edges_case("absurd", lambda e: None, raw=Huge((400_000_000, 2), h5py.string_dtype()))


# Metadata.
def meta_case(label, key, value, field):
    model_case(f"metadata.{label}", lambda: neuron_model("IF", neurons()["IF"]),
               lambda n, e, m: m.__setitem__(key, value), field, dt=False)


for label, v in [("1e12", np.float64(1e12)), ("2p31", np.int64(2 ** 31)), ("2p62", np.int64(2 ** 62)),
                 ("zero", np.int64(0)), ("negative", np.int64(-5)), ("fraction", np.float64(2.5)),
                 ("nan", np.float64(np.nan)), ("array", np.array([4, 4]))]:
    # --timesteps not given: T comes from the file, and the file is blamed.
    def build_meta(d, v=v):
        nodes, edges, shape, classes = neuron_model("IF", neurons()["IF"])
        mf, inp, tr = (os.path.join(d, x) for x in ("model.h5", "in.h5", "trace.h5"))
        write_nir(mf, nodes, edges, {"timesteps": v})
        with h5py.File(inp, "w") as f:
            f["data"] = np.full((2, *shape), 0.5, F32)
        args = ["run", mf, "--input", inp, "--no-progress", "--trace", tr]
        return args, mf, "metadata/timesteps", [mf, inp], [tr]
    CASES.append((f"metadata.timesteps.{label}", build_meta))
meta_case("dt.nan", "dt", np.float64(np.nan), "metadata/dt")
meta_case("dt.negative", "dt", np.float64(-1e-3), "metadata/dt")
meta_case("discretization", "discretization", "sideways", "metadata/discretization")
meta_case("reset", "reset", "bounce", "metadata/reset")
meta_case("from.int", "from", np.int64(3), "metadata/from")
meta_case("discretization.int", "discretization", np.int64(1), "metadata/discretization")


# The same keys as attributes of /node/metadata (the other place NIR files keep them): a value
# of another type (or several values) is refused naming the key; it was taken as "not given".
def meta_attr_case(label, key, value):
    def build(d):
        nodes, edges, shape, classes = neuron_model("IF", neurons()["IF"])
        mf, inp, tr = (os.path.join(d, x) for x in ("model.h5", "in.h5", "trace.h5"))
        write_nir(mf, nodes, edges)
        with h5py.File(mf, "r+") as f:
            f["node"].require_group("metadata").attrs[key] = value
        spikes(inp, (2, 4, *shape), labels=[0, classes - 1])
        args = ["run", mf, "--input", inp, "--no-progress", "--trace", tr]
        return args, mf, f"/node/metadata/{key}: must be", [mf, inp], [tr]
    CASES.append((f"metadata.attr.{label}", build))


for key, value in [("from", np.int64(3)), ("discretization", np.int64(1)), ("reset", np.int64(0)),
                   ("encoding", np.float64(1.0)), ("dt", "0.001"), ("timesteps", "4"),
                   ("from", np.array([b"snntorch", b"norse"]))]:
    meta_attr_case(f"{key}.{np.asarray(value).dtype.kind}{np.asarray(value).ndim}", key, value)


# Input files.
def input_case(label, write_input, field, extra=("--timesteps", "3"), patch=None):
    """An IF model run on the input file write_input(f, shape, classes) writes, then `patch`
    changes (its path)."""
    def build(d):
        nodes, edges, shape, classes = neuron_model("IF", neurons()["IF"])
        mf, inp, tr = (os.path.join(d, x) for x in ("model.h5", "in.h5", "trace.h5"))
        write_nir(mf, nodes, edges)
        with h5py.File(inp, "w") as f:
            write_input(f, shape, classes)
        if patch:
            patch(inp)
        args = ["run", mf, "--input", inp, "--no-progress", "--trace", tr, *extra]
        return args, inp, field, [mf, inp], [tr]
    CASES.append((f"input.{label}", build))


def spk(f, shape, n=2, T=4, dtype=np.int8, value=1):
    f["spikes"] = np.full((n, T, *shape), value, dtype)


input_case("none", lambda f, s, c: f.create_dataset("other", data=np.zeros(3)), "/spikes")
# float and bool spike tensors are accepted when every value is -1, 0 or 1; 0.5 is not
input_case("spikes.float", lambda f, s, c: spk(f, s, dtype=F32, value=0.5), "/spikes")
input_case("spikes.string", lambda f, s, c: f.create_dataset("spikes", data=np.array([b"1"] * 48).reshape(2, 4, 6)), "/spikes")
input_case("spikes.value3", lambda f, s, c: spk(f, s, value=3), "/spikes")
input_case("spikes.rank2", lambda f, s, c: f.create_dataset("spikes", data=np.zeros((2, 6), np.int8)), "/spikes")
input_case("spikes.shape", lambda f, s, c: f.create_dataset("spikes", data=np.zeros((2, 4, 7), np.int8)), "/spikes")
input_case("spikes.absurd", lambda f, s, c: put(f, "spikes", Huge((1 << 20, 1 << 10, 6), "i1")), "/spikes")
input_case("spikes.empty", lambda f, s, c: f.create_dataset("spikes", data=np.zeros((0, 4, 6), np.int8)), "/spikes")
input_case("data.nan", lambda f, s, c: f.create_dataset("data", data=np.full((2, 6), np.nan, F32)), "/data")
input_case("data.string", lambda f, s, c: f.create_dataset("data", data=np.array([b"ab", b"cd"])), "/data")
input_case("data.absurd", lambda f, s, c: put(f, "data", Huge((1 << 24, 6))), "/data")
for label, labels in [("99", [0, 99]), ("8", [0, 8]), ("negative", [0, -1]), ("length", [0, 1, 2]),
                      ("float", [0.5, 1.0]), ("rank2", [[0], [1]])]:
    def wl(f, s, c, labels=labels):
        spk(f, s)
        f["labels"] = np.asarray(labels)
    input_case(f"labels.{label}", wl, "/labels")


def chunk_too_big(f, s, c):
    """A chunked /spikes whose chunk dimension is patched to exceed the dataset's."""
    f.create_dataset("spikes", data=np.zeros((2, 4, 6), np.int8), chunks=(2, 4, 6))


def patch_chunk(fname):
    # Layout message v3, chunked: the chunk dims (2, 4, 6) and the element size 1 as 4-byte
    # integers; the first chunk dimension becomes 60000.
    b = bytearray(open(fname, "rb").read())
    pat = struct.pack("<IIII", 2, 4, 6, 1)
    k = b.find(pat)
    assert k >= 0 and b.find(pat, k + 1) < 0, "chunk layout message not found once"
    b[k:k + 4] = struct.pack("<I", 60000)
    open(fname, "wb").write(bytes(b))


input_case("chunk_larger_than_dataset", chunk_too_big, "/spikes", extra=(), patch=patch_chunk)


# Options.
def option_case(label, extra, option, trace=True):
    def build(d):
        nodes, edges, shape, classes = neuron_model("IF", neurons()["IF"])
        mf, inp, tr = (os.path.join(d, x) for x in ("model.h5", "in.h5", "trace.h5"))
        write_nir(mf, nodes, edges)
        spikes(inp, (2, 4, *shape), labels=[0, 1])
        args = ["run", mf, "--input", inp, "--no-progress", *(["--trace", tr] if trace else []), *extra]
        return args, None, "--" + option, [mf, inp], [tr]
    CASES.append((f"option.{label}", build))


for label, extra, opt in [
        ("max_trace_neg", ["--max-trace-bytes", "-1"], "max-trace-bytes"),
        ("max_trace_small", ["--max-trace-bytes", "10"], "max-trace-bytes"),
        ("max_memory_tiny", ["--max-memory", "1K"], "max-memory"),
        ("max_memory_neg", ["--max-memory", "-5G"], "max-memory"),
        ("max_memory_unit", ["--max-memory", "8X"], "max-memory"),
        ("max_memory_text", ["--max-memory", "lots"], "max-memory"),
        ("timesteps_zero", ["--timesteps", "0"], "timesteps"),
        ("timesteps_huge", ["--timesteps", "1000000000000"], "timesteps"),
        ("threads_zero", ["--threads", "0"], "threads"),
        ("samples_zero", ["--samples", "0"], "samples"),
        ("first_out", ["--first", "99"], "first"),
        ("engine", ["--engine", "quantum"], "engine"),
        ("dt_neg", ["--dt", "-1"], "dt"),
        ("dt_huge", ["--dt", "1e300"], "dt"),
        ("record", ["--record", "everything"], "record"),
        ("record_steps", ["--record-steps", "99"], "record-steps"),
        ("record_samples", ["--record-samples", "7"], "record-samples"),
        ("spike_format", ["--spike-format", "morse"], "spike-format"),
        ("encoding", ["--encoding", "morse"], "encoding"),
        ("reset", ["--reset", "bounce"], "reset"),
        ("count", ["--count", "roughly"], "count")]:
    option_case(label, extra, opt)


# Profile files.
def profile_case(label, text, field):
    def build(d):
        nodes, edges, shape, classes = neuron_model("IF", neurons()["IF"])
        mf, inp, tr, pf = (os.path.join(d, x) for x in ("model.h5", "in.h5", "trace.h5", "chip.json"))
        write_nir(mf, nodes, edges)
        spikes(inp, (2, 4, *shape))
        open(pf, "w").write(text)
        args = ["run", mf, "--input", inp, "--no-progress", "--trace", tr, "--profile", pf]
        return args, pf, field, [mf, inp, pf], [tr]
    CASES.append((f"profile.{label}", build))


GOOD_PROFILE = {"name": "chip", "description": "test", "ops": {"ac": {"value": 0.9, "source": "t"}}}
profile_case("overflow", json.dumps(GOOD_PROFILE).replace("0.9", "1e400"), "ops.ac.value")
profile_case("not_json", "{ name: chip", "")
profile_case("negative", json.dumps(GOOD_PROFILE).replace("0.9", "-1"), "ops.ac.value")
profile_case("string", json.dumps(GOOD_PROFILE).replace("0.9", '"cheap"'), "ops.ac.value")
profile_case("unknown_key", json.dumps({**GOOD_PROFILE, "colour": "red"}), "colour")


# Output paths that collide with inputs or cannot be written.
def collision_case(label, make_target, option="trace", profile=False):
    def build(d):
        nodes, edges, shape, classes = neuron_model("IF", neurons()["IF"])
        mf, inp, pf = (os.path.join(d, x) for x in ("model.h5", "in.h5", "chip.json"))
        write_nir(mf, nodes, edges)
        spikes(inp, (2, 4, *shape))
        open(pf, "w").write(json.dumps(GOOD_PROFILE))
        target, named = make_target(d, mf, inp, pf)
        args = ["run", mf, "--input", inp, "--no-progress", "--trace", target]
        if profile:
            args += ["--profile", pf]
        outs = [] if os.path.exists(target) else [target]
        return args, named, "--" + option, [mf, inp, pf], outs
    CASES.append((f"collide.{label}", build))


def linked(kind):
    def make(d, mf, inp, pf):
        t = os.path.join(d, "alias.h5")
        (os.link if kind == "hard" else os.symlink)(inp, t)
        return t, t
    return make


collision_case("trace_is_input", lambda d, mf, inp, pf: (inp, inp))
collision_case("trace_is_model", lambda d, mf, inp, pf: (mf, mf))
collision_case("trace_is_profile", lambda d, mf, inp, pf: (pf, pf), profile=True)


def dotdot(d, mf, inp, pf):
    os.makedirs(os.path.join(d, "sub"))
    return os.path.join(d, "sub", "..", "in.h5"), "in.h5"


collision_case("trace_dotdot_input", dotdot)
collision_case("trace_hardlink_input", linked("hard"))
collision_case("trace_symlink_input", linked("sym"))
collision_case("trace_missing_dir", lambda d, mf, inp, pf: (os.path.join(d, "nodir", "t.h5"), "nodir"))
collision_case("trace_is_dir", lambda d, mf, inp, pf: (d, d))
collision_case("trace_name_too_long", lambda d, mf, inp, pf: (os.path.join(d, "t" * 240 + ".h5"), "t" * 240))


def readonly_dir(d, mf, inp, pf):
    ro = os.path.join(d, "ro")
    os.makedirs(ro)
    os.chmod(ro, 0o555)
    return os.path.join(ro, "t.h5"), "ro"


if os.geteuid() != 0:  # root writes anywhere
    collision_case("trace_readonly_dir", readonly_dir)


def other_command_case(label, build_cmd):
    CASES.append((f"collide.{label}", build_cmd))


def encode_same(d):
    inp = os.path.join(d, "analog.h5")
    with h5py.File(inp, "w") as f:
        f["data"] = np.full((2, 6), 0.5, F32)
    return (["encode", "--input", inp, "--output", inp, "--timesteps", "3"], inp, "--output", [inp], [])


def attention_files(d):
    w, x = os.path.join(d, "w.h5"), os.path.join(d, "x.h5")
    rng = np.random.default_rng(3)
    with h5py.File(w, "w") as f:
        f["W_A"] = rng.standard_normal((8, 2)).astype(F32)
        f["W_V"] = rng.standard_normal((8, 8)).astype(F32)
        f["W_O"] = rng.standard_normal((8, 8)).astype(F32)
        f["b_V"] = np.zeros(8, F32)
    with h5py.File(x, "w") as f:
        f["x"] = rng.standard_normal((1, 6, 8)).astype(F32)
    return w, x


def attention_same(which):
    def build(d):
        w, x = attention_files(d)
        out = {"input": x, "weights": w}[which]
        return (["attention", "--kind", "cat", "--weights", w, "--input", x, "--output", out],
                out, "--output", [w, x], [])
    return build


other_command_case("encode_output_is_input", encode_same)
other_command_case("attention_output_is_input", attention_same("input"))
other_command_case("attention_output_is_weights", attention_same("weights"))


def attention_missing_dir(d):
    w, x = attention_files(d)
    out = os.path.join(d, "nodir", "y.h5")
    return (["attention", "--kind", "cat", "--weights", w, "--input", x, "--output", out],
            "nodir", "--output", [w, x], [out])


other_command_case("attention_missing_dir", attention_missing_dir)


# --max-memory on attention and info: malformed values, and limits below the estimate (the
# message names the option and the estimate; nothing is written).
def attention_memory(limit, also=None):
    def build(d):
        w, x = attention_files(d)
        out = os.path.join(d, "y.h5")
        return (["attention", "--kind", "cat", "--weights", w, "--input", x, "--output", out,
                 "--max-memory", limit], None, "--max-memory", [w, x], [out], also)
    return build


def info_memory(limit, also=None):
    def build(d):
        nodes, edges, shape, classes = neuron_model("IF", neurons()["IF"])
        mf = os.path.join(d, "model.h5")
        write_nir(mf, nodes, edges)
        return (["info", mf, "--max-memory", limit], None, "--max-memory", [mf], [], also)
    return build


for label, limit, also in [("tiny", "1K", "loading the"), ("neg", "-5G", None),
                           ("unit", "8X", None), ("text", "lots", None)]:
    other_command_case(f"attention_max_memory_{label}", attention_memory(limit, also))
    other_command_case(f"info_max_memory_{label}", info_memory(limit, also))


# ------------------------------------------------------------------ running the corpus

def listing(d):
    return sorted(os.path.join(r, f) for r, _, fs in os.walk(d) for f in fs)


def check_case(label, build):
    d = os.path.join(TMP, "hostile", label)
    os.makedirs(d)
    args, named, field, inputs, outputs, *also = build(d)
    before = {p: sha(p) for p in inputs}
    files_before = listing(d)
    p = run(*args, check=False)
    what = f"{label}: exit {p.returncode}, stderr {p.stderr[-500:]!r}"
    assert p.returncode == 1, what
    lines = [l for l in p.stderr.splitlines() if l.strip()]
    assert len(lines) == 1 and lines[0].startswith("ternion: error: "), what
    if named:
        assert named in lines[0], f"{what}: file {named!r} not named"
    assert field in lines[0], f"{what}: field {field!r} not named"
    if also and also[0]:
        assert also[0] in lines[0], f"{what}: {also[0]!r} not named"
    assert "internal error" not in lines[0], what
    for o in outputs:
        assert not os.path.exists(o), f"{what}: output {o} left behind"
    assert listing(d) == files_before, f"{what}: files changed {set(listing(d)) ^ set(files_before)}"
    for q, h in before.items():
        assert sha(q) == h, f"{what}: input {q} changed"


@test
def hostile_corpus():
    failures = []
    for label, build in CASES:
        try:
            check_case(label, build)
        except Exception as e:  # noqa: BLE001 - collect every failing case
            failures.append(f"{label}: {e}")
    print(f"     {len(CASES)} cases, {len(CASES) - len(failures)} refused as promised")
    assert len(CASES) >= 150, len(CASES)
    assert not failures, "\n".join(failures)


def fixed_string(size, pad, cset):
    tid = h5py.h5t.C_S1.copy()
    tid.set_size(size)
    tid.set_strpad(pad)
    tid.set_cset(cset)
    return tid


def replace_with_fixed(group, name, data, tid):
    """Replaces group[name] by a fixed-length string dataset of type tid holding data."""
    del group[name]
    space = h5py.h5s.create_simple(data.shape) if data.shape else h5py.h5s.create(h5py.h5s.SCALAR)
    ds = h5py.h5d.create(group.id, name.encode(), tid, space)
    ds.write(h5py.h5s.ALL, h5py.h5s.ALL, data, mtype=tid)


@test
def fixed_length_string_edges_read_whole():
    # h5py writes np.array([[b"lif", b"output"]]) as fixed-length S6, NULLPAD: "output" fills
    # the width and must not be cut to "outpu". The Output node's type is written the same way.
    nodes, edges, shape, classes = neuron_model("IF", neurons()["IF"])
    for pad, pname in [(h5py.h5t.STR_NULLPAD, "nullpad"), (h5py.h5t.STR_NULLTERM, "nullterm"),
                       (h5py.h5t.STR_SPACEPAD, "spacepad")]:
        for cset, cname in [(h5py.h5t.CSET_ASCII, "ascii"), (h5py.h5t.CSET_UTF8, "utf8")]:
            label = f"{pname}_{cname}"
            # NULLTERM keeps a byte for the terminator: one wider than the longest name.
            width = 7 if pad == h5py.h5t.STR_NULLTERM else 6
            fill = b" " if pad == h5py.h5t.STR_SPACEPAD else b"\0"
            mf = path(f"fixed_{label}.h5")
            write_nir(mf, nodes, edges)
            with h5py.File(mf, "r+") as f:
                tid = fixed_string(width, pad, cset)
                arr = np.array([[a.encode().ljust(width, fill), b.encode().ljust(width, fill)]
                                for a, b in edges], dtype=f"S{width}")
                replace_with_fixed(f["node"], "edges", arr, tid)
                replace_with_fixed(f["node/nodes/output"], "type",
                                   np.array(b"Output".ljust(width, fill), dtype=f"S{width}"), tid)
            inp = path(f"fixed_{label}_in.h5")
            spikes(inp, (2, 4, *shape))
            p = run("run", mf, "--input", inp, "--dt", "1e-3", "--no-progress", "--json", check=False)
            assert p.returncode == 0, f"{label}: {p.stderr}"
            assert json.loads(p.stdout)["samples"] == 2


@test
def integral_floats_and_float64_in_range_are_accepted():
    # Conv2d groups stored as 1.0 and a float64 bias well inside float32 range still load.
    nodes, edges, shape, classes = conv2d_model(groups=np.float64(1.0), bias=np.full(4, 1e-3))
    mf, inp = path("edge_ok.h5"), path("edge_ok_in.h5")
    write_nir(mf, nodes, edges)
    spikes(inp, (2, 4, *shape))
    run("run", mf, "--input", inp, "--dt", "1e-3", "--no-progress", "--json")


finish()
