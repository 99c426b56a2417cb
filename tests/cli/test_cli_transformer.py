#!/usr/bin/python3
"""End-to-end check of the bundled spiking Transformers (ctest: test_cli_transformer).

For models/bundled/{bsa,ssa}_digits.h5 on models/bundled/digits_test.h5:
  * ternion's predictions equal PyTorch's (models/bundled/digits_reference.json) for every sample,
    and so do the per-layer spike counts and the attention's Q/K spike counts;
  * the event and dense engines give the same per-layer spikes and attention op counts.
Usage: test_cli_transformer.py path/to/ternion
"""
import json
import os
import subprocess
import sys

from torch_reference import compare_accuracy, compare_engines, compare_to_torch, finish

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
BUNDLED = os.path.join(ROOT, "models", "bundled")


def run(ternion, model, *extra):
    cmd = [ternion, "run", os.path.join(BUNDLED, model), "--input",
           os.path.join(BUNDLED, "digits_test.h5"), "--timesteps", "4", "--json", "--no-progress",
           *extra]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def main():
    ternion = sys.argv[1]
    ref = json.load(open(os.path.join(BUNDLED, "digits_reference.json")))
    failures = []
    for kind in ("bsa", "ssa"):
        r = ref[kind]
        ev = run(ternion, r["model"])
        differ = compare_to_torch(kind, ev, r["predictions"], r, failures)
        compare_accuracy(kind, ev, r, failures)
        a = run(ternion, r["model"], "--samples", "40", "--engine", "event")
        d = run(ternion, r["model"], "--samples", "40", "--engine", "dense")
        compare_engines(kind, a, d, failures, attention_ops=True)
        print(f"{kind}: ternion accuracy {ev['accuracy']:.4f}, torch {r['torch_test_accuracy']:.4f}, "
              f"{len(ev['predictions']) - differ}/{len(ev['predictions'])} predictions agree")
    finish(failures)


if __name__ == "__main__":
    main()
