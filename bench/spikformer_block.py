#!/usr/bin/python3
"""Benchmark: one Spikformer block in ternion vs PyTorch (../shared/peers/perf/spikformer_block.py),
same weights and input spikes, 1 thread, alternated in one sitting.

For each input rate it writes the block and its input with bench/make_spikformer_block.py (20
copies of the one sample, so `ternion run` times a steady state), then alternates
`ternion run ... --threads 1` (median per-sample latency, `timing.sample_ms.median`) and the
PyTorch script (`ms_per_sample_median`), --rounds times, and prints the medians, their ratio and
one JSON line.

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
    tern, torch = [], []
    for _ in range(args.rounds):
        out = subprocess.run([args.ternion, "run", prefix + "_model.h5", "--input", prefix + "_input.h5",
                              "--threads", str(args.threads), "--json", "--no-progress"],
                             check=True, capture_output=True, text=True).stdout
        j = json.loads(out)
        # Median latency of one sample, as the PyTorch script reports the median of its passes.
        tern.append(j["timing"]["sample_ms"]["median"])
        out = subprocess.run(["/usr/bin/python3", args.peer, "--rate", str(rate), "--B", "1", "--threads",
                              str(args.threads), "--repeats", "20"], check=True, capture_output=True,
                             text=True).stdout
        torch.append(json.loads(out.strip().splitlines()[-1])["ms_per_sample_median"])
    r = dict(rate=rate, ternion_ms=statistics.median(tern), pytorch_ms=statistics.median(torch))
    r["ratio"] = r["ternion_ms"] / r["pytorch_ms"]
    rows.append(r)
    print(json.dumps(r), file=sys.stderr)

print(f"{'rate':>6} {'ternion ms':>11} {'PyTorch ms':>11} {'ternion/PyTorch':>16}")
for r in rows:
    print(f"{r['rate']:>6} {r['ternion_ms']:>11.2f} {r['pytorch_ms']:>11.2f} {r['ratio']:>16.2f}")
print(json.dumps(rows))
