#!/usr/bin/python3
"""Side by side: several ternion builds on the same workloads, alternated round by round, so a
change is judged against the previous build under the same machine conditions.

  /usr/bin/python3 bench/side_by_side.py --rounds 7 old=/tmp/ternion-old new=build/ternion \\
      [--lif /tmp/lif_16000.h5 /tmp/lif_16000_in.h5] [--block /tmp/blk_model.h5 /tmp/blk_input.h5]

A build may name its own profile file, `old=/tmp/old/build/ternion@/tmp/old/hw/profiles/
horowitz45-fp32.json`, when the profile format changed since (an older build refuses the newer
file's keys); by default every build reads this tree's horowitz45-fp32.json.

Workloads: the LIF population (files written by bench/lif_population.py), one Spikformer block
(files written by bench/make_spikformer_block.py), CAT and softmax attention (`ternion bench
attention`), and the bundled Fashion-MNIST BSA model on 2000 test images (Debian's
dataset-fashion-mnist). A workload a build cannot run (an older build without a feature) is
skipped for that build. Prints, per workload, each build's median and the median of its
per-round ratios to the first build; --json writes every round.
"""
import argparse
import json
import os
import statistics
import subprocess

here = os.path.dirname(os.path.abspath(__file__))
root = os.path.dirname(here)
ap = argparse.ArgumentParser()
ap.add_argument("builds", nargs="+", help="name=path of a ternion binary; the first is the base")
ap.add_argument("--rounds", type=int, default=7)
ap.add_argument("--lif", nargs=2, metavar=("MODEL", "INPUT"))
ap.add_argument("--block", nargs=2, metavar=("MODEL", "INPUT"))
ap.add_argument("--fmnist", default="/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz")
ap.add_argument("--json", help="write every round's figures here")
args = ap.parse_args()

# An explicit profile file, so that builds installed elsewhere read the same one.
profile = ["--profile", "@PROFILE@"]
default_profile = os.path.join(root, "hw", "profiles", "horowitz45-fp32.json")
cases = []
if args.lif:
    for th in ("1", "2"):
        cases.append((f"LIF population, {th} thread(s) (simulate_s)",
                      ["run", args.lif[0], "--input", args.lif[1], "--threads", th] + profile,
                      "simulate_s"))
if args.block:
    cases.append(("Spikformer block, 1 thread (sample_ms median)",
                  ["run", args.block[0], "--input", args.block[1], "--threads", "1"] + profile,
                  "sample_ms"))
for kind, n in (("cat", "16384"), ("softmax", "4096")):
    cases.append((f"{kind} attention N={n}, 1 thread (ms)",
                  ["bench", "attention", "--kind", kind, "--tokens", n, "--dim", "512", "--heads",
                   "8", "--threads", "1", "--repeats", "5"], "ms_median"))
if os.path.exists(args.fmnist):
    for th in ("2", "1"):
        cases.append((f"BSA Fashion-MNIST 2000 images, {th} thread(s) (simulate_s)",
                      ["run", os.path.join(root, "models", "bundled", "bsa_fmnist.h5"), "--input",
                       args.fmnist, "--samples", "2000", "--threads", th] + profile, "simulate_s"))


def measure(build, cmd, key):
    binary, _, prof = build.partition("@")
    cmd = [prof or default_profile if c == "@PROFILE@" else c for c in cmd]
    extra = [] if cmd[0] == "bench" else ["--no-progress"]
    p = subprocess.run([binary] + cmd + ["--json"] + extra, check=True, capture_output=True,
                       text=True)
    j = json.loads(p.stdout)
    if key == "ms_median":
        return j["ms_median"]
    return j["timing"]["simulate_s"] if key == "simulate_s" else j["timing"]["sample_ms"]["median"]


builds = [b.split("=", 1) for b in args.builds]
record = {}
for name, cmd, key in cases:
    able = []
    for b, path in builds:
        try:
            measure(path, cmd, key)  # warm-up, and can this build run it at all
            able.append((b, path))
        except (subprocess.CalledProcessError, KeyError, json.JSONDecodeError):
            print(f"  {name}: {b} cannot run it, skipped")
    times = {b: [] for b, _ in able}
    for _ in range(args.rounds):
        for b, path in able:
            times[b].append(measure(path, cmd, key))
    line = f"{name:58s}"
    base = able[0][0] if able else None
    for b, _ in able:
        ratio = statistics.median(x / y for x, y in zip(times[b], times[base]))
        line += f"  {b} {statistics.median(times[b]):.4g} (x{ratio:.3f})"
    print(line, flush=True)
    record[name] = times
if args.json:
    with open(args.json, "w") as f:
        json.dump(record, f, indent=1)
