#!/usr/bin/env python3
"""What the bit widths cost in accuracy: quantises a model over a grid of weight and membrane
widths (`ternion quantize --weight-bits W --membrane-bits M`), runs each integer model on the
same inputs and prints accuracy, spikes per inference, overflows and energy per inference beside
the float model's, as a Markdown table (docs/fixed-point.md keeps the bundled models' tables).

usage: bitwidth_sweep.py [--ternion build/ternion] [--model M] [--input DATA]
                         [--profile loihi-like] [--weights 8,6,4,2] [--membranes 24,16,12,8]
                         [--samples N] [--threads N]
Defaults: the bundled BSA digits model on its test set.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run_json(ternion, *args):
    p = subprocess.run([ternion, *map(str, args), "--json", "--no-progress"], capture_output=True,
                       text=True)
    if p.returncode != 0:
        sys.exit(f"{ternion} {' '.join(map(str, args))}: {p.stderr.strip()}")
    return json.loads(p.stdout)


def per_inference(doc):
    """(spikes, overflows, energy in pJ) per inference."""
    p = doc["per_inference"]
    return p["ops"]["spikes_out"], p["ops"].get("overflow", 0), p["energy_pj"]


def measure(ternion, model, args):
    run_args = [model, "--input", args.input, "--threads", args.threads, "--profile", args.profile]
    if args.samples:
        run_args += ["--samples", args.samples]
    doc = run_json(ternion, "run", *run_args)
    return (doc["accuracy"],) + per_inference(doc)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ternion", default=os.path.join(ROOT, "build", "ternion"))
    ap.add_argument("--model", default=os.path.join(ROOT, "models", "bundled", "bsa_digits.h5"))
    ap.add_argument("--input", default=os.path.join(ROOT, "models", "bundled", "digits_test.h5"))
    ap.add_argument("--profile", default="loihi-like")
    ap.add_argument("--weights", default="8,6,4,2")
    ap.add_argument("--membranes", default="24,16,12,8")
    ap.add_argument("--samples", type=int, default=0)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    rows = [("float", "float") + measure(args.ternion, args.model, args)]
    with tempfile.TemporaryDirectory() as tmp:
        for m in (int(x) for x in args.membranes.split(",")):
            for w in (int(x) for x in args.weights.split(",")):
                q = os.path.join(tmp, f"q{w}_{m}.h5")
                p = subprocess.run([args.ternion, "quantize", args.model, "-o", q, "--profile",
                                    args.profile, "--weight-bits", str(w), "--membrane-bits",
                                    str(m)], capture_output=True, text=True)
                if p.returncode != 0:
                    rows.append((w, m, None, 0, 0, 0, p.stderr.strip().split(": ")[-1]))
                    continue
                rows.append((w, m) + measure(args.ternion, q, args))
    print(f"model {os.path.basename(args.model)}, input {os.path.basename(args.input)}, "
          f"profile {args.profile}\n")
    print("| weights | membrane | accuracy | spikes / inference | overflows / inference | "
          "energy / inference (pJ) |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        if r[2] is None:
            print(f"| {r[0]} | {r[1]} | not mapped: {r[6]} | | | |")
            continue
        print(f"| {r[0]} | {r[1]} | {100 * r[2]:.2f} % | {r[3]:.0f} | {r[4]:.1f} | {r[5]:.4g} |")


if __name__ == "__main__":
    main()
