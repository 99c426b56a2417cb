#!/usr/bin/python3
"""Turn a ternion trace (docs/traces.md) into PNG figures.

    /usr/bin/python3 tools/plot_trace.py TRACE.h5 --out DIR [--sample K] [--nodes a,b] [--dpi N]

Writes, for whatever the trace holds:
  raster.png        spikes of one sample per node: neuron x time step, +1 red, -1 blue
  rates.png         firing rate (|spikes| per neuron) per node and step, over all samples
  energy.png        energy per inference per node, stacked by kind, ANN equivalent beside
  attention_<node>.png   attention weights (and scores) per head of one sample and step
Needs only Debian's python3-matplotlib, python3-h5py and python3-numpy.
"""
import argparse
import os
import sys

import h5py
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.colors import ListedColormap  # noqa: E402

POLARITY = ListedColormap(["#2166ac", "#ffffff", "#b2182b"])  # -1, 0, +1


def text(x):
    return x.decode() if isinstance(x, bytes) else str(x)


def spike_grid(obs, T):
    """[samples, T, neurons] int8 from a TimeGriddedData or (Valued)EventData group."""
    typ = text(obs.attrs["__type__"])
    if typ == "TimeGriddedData":
        return obs["data"][()].astype(np.int8)
    idx, tim = obs["idx"][()], obs["time"][()]
    val = obs["value"][()] if "value" in obs else np.ones_like(idx)
    n, dt = int(obs.attrs["n_neurons"]), float(obs.attrs["dt"])
    g = np.zeros((idx.shape[0], T, n), np.int8)
    for k in range(idx.shape[0]):
        m = idx[k] >= 0
        g[k, np.floor(tim[k][m] / dt).astype(int), idx[k][m]] = val[k][m]
    return g


def load(path, only):
    f = h5py.File(path, "r")
    if text(f.attrs.get("__type__", "")) != "NIRGraphData":
        sys.exit(f"plot_trace: {path}: not a trace (root __type__ is not NIRGraphData)")
    T = int(f["ternion"].attrs["timesteps"]) if "ternion" in f else None
    spikes = {}
    for name, g in f["nodes"].items():
        if only and name not in only:
            continue
        if "spikes" in g["observables"]:
            o = g["observables/spikes"]
            if T is None:
                T = int(round(float(o.attrs["t_max"]) / float(o.attrs["dt"])))
            spikes[name] = spike_grid(o, T)
    return f, spikes


def raster(spikes, sample, out, dpi):
    names = list(spikes)
    fig, axes = plt.subplots(1, len(names), figsize=(1.6 * len(names) + 1, 4.2), squeeze=False)
    for ax, name in zip(axes[0], names):
        g = spikes[name][sample]  # [T, n]
        ax.imshow(g.T, aspect="auto", interpolation="nearest", cmap=POLARITY, vmin=-1, vmax=1)
        ax.set_title(name, fontsize=7)
        ax.set_xlabel("step", fontsize=7)
        ax.set_xticks(range(g.shape[0]))
        ax.tick_params(labelsize=6)
    axes[0][0].set_ylabel("neuron", fontsize=7)
    fig.suptitle(f"spikes of sample {sample}: +1 red, -1 blue", fontsize=9)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "raster.png"), dpi=dpi)
    plt.close(fig)


def rates(spikes, out, dpi):
    fig, ax = plt.subplots(figsize=(6, 3.6))
    for name, g in spikes.items():
        pos = (g > 0).mean(axis=(0, 2))
        neg = (g < 0).mean(axis=(0, 2))
        line, = ax.plot(pos + neg, marker="o", label=name)
        if neg.any():
            ax.plot(neg, ls=":", color=line.get_color())
    ax.set_xticks(range(next(iter(spikes.values())).shape[1]))
    ax.set_xlabel("time step")
    ax.set_ylabel("firing rate (dotted: -1 spikes)")
    ax.legend(fontsize=6, ncol=2)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "rates.png"), dpi=dpi)
    plt.close(fig)


