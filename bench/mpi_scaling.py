#!/usr/bin/env python3
"""Benchmark: one `ternion run` split across MPI processes against threads in one process.

Runs the bundled Fashion-MNIST BSA model on Debian's Fashion-MNIST test images (named explicitly,
so no twin model runs beside it; arguments after `--` replace model and input) as
  serial 1t   ternion run --threads 1
  mpi 1x1     mpirun -n 1 ternion run --threads 1
  mpi 2x1     mpirun -n 2 ternion run --threads 1      (one rank per core)
  serial 2t   ternion run --threads 2
alternating the configurations run by run, --repeats times each, and prints the medians of
  samples/s   samples / simulation time (ternion's own timing: the slowest rank's simulation
              plus the time spent gathering results to rank 0)
  comm share  the gathering time over that total (MPI runs)
  wall s      the whole command as a user waits for it (process start, MPI start, load, report)
Also checks that every run printed the same predictions. Prints a table and a JSON line.

  /usr/bin/python3 bench/mpi_scaling.py --ternion build/ternion --repeats 5 [-- MODEL --input FILE ...]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

ap = argparse.ArgumentParser()
ap.add_argument("--ternion", default="build/ternion")
ap.add_argument("--mpirun", default="mpirun")
ap.add_argument("--repeats", type=int, default=5)
BUNDLED = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "models", "bundled")
DEFAULT = [os.path.join(BUNDLED, "bsa_fmnist.h5"), "--input",
           "/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz"]
# `ternion run` arguments follow `--`: model, --input ... (default: the Fashion-MNIST model).
argv = sys.argv[1:]
cut = argv.index("--") if "--" in argv else len(argv)
args = ap.parse_args(argv[:cut])
args.extra = argv[cut + 1:] or DEFAULT

ENV = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
           OMPI_MCA_btl_vader_single_copy_mechanism="none")
RUN = ["run", *args.extra, "--json", "--no-progress"]
CONFIGS = {
    "serial 1t": [args.ternion, *RUN, "--threads", "1"],
    "mpi 1x1": [args.mpirun, "-n", "1", "--bind-to", "core", args.ternion, *RUN, "--threads", "1"],
    "mpi 2x1": [args.mpirun, "-n", "2", "--bind-to", "core", args.ternion, *RUN, "--threads", "1"],
    "serial 2t": [args.ternion, *RUN, "--threads", "2"],
}


def once(cmd):
    t0 = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True, env=ENV)
    wall = time.perf_counter() - t0
    if p.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{p.stderr}")
    j = json.loads(p.stdout)
    t = j["timing"]
    comm = t.get("communicate_s", 0.0)
    stage = t["simulate_s"] + comm
    return {"samples_per_s": j["samples"] / stage, "comm_share": comm / stage, "wall_s": wall,
            "wait_s": t.get("wait_s", 0.0), "predictions": j["predictions"], "samples": j["samples"]}


results = {name: [] for name in CONFIGS}
for r in range(args.repeats):
    for name, cmd in CONFIGS.items():
        results[name].append(once(cmd))
preds = {json.dumps(x["predictions"]) for v in results.values() for x in v}
assert len(preds) == 1, "runs disagree on the predictions"

summary = {}
print(f"{'config':<10} {'samples/s':>10} {'min':>8} {'max':>8} {'comm share':>10} {'wall s':>7}")
for name, runs in results.items():
    sps = [x["samples_per_s"] for x in runs]
    s = {"samples_per_s": statistics.median(sps), "min": min(sps), "max": max(sps),
         "comm_share": statistics.median(x["comm_share"] for x in runs),
         "wall_s": statistics.median(x["wall_s"] for x in runs),
         "wait_s": statistics.median(x["wait_s"] for x in runs)}
    summary[name] = s
    print(f"{name:<10} {s['samples_per_s']:>10.1f} {s['min']:>8.1f} {s['max']:>8.1f} "
          f"{100 * s['comm_share']:>9.2f}% {s['wall_s']:>7.2f}")
base = summary["serial 1t"]["samples_per_s"]
for name in ("mpi 2x1", "serial 2t"):
    print(f"{name} speed-up over serial 1t: {summary[name]['samples_per_s'] / base:.2f}x")
print(json.dumps({"samples": results["serial 1t"][0]["samples"], "repeats": args.repeats,
                  "cpus": os.cpu_count(), "summary": summary}))
