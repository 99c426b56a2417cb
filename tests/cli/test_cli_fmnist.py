#!/usr/bin/python3
"""The bundled Fashion-MNIST Transformers against PyTorch (ctest: test_cli_fmnist).

For models/bundled/{bsa,ssa}_fmnist.h5 on Debian's Fashion-MNIST test images (IDX, read
directly), ternion's predictions must equal PyTorch's (models/bundled/fmnist_reference.json)
image for image, and so must the per-layer spike counts and the attention's Q/K(/V) spike
counts. ctest runs the first 1000 images (the reference records their counts separately);
`--full` runs all 10 000 against the full-set counts. The event and dense engines must agree
on the first 50 images.

Usage: test_cli_fmnist.py path/to/ternion [--full]
Exit code 77 (skipped) when dataset-fashion-mnist is not installed.
"""
import json
import os
import subprocess
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
BUNDLED = os.path.join(ROOT, "models", "bundled")
IMAGES = "/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz"


def run(ternion, model, *extra):
    cmd = [ternion, "run", os.path.join(BUNDLED, model), "--input", IMAGES, "--json",
           "--no-progress", *extra]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def main():
    ternion = sys.argv[1]
    full = "--full" in sys.argv[2:]
    if not os.path.exists(IMAGES):
        print(f"skipped: {IMAGES} missing (apt-get install dataset-fashion-mnist)")
        sys.exit(77)
    ref = json.load(open(os.path.join(BUNDLED, "fmnist_reference.json")))
    failures = []
    for kind in ("bsa", "ssa"):
        r = ref[kind]
        n = r["samples"] if full else 1000
        counts = r if full else r["first_1000"]
        ev = run(ternion, r["model"], *([] if full else ["--samples", str(n)]))
        pred = ev["predictions"]
        bad = [i for i, (a, b) in enumerate(zip(pred, r["predictions"][:n])) if a != b]
        if len(pred) != n or bad:
            failures.append(f"{kind}: predictions differ at {bad[:10]}")
        layers = {L["name"]: L for L in ev["layers"]}
        for name, c in counts["spikes"].items():
            if layers[name]["spikes"] != c:
                failures.append(f"{kind}: {name} spikes {layers[name]['spikes']} != torch {c}")
        for key, c in counts["aux"].items():
            node, field = key.split("/")
            if layers[node]["attention"][field] != c:
                failures.append(f"{kind}: {key} {layers[node]['attention'][field]} != torch {c}")
        if full and abs(ev["accuracy"] - r["torch_test_accuracy"]) > 1e-12:
            failures.append(f"{kind}: accuracy {ev['accuracy']} != torch {r['torch_test_accuracy']}")
        a = run(ternion, r["model"], "--samples", "50", "--engine", "event")
        d = run(ternion, r["model"], "--samples", "50", "--engine", "dense")
        for la, ld in zip(a["layers"], d["layers"]):
            if la["spikes"] != ld["spikes"]:
                failures.append(f"{kind}: {la['name']} event {la['spikes']} dense {ld['spikes']}")
        if a["predictions"] != d["predictions"]:
            failures.append(f"{kind}: event and dense predictions differ")
        print(f"{kind}: {n} images, ternion accuracy {ev['accuracy']:.4f}, "
              f"{len(pred) - len(bad)}/{len(pred)} predictions equal PyTorch's, "
              f"{ev['timing']['simulate_s']:.2f} s simulated")
    for f in failures:
        print("FAIL", f)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
