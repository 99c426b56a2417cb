#!/usr/bin/env python3
"""Benchmark: ternion vs Brian2 on the LIF population workload of the Brian2 reference script
lif_population.py, passed with --peer (see docs/benchmarks.md).

Writes the network of lif_population.py's docstring as a ternion model (Linear with CSR weights,
w = G/(pN), p = 0.02, then ternion.SJLIF with tau = 20 steps, decay_input off, v_th 1, hard reset
0, fires on >=) and its Poisson input (20 Hz at dt = 1 ms: Bernoulli(0.02) per step) as a spike
file, times `ternion run` (simulation time as ternion reports it, median of --repeats), and runs
`lif_population.py --backend brian2_cpp` within the same run. Thread counts alternate run by run.
Prints a table (2t gain: ratio of the medians; pair: median of the per-round ratios) and a JSON
line.

  /usr/bin/python3 bench/lif_population.py --ternion build/ternion --N 1000 4000 16000
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

import h5py
import numpy as np

ap = argparse.ArgumentParser()
ap.add_argument("--ternion", default="build/ternion")
ap.add_argument("--N", type=int, nargs="+", default=[1000, 4000, 16000])
ap.add_argument("--T", type=int, default=1000)
ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
ap.add_argument("--repeats", type=int, default=5)
ap.add_argument("--peer", default=os.path.join(os.path.dirname(__file__), "../../shared/peers/perf/lif_population.py"))
ap.add_argument("--no-brian", action="store_true")
ap.add_argument("--workdir", default="/tmp/ternion-bench-lif")
args = ap.parse_args()
os.makedirs(args.workdir, exist_ok=True)
P, G, RATE = 0.02, 3.0, 0.02


def write_files(N, seed=1234):
    rng = np.random.default_rng(seed)
    model, inp = f"{args.workdir}/lif_{N}.h5", f"{args.workdir}/lif_{N}_in.h5"
    if os.path.exists(model) and os.path.exists(inp):
        return model, inp
    mask = rng.random((N, N), dtype=np.float32) < P if N <= 4000 else None
    rows, cols = [], []
    if mask is not None:
        r, c = np.nonzero(mask)  # post x pre
        rows, cols = r, c
    else:  # row by row to bound memory
        rr, cc = [], []
        for i in range(N):
            c = np.flatnonzero(rng.random(N) < P)
            rr.append(np.full(c.size, i)); cc.append(c)
        rows, cols = np.concatenate(rr), np.concatenate(cc)
    indptr = np.zeros(N + 1, np.int64)
    np.add.at(indptr, rows + 1, 1)
    indptr = np.cumsum(indptr)
    w = np.full(cols.size, G / (P * N), np.float32)
    with h5py.File(model, "w") as f:
        f["version"] = "1.0"
        n = f.create_group("node")
        n["type"] = "NIRGraph"
        nodes = n.create_group("nodes")
        def node(name, typ, **p):
            g = nodes.create_group(name)
            g["type"] = typ
            for k, v in p.items():
                g.create_dataset(k, data=v)
        node("input", "Input", shape=np.array([N]))
        node("syn", "Linear", weight_shape=np.array([N, N]), weight_csr_indptr=indptr,
             weight_csr_indices=cols.astype(np.int64), weight_csr_data=w)
        node("lif", "ternion.SJLIF", tau=20.0, decay_input=0, v_threshold=1.0, v_reset=0.0)
        node("output", "Output")
        n["edges"] = np.array([["input", "syn"], ["syn", "lif"], ["lif", "output"]], dtype=h5py.string_dtype())
    with h5py.File(inp, "w") as f:
        f.create_dataset("spikes", data=(rng.random((1, args.T, N)) < RATE).astype(np.int8), compression="gzip")
    return model, inp


rows = []
for N in args.N:
    model, inp = write_files(N)
    res = {"N": N}
    # Thread counts alternate run by run, so that a slow spell of the shared host falls on both.
    times = {th: [] for th in args.threads}
    j = None
    for rep in range(args.repeats + 1):  # the first round warms the page cache
        for th in args.threads:
            out = subprocess.run([args.ternion, "run", model, "--input", inp, "--threads", str(th), "--json",
                                  "--no-progress"], check=True, capture_output=True, text=True).stdout
            j = json.loads(out)
            if rep > 0:
                times[th].append(j["timing"]["simulate_s"])
    layers = {l["name"]: l for l in j["layers"]}
    events = layers["syn"]["ops"]["ac"]
    res["syn_events"] = events
    res["spikes"] = layers["lif"]["spikes"]
    res["rate_hz"] = layers["lif"]["spikes"] / (N * args.T * 1e-3)
    for th in args.threads:
        t = statistics.median(times[th])
        res[f"ternion_{th}t_s"] = t
        res[f"ternion_{th}t_events_per_s"] = events / t
    if 1 in times and 2 in times:
        # Second-thread gain per adjacent pair of runs, then the median.
        res["gain_2t_pair_median"] = statistics.median(a / b for a, b in zip(times[1], times[2]))
    if not args.no_brian:
        out = subprocess.run(["/usr/bin/python3", args.peer, "--backend", "brian2_cpp", "--N", str(N), "--T", str(args.T),
                              "--repeats", str(args.repeats)], capture_output=True, text=True)
        if out.returncode == 0:
            b = json.loads(out.stdout.strip().splitlines()[-1])
            res["brian2_cpp_s"] = b["run_s_median"]
            res["brian2_events"] = b["syn_events"]
            res["brian2_rate_hz"] = b["mean_rate_hz"]
        else:
            res["brian2_error"] = out.stderr.strip().splitlines()[-1] if out.stderr else "failed"
    rows.append(res)
    print(json.dumps(res), file=sys.stderr)

print(f"{'N':>6} {'events':>10} {'rate Hz':>8} {'t1 s':>8} {'t2 s':>8} {'ev/s (1t)':>10} {'2t gain':>8} {'pair':>6} {'Brian2 s':>9} {'vs Brian2':>9}")
for r in rows:
    t1, t2 = r.get("ternion_1t_s"), r.get("ternion_2t_s")
    b = r.get("brian2_cpp_s")
    print(f"{r['N']:>6} {r['syn_events']:>10.3g} {r['rate_hz']:>8.1f} {t1:>8.4f} {t2 if t2 else float('nan'):>8.4f} "
          f"{r['ternion_1t_events_per_s']:>10.3g} {(t1 / t2) if t2 else float('nan'):>8.2f} "
          f"{r.get('gain_2t_pair_median', float('nan')):>6.2f} "
          f"{b if b else float('nan'):>9.4f} {(b / t1) if b else float('nan'):>9.2f}")
print(json.dumps(rows))
