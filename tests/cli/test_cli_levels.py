#!/usr/bin/python3
"""Same results at every vector-kernel level (ctest: test_cli_levels).

ternion's hot loops run kernels built for x86-64-v2, -v3 and -v4 (sim/simd), picked for the CPU
at run time or forced with TERNION_ISA. Every level must give the same bits: for the bundled
Fashion-MNIST BSA and SSA Transformers and the digits models, in float and quantised to a
chip's integers (--arith fixed), the JSON report (predictions,
every layer's spikes, operation counts and energies) and the trace (spikes, membranes,
operation counts, attention scores and Shiftmax weights of the first samples) must be equal at
every level this CPU runs, with the event and the dense engine, on 1 and 2 threads.

Usage: test_cli_levels.py path/to/ternion
Exit code 77 (skipped) when this CPU runs only one level.
"""
import json
import os
import subprocess
import sys
import tempfile

import h5py
import numpy as np

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
BUNDLED = os.path.join(ROOT, "models", "bundled")
FMNIST = "/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz"


def levels(ternion):
    ok = []
    for lv in ("v2", "v3", "v4"):
        r = subprocess.run([ternion, "version"], env={**os.environ, "TERNION_ISA": lv},
                           capture_output=True, text=True)
        if r.returncode == 0:
            assert f"x86-64-{lv}" in r.stdout, r.stdout  # the forced level is the one reported
            ok.append(lv)
        else:
            assert "this CPU runs at most" in r.stderr, r.stderr
    return ok


def run(ternion, level, model, inp, trace, *extra):
    cmd = [ternion, "run", os.path.join(BUNDLED, model), "--json", "--no-progress",
           "--trace", trace, "--record", "all", "--record-samples", "0-2", *extra]
    cmd += ["--input", inp]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True,
                         env={**os.environ, "TERNION_ISA": level}).stdout
    j = json.loads(out)
    assert j["timing"]["kernels"].startswith(f"x86-64-{level}"), j["timing"]["kernels"]
    del j["timing"]
    return j


def datasets(path):
    out = {}
    with h5py.File(path, "r") as f:
        def visit(name, obj):
            if isinstance(obj, h5py.Dataset):
                out[name] = np.asarray(obj[()])
        f.visititems(visit)
    return out


def same(a, b):
    if a.dtype.kind == "f":
        return a.shape == b.shape and np.array_equal(a.view(np.uint8), b.view(np.uint8))
    return a.shape == b.shape and np.array_equal(a, b)


def main():
    ternion = sys.argv[1]
    lv = levels(ternion)
    if len(lv) < 2:
        print(f"skipped: this CPU runs only the {lv} kernels")
        sys.exit(77)
    digits = os.path.join(BUNDLED, "digits_test.h5")
    # The integer models too (--arith fixed): the integer neurons' rows are vectorised per level.
    cases = [("bsa_digits.h5", digits, ["--samples", "40"]),
             ("ssa_digits.h5", digits, ["--samples", "40", "--engine", "dense"]),
             ("bsa_digits.h5", digits, ["--samples", "40", "--arith", "fixed", "--profile",
                                        "loihi-like"])]
    if os.path.exists(FMNIST):
        cases += [("bsa_fmnist.h5", FMNIST, ["--samples", "60", "--threads", "2"]),
                  ("ssa_fmnist.h5", FMNIST, ["--samples", "60", "--engine", "dense"]),
                  ("ssa_fmnist.h5", FMNIST, ["--samples", "60", "--threads", "2", "--arith",
                                             "fixed", "--profile", "horowitz45-int8"])]
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        for model, inp, extra in cases:
            ref = None
            before = len(failures)
            for level in lv:
                # One name for every level's trace (the report names it), read before the next.
                trace = os.path.join(tmp, "trace.h5")
                if os.path.exists(trace):
                    os.remove(trace)
                j = run(ternion, level, model, inp, trace, *extra)
                d = datasets(trace)
                if ref is None:
                    ref = (level, j, d)
                    checked = [k for k in d if "spike" in k or "membrane" in k]
                    assert checked, f"{model}: the trace holds no spikes or membranes"
                    continue
                if j != ref[1]:
                    failures.append(f"{model}: JSON report at {level} differs from {ref[0]}")
                for k in ref[2]:
                    if k not in d or not same(ref[2][k], d[k]):
                        failures.append(f"{model}: trace {k} at {level} differs from {ref[0]}")
            if len(failures) == before:
                print(f"{model}: {len(ref[2])} trace datasets and the report equal at "
                      f"{', '.join(lv)}")
    if failures:
        print("\n".join(failures[:20]))
        sys.exit(1)
    print("test_cli_levels: all equal")


if __name__ == "__main__":
    main()
