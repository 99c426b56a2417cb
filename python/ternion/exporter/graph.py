"""The model graph being written: nodes, edges, shapes, and the HDF5 file (NIR's layout).

Also holds BatchNorm folding, the one rule ternion's loader applies too
(docs/model-format.md, "BatchNorm folding")."""
import os
import tempfile

import numpy as np


class ExportError(ValueError):
    """A module the exporter cannot write exactly. The message names the module path and type."""


def fold_bn(weight, bias, bn):
    """Folds an eval-mode BatchNorm over output channels into (weight, bias):
    W' = W g, b' = (b - mean) g + beta with g = gamma / sqrt(var + eps), in float64, rounded to
    float32 once. `weight`/`bias` are tensors or arrays (bias may be None); `bn` a BatchNorm module
    (affine or not). Returns float32 numpy arrays."""
    w = _f64(weight)
    c = w.shape[0]
    b = np.zeros(c) if bias is None else _f64(bias)
    mean = _f64(bn.running_mean) if bn.running_mean is not None else np.zeros(c)
    var = _f64(bn.running_var) if bn.running_var is not None else np.ones(c)
    gamma = _f64(bn.weight) if getattr(bn, "weight", None) is not None else np.ones(c)
    beta = _f64(bn.bias) if getattr(bn, "bias", None) is not None else np.zeros(c)
    g = gamma / np.sqrt(var + float(bn.eps))
    wf = w * g.reshape(-1, *([1] * (w.ndim - 1)))
    bf = (b - mean) * g + beta
    return wf.astype(np.float32), bf.astype(np.float32)


def _f64(t):
    if hasattr(t, "detach"):
        t = t.detach().cpu().double().numpy()
    return np.asarray(t, dtype=np.float64)


def f32(t):
    """A tensor or array as a float32 numpy array (a copy)."""
    if hasattr(t, "detach"):
        t = t.detach().cpu().float().numpy()
    return np.array(t, dtype=np.float32)


class Graph:
    """Nodes in insertion order, each with a type, parameters and an output shape (without
    batch and time axes); edges (source, target), summed at the target."""

    def __init__(self):
        self.nodes = {}  # name -> (type, params)
        self.shapes = {}  # name -> tuple
        self.edges = []
        self.origin = {}  # name -> module path it came from

    def add(self, name, typ, params, inputs, shape, origin=None):
        if name in self.nodes:
            raise ExportError(f"{name}: two nodes of the same name")
        self.nodes[name] = (typ, dict(params))
        self.shapes[name] = tuple(int(d) for d in shape)
        self.origin[name] = origin if origin is not None else name
        for src in inputs:
            self.edges.append((src, name))
        return name

    def unique(self, name):
        """`name`, or `name_2`, `name_3`, ... if taken."""
        if name not in self.nodes:
            return name
        k = 2
        while f"{name}_{k}" in self.nodes:
            k += 1
        return f"{name}_{k}"

    def write(self, path, metadata=None, version="0.5.0"):
        """Writes the NIR-layout HDF5 file of docs/model-format.md."""
        write_model(path, self.nodes, self.edges, metadata, version)


def write_model(path, nodes, edges, metadata=None, version="0.5.0"):
    """Writes {name: (type, {param: value})} and [(source, target)] as a NIRGraph file. Scalars
    become 0-d datasets, strings UTF-8 strings, arrays gzip-compressed datasets.

    Atomic, as ternion's own outputs: the file is written to a hidden temporary beside `path`,
    created exclusively under a random name, and renamed over `path` only when complete; a
    failure (a value h5py cannot store, a full disk) leaves an existing file as it was. The file
    is built in memory and written with plain writes: libhdf5 keeps a file whose flush failed on
    a full disk half-open, and its exit handler then crashes the interpreter."""
    import io

    import h5py

    path = os.fspath(path)
    if os.path.lexists(path) and not os.path.isfile(path):
        raise ExportError(f"{path}: not a regular file; refusing to replace it")
    folder, name = os.path.split(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=f".{name}.tmp-", dir=folder)  # O_EXCL, random suffix
    os.close(fd)
    try:
        image = io.BytesIO()
        with h5py.File(image, "w") as f:
            _write_graph(f, h5py.string_dtype("utf-8"), nodes, edges, metadata, version)
        try:
            with open(tmp, "wb") as out:
                out.write(image.getbuffer())
        except OSError as e:
            raise ExportError(f"{path}: write failed ({e.strerror}; disk full?)") from None
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp made it 0600
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def _write_graph(f, str_t, nodes, edges, metadata, version):
    f.create_dataset("version", data=version, dtype=str_t)
    g = f.create_group("node")
    g.create_dataset("type", data="NIRGraph", dtype=str_t)
    ng = g.create_group("nodes")
    for name, (typ, params) in nodes.items():
        n = ng.create_group(name)
        n.create_dataset("type", data=typ, dtype=str_t)
        for k, v in params.items():
            if isinstance(v, str):
                n.create_dataset(k, data=v, dtype=str_t)
                continue
            v = np.asarray(v)
            if v.ndim == 0:
                n.create_dataset(k, data=v)
            else:
                n.create_dataset(k, data=v, compression="gzip")
    g.create_dataset("edges", data=np.array(edges, dtype=object).reshape(-1, 2), dtype=str_t)
    md = g.create_group("metadata")
    for k, v in (metadata or {}).items():
        if isinstance(v, str):
            md.create_dataset(k, data=v, dtype=str_t)
        else:
            md.create_dataset(k, data=np.asarray(v))
