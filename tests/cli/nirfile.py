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


def layered_lif(model, inputs, n_big, T, S=1, seed=0):
    """A three-layer LIF network, input(64) -> sensory(n_big) -> assoc(200) -> motor(10), and
    S samples of T steps of Poisson input whose rate swings slowly, for figures of long, wide
    traces. Node names are chosen so that alphabetical order differs from graph order. The
    sensory biases spread from silent to busy, so firing rates cover a wide range."""
    rng = np.random.default_rng(seed)
    n_in, dt = 64, 1e-3

    def lif(n, tau=0.02):
        f = np.float32
        return dict(tau=np.full(n, tau, f), r=np.ones(n, f), v_leak=np.zeros(n, f),
                    v_threshold=np.ones(n, f), v_reset=np.zeros(n, f))

    w1 = (rng.standard_normal((200, n_big)) * (rng.random((200, n_big)) < 0.05) * 0.4).astype(np.float32)
    (Nir().node("input", "Input", shape=np.array([n_in]))
     .node("w_in", "Affine", weight=(rng.standard_normal((n_big, n_in)) * 0.5).astype(np.float32),
           bias=np.linspace(0.2, 2.0, n_big, dtype=np.float32))
     .node("sensory", "LIF", **lif(n_big)).node("w1", "Linear", weight=w1)
     .node("assoc", "LIF", **lif(200, 0.01))
     .node("w2", "Linear", weight=(rng.standard_normal((10, 200)) * 0.8).astype(np.float32))
     .node("motor", "LIF", **lif(10, 0.01)).node("output", "Output", shape=np.array([10]))
     .edge("input", "w_in").edge("w_in", "sensory").edge("sensory", "w1").edge("w1", "assoc")
     .edge("assoc", "w2").edge("w2", "motor").edge("motor", "output")
     .write(model))
    rate = 0.15 * (1 + np.sin(2 * np.pi * np.arange(T) / min(T, 1000)))[None, :, None]
    spikes_file(inputs, rng.random((S, T, n_in)) < rate)
    return dt
