"""Model, input and trace files for the CLI tests, written and read with h5py in NIR's layout."""
import h5py
import numpy as np


class Nir:
    """Writes a NIR graph file exactly as nir.write lays it out."""

    def __init__(self):
        self.nodes, self.edges = {}, []

    def node(self, name, typ, **params):
        self.nodes[name] = (typ, params)
        return self

    def edge(self, a, b):
        self.edges.append((a, b))
        return self

    def write_group(self, g):
        g["type"] = "NIRGraph"
        nodes = g.create_group("nodes")
        for name, (typ, params) in self.nodes.items():
            ng = nodes.create_group(name)
            if isinstance(typ, Nir):
                typ.write_group(ng)
                continue
            ng["type"] = typ
            for k, v in params.items():
                ng.create_dataset(k, data=v, compression="gzip") if isinstance(v, np.ndarray) and v.size > 1 else ng.create_dataset(k, data=v)
        g["edges"] = np.array(self.edges, dtype=h5py.string_dtype())

    def write(self, fname):
        with h5py.File(fname, "w") as f:
            f["version"] = "1.0.0"
            self.write_group(f.create_group("node"))


def spikes_file(fname, s, labels=None):
    with h5py.File(fname, "w") as f:
        f["spikes"] = s.astype(np.int8)
        if labels is not None:
            f["labels"] = np.asarray(labels, np.int64)


def trace_spikes(fname, node):
    """[samples, T, neurons] spikes of a trace, from a time grid or (valued) events."""
    with h5py.File(fname, "r") as f:
        assert f.attrs["__type__"] == "NIRGraphData"
        o = f[f"nodes/{node}/observables/spikes"]
        if "data" in o:
            return o["data"][()]
        idx, t, dt = o["idx"][()], o["time"][()], float(o.attrs["dt"])
        val = o["value"][()] if "value" in o else np.ones_like(idx)
        g = np.zeros((idx.shape[0], int(round(o.attrs["t_max"] / dt)), int(o.attrs["n_neurons"])), np.int8)
        for k in range(idx.shape[0]):
            m = idx[k] >= 0
            g[k, np.floor(t[k][m] / dt).astype(int), idx[k][m]] = val[k][m]
        return g
