#!/usr/bin/python3
"""Benchmark: one Spikformer block in ternion vs PyTorch (the PyTorch reference script
spikformer_block.py, passed with --peer; see docs/benchmarks.md), same weights and input spikes,
1 thread, alternated within one run. The workload the target applies to is the reference
script's default (input rate 0.2) at batch 1 and 16; the other rates show how the time falls with
the firing rate.

For each input rate it writes the block and its input with bench/make_spikformer_block.py (20
copies of the one sample, so `ternion run` times a steady state), then alternates
`ternion run ... --threads 1` (median per-sample latency, `timing.sample_ms.median`) and the
PyTorch script at each --batches size (`ms_per_sample_median`: per sample, batched), --rounds
times, and prints the medians, the ratios and one JSON line. ternion runs samples one after
another on one thread, so its per-sample time does not depend on the batch.

  /usr/bin/python3 bench/spikformer_block.py --ternion build/ternion [--rates 0.05 0.1 0.2 0.4]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

here = os.path.dirname(os.path.abspath(__file__))
ap = argparse.ArgumentParser()
ap.add_argument("--ternion", default="build/ternion")
ap.add_argument("--rates", type=float, nargs="+", default=[0.05, 0.1, 0.2, 0.4])
ap.add_argument("--rounds", type=int, default=5)
ap.add_argument("--batches", type=int, nargs="+", default=[1, 16])
ap.add_argument("--threads", type=int, default=1)
ap.add_argument("--peer", default=os.path.join(here, "../../shared/peers/perf/spikformer_block.py"))
ap.add_argument("--workdir", default="/tmp/ternion-bench-blk")
args = ap.parse_args()
os.makedirs(args.workdir, exist_ok=True)

rows = []
for rate in args.rates:
    prefix = f"{args.workdir}/blk_r{rate}"
    if not os.path.exists(prefix + "_model.h5"):
        subprocess.run(["/usr/bin/python3", os.path.join(here, "make_spikformer_block.py"), "--out", prefix,
                        "--rate", str(rate), "--repeat", "20", "--script", args.peer],
                       check=True, capture_output=True)
    tern, torch = [], {b: [] for b in args.batches}
    for _ in range(args.rounds):
        out = subprocess.run([args.ternion, "run", prefix + "_model.h5", "--input", prefix + "_input.h5",
                              "--threads", str(args.threads), "--json", "--no-progress"],
                             check=True, capture_output=True, text=True).stdout
        j = json.loads(out)
        # Median latency of one sample, as the PyTorch script reports the median of its passes.
        tern.append(j["timing"]["sample_ms"]["median"])
        for b in args.batches:
            # 20 timed passes at batch 1; fewer at batch 16, where one pass is 16 samples.
            reps = "20" if b < 4 else "5"
            out = subprocess.run(["/usr/bin/python3", args.peer, "--rate", str(rate), "--B", str(b),
                                  "--threads", str(args.threads), "--repeats", reps],
                                 check=True, capture_output=True, text=True).stdout
            torch[b].append(json.loads(out.strip().splitlines()[-1])["ms_per_sample_median"])
    r = dict(rate=rate, ternion_ms=statistics.median(tern))
    for b in args.batches:
        r[f"pytorch_b{b}_ms"] = statistics.median(torch[b])
        r[f"ratio_b{b}"] = r["ternion_ms"] / r[f"pytorch_b{b}_ms"]
    rows.append(r)
    print(json.dumps(r), file=sys.stderr)

head = f"{'rate':>6} {'ternion ms':>11}"
for b in args.batches:
    head += f" {'PyTorch B=' + str(b) + ' ms':>17} {'ratio B=' + str(b):>11}"
print(head)
for r in rows:
    line = f"{r['rate']:>6} {r['ternion_ms']:>11.2f}"
    for b in args.batches:
        line += f" {r[f'pytorch_b{b}_ms']:>17.2f} {r[f'ratio_b{b}']:>11.2f}"
    print(line)
print(json.dumps(rows))
