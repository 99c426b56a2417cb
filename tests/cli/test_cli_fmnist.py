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

from torch_reference import compare_accuracy, compare_engines, compare_to_torch, finish

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
        differ = compare_to_torch(kind, ev, r["predictions"][:n], counts, failures)
        if full:
            compare_accuracy(kind, ev, r, failures)
        a = run(ternion, r["model"], "--samples", "50", "--engine", "event")
        d = run(ternion, r["model"], "--samples", "50", "--engine", "dense")
        compare_engines(kind, a, d, failures)
        print(f"{kind}: {n} images, ternion accuracy {ev['accuracy']:.4f}, "
              f"{len(ev['predictions']) - differ}/{len(ev['predictions'])} predictions equal PyTorch's, "
              f"{ev['timing']['simulate_s']:.2f} s simulated")
    finish(failures)


if __name__ == "__main__":
    main()