def energy(f, out, dpi):
    kinds = [text(k) for k in f["ternion/kinds"][()]]
    S = f["ternion/samples"].shape[0]
    names, per_kind, ann = [], [], []
    for name, g in f["ternion/energy"].items():
        e = g["per_step_pj"][()].sum(axis=(0, 1)) / S
        if e.sum() == 0 and not g.attrs.get("ann_pj_per_inference", 0):
            continue
        names.append(name)
        per_kind.append(e)
        ann.append(float(g.attrs.get("ann_pj_per_inference", 0.0)))
    per_kind = np.array(per_kind)
    y = np.arange(len(names))
    fig, ax = plt.subplots(figsize=(7, 0.32 * len(names) + 1.4))
    left = np.zeros(len(names))
    cmap = plt.get_cmap("tab20")
    for k, kind in enumerate(kinds):
        if per_kind[:, k].any():
            ax.barh(y - 0.2, per_kind[:, k], 0.4, left=left, label=kind, color=cmap(k))
            left += per_kind[:, k]
    ax.barh(y + 0.2, ann, 0.4, label="ANN equivalent (all MAC)", color="#888888", hatch="//")
    ax.set_yticks(y, names, fontsize=7)
    ax.invert_yaxis()
    ax.set_xscale("symlog", linthresh=1.0)
    ax.set_xlabel("pJ per inference")
    prof = text(f["ternion/energy"].attrs.get("profile", "")) if "profile" in f["ternion/energy"].attrs else ""
    ax.set_title(f"energy per node by kind ({prof})", fontsize=9)
    ax.legend(fontsize=6, loc="lower right")
    fig.tight_layout()
    fig.savefig(os.path.join(out, "energy.png"), dpi=dpi)
    plt.close(fig)


def attention(f, sample, out, dpi):
    written = []
    for name, g in f["ternion/attention"].items():
        samples = list(g["samples"][()])
        k = samples.index(sample) if sample in samples else 0
        present = g["present"][()][k]
        if not present.any():
            continue
        s = int(np.argmax(present))
        step = int(g["steps"][()][s])
        sc, w = g["scores"][k, s], g["weights"][k, s]
        H = sc.shape[0]
        fig, axes = plt.subplots(2, H, figsize=(2.1 * H, 4.4), squeeze=False)
        for h in range(H):
            a = axes[0][h].imshow(sc[h], cmap="RdBu_r", vmin=-np.abs(sc).max(), vmax=np.abs(sc).max())
            axes[0][h].set_title(f"head {h} scores", fontsize=7)
            b = axes[1][h].imshow(w[h], cmap="viridis")
            axes[1][h].set_title(f"head {h} weights", fontsize=7)
            for ax in (axes[0][h], axes[1][h]):
                ax.tick_params(labelsize=5)
        fig.colorbar(a, ax=list(axes[0]), shrink=0.8)
        fig.colorbar(b, ax=list(axes[1]), shrink=0.8)
        fig.suptitle(f"{name} ({text(g.attrs.get('type', ''))}): sample {samples[k]}, step {step}",
                     fontsize=9)
        fn = os.path.join(out, f"attention_{name}.png")
        fig.savefig(fn, dpi=dpi)
        plt.close(fig)
        written.append(fn)
    return written


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("trace")
    ap.add_argument("--out", default=".", help="directory for the PNG files")
    ap.add_argument("--sample", type=int, default=0, help="row of the trace for raster/attention")
    ap.add_argument("--nodes", help="comma-separated nodes for raster and rates")
    ap.add_argument("--dpi", type=int, default=90)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    f, spikes = load(a.trace, set(a.nodes.split(",")) if a.nodes else None)
    made = []
    if spikes:
        if not 0 <= a.sample < next(iter(spikes.values())).shape[0]:
            sys.exit(f"plot_trace: --sample {a.sample} is not a row of {a.trace}")
        raster(spikes, a.sample, a.out, a.dpi)
        rates(spikes, a.out, a.dpi)
        made += ["raster.png", "rates.png"]
    if "ternion/energy" in f:
        energy(f, a.out, a.dpi)
        made.append("energy.png")
    if "ternion/attention" in f:
        made += [os.path.basename(p) for p in attention(f, a.sample, a.out, a.dpi)]
    for m in made:
        print(os.path.join(a.out, m))
    if not made:
        sys.exit(f"plot_trace: {a.trace} holds nothing to plot")


if __name__ == "__main__":
    main()
