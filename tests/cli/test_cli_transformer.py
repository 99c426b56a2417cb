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
        pred = ev["predictions"]
        bad = [i for i, (a, b) in enumerate(zip(pred, r["predictions"])) if a != b]
        if len(pred) != r["samples"] or bad:
            failures.append(f"{kind}: predictions differ at {bad[:10]}")
        layers = {L["name"]: L for L in ev["layers"]}
        for name, n in r["spikes"].items():
            if layers[name]["spikes"] != n:
                failures.append(f"{kind}: {name} spikes {layers[name]['spikes']} != torch {n}")
        for key, n in r["aux"].items():
            node, field = key.split("/")
            if layers[node]["attention"][field] != n:
                failures.append(f"{kind}: {key} {layers[node]['attention'][field]} != torch {n}")
        if abs(ev["accuracy"] - r["torch_test_accuracy"]) > 1e-12:
            failures.append(f"{kind}: accuracy {ev['accuracy']} != torch {r['torch_test_accuracy']}")
        a = run(ternion, r["model"], "--samples", "40", "--engine", "event")
        d = run(ternion, r["model"], "--samples", "40", "--engine", "dense")
        for la, ld in zip(a["layers"], d["layers"]):
            if la["spikes"] != ld["spikes"]:
                failures.append(f"{kind}: {la['name']} event {la['spikes']} dense {ld['spikes']}")
            if la["type"].startswith("ternion.") and la["category"] == "attention" and \
                    la["ops"] != ld["ops"]:
                failures.append(f"{kind}: {la['name']} ops differ between engines")
        if a["predictions"] != d["predictions"]:
            failures.append(f"{kind}: event and dense predictions differ")
        print(f"{kind}: ternion accuracy {ev['accuracy']:.4f}, torch {r['torch_test_accuracy']:.4f}, "
              f"{len(pred) - len(bad)}/{len(pred)} predictions agree")
    for f in failures:
        print("FAIL", f)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
