#!/usr/bin/python3
"""What recording costs: the bundled model with and without traces, median of N runs each.

    /usr/bin/python3 bench/trace_overhead.py [build/ternion] [--reps 9] [--threads 2]

Reports, per configuration, the median simulate time (ternion's own `timing.simulate_s`, the
engine loop including the recorder's on_step work) and the median wall time of the process
(including loading, pricing and writing the trace file). Configurations are interleaved so
that drifts of the machine's load hit all of them alike.
"""
import argparse
import json
import os
import statistics
import subprocess
import tempfile
import time

ap = argparse.ArgumentParser()
ap.add_argument("ternion", nargs="?", default="build/ternion")
ap.add_argument("--reps", type=int, default=9)
ap.add_argument("--threads", type=int, default=2)
a = ap.parse_args()
tmp = tempfile.mkdtemp(prefix="ternion-bench-")
tr = os.path.join(tmp, "t.h5")
configs = {
    "no trace": [],
    "spikes (events), every spiking node": ["--trace", tr],
    "spikes (grid), every spiking node": ["--trace", tr, "--spike-format", "grid"],
    "spikes+ops+energy": ["--trace", tr, "--record", "spikes,ops,energy"],
}
sim = {k: [] for k in configs}
wall = {k: [] for k in configs}
size = {}
for _ in range(a.reps):
    for name, extra in configs.items():
        t0 = time.perf_counter()
        p = subprocess.run([a.ternion, "run", "--json", "--no-progress", "--threads", str(a.threads), *extra],
                           capture_output=True, text=True, check=True)
        wall[name].append(time.perf_counter() - t0)
        sim[name].append(json.loads(p.stdout)["timing"]["simulate_s"])
        if extra:
            size[name] = os.path.getsize(tr)
base_s, base_w = statistics.median(sim["no trace"]), statistics.median(wall["no trace"])
print(f"bundled model, 360 samples x 4 steps, {a.threads} threads, median of {a.reps}")
print(f"{'configuration':40s} {'simulate s':>10s} {'vs none':>8s} {'wall s':>8s} {'vs none':>8s} {'file':>10s}")
for name in configs:
    s, w = statistics.median(sim[name]), statistics.median(wall[name])
    print(f"{name:40s} {s:10.4f} {100 * (s / base_s - 1):+7.1f}% {w:8.3f} {100 * (w / base_w - 1):+7.1f}% "
          f"{size.get(name, 0):10d}")
