"""Corrupted files through the CLI: seeded byte flips, zeroed ranges and truncations of the
bundled BSA model and test set, a NIR LIF network with sparse (CSR) weights and its spike input,
and an ANN attention weights file with its input. Every run must either succeed or fail with
exactly one error line that names the damaged file, exit 1, and leave no trace or output file
behind. Never a signal or a sanitizer report (the suite also runs under ASan + UBSan).

  /usr/bin/python3 tests/cli/test_cli_corrupt.py build/ternion
"""
import os
import random

import h5py
import numpy as np

from harness import TERNION, finish, path, run, test  # noqa: F401  (TERNION: the binary)

HERE = os.path.dirname(os.path.abspath(__file__))
BUNDLED = os.path.join(HERE, "..", "..", "models", "bundled")
RUNS_PER_FILE = 12


def mutations(data, rng, n):
    """n damaged copies of data: random bytes overwritten, a range zeroed, or the file cut."""
    for _ in range(n):
        b = bytearray(data)
        kind = rng.choice(["flip", "flip", "zero", "trunc"])
        if kind == "flip":
            for _ in range(rng.randint(1, 16)):
                b[rng.randrange(len(b))] = rng.randrange(256)
        elif kind == "zero":
            o = rng.randrange(len(b))
            b[o:o + 512] = bytes(len(b[o:o + 512]))
        else:
            b = b[:rng.randrange(len(b))]
        yield kind, bytes(b)


def check_runs(label, original, make_args, out_file, seed):
    """Runs make_args(damaged_path) on each damaged copy of `original`; returns (ok, failed)."""
    rng = random.Random(seed)
    data = open(original, "rb").read()
    counts = [0, 0]
    for i, (kind, b) in enumerate(mutations(data, rng, RUNS_PER_FILE)):
        bad = path(f"{label}_{i}.h5")
        with open(bad, "wb") as f:
            f.write(b)
        if os.path.exists(out_file):
            os.remove(out_file)
        p = run(*make_args(bad), check=False)
        what = f"{label} #{i} ({kind}): exit {p.returncode}, stderr {p.stderr[-600:]!r}"
        assert p.returncode in (0, 1), what
        assert "Sanitizer" not in p.stderr and "runtime error" not in p.stderr, what
        if p.returncode == 0:
            counts[0] += 1
            continue
        counts[1] += 1
        lines = [l for l in p.stderr.splitlines() if l.strip()]
        assert len(lines) == 1, what
        assert lines[0].startswith("ternion: error: ") and bad in lines[0], what
        assert not os.path.exists(out_file), what + " (output left behind)"
    print(f"     {label}: {counts[0]} damaged copies ran, {counts[1]} were refused")
    # Truncations and damaged headers must be refused: a run that never fails tests nothing.
    assert counts[1] >= 1, label
    return counts


@test
def corrupted_bundled_model_and_test_set():
    model, data = os.path.join(BUNDLED, "bsa_digits.h5"), os.path.join(BUNDLED, "digits_test.h5")
    trace = path("trace.h5")

    def args_model(bad):
        return ("run", bad, "--input", data, "--samples", 2, "--no-progress", "--json",
                "--trace", trace)

    def args_input(bad):
        return ("run", model, "--input", bad, "--samples", 2, "--no-progress", "--json",
                "--trace", trace)

    ok_m, failed_m = check_runs("bsa", model, args_model, trace, 11)
    check_runs("digits", data, args_input, trace, 12)
    # Weights are stored with checksums: damage inside them is caught, not simulated.
    assert failed_m >= RUNS_PER_FILE // 2, (ok_m, failed_m)


@test
def corrupted_nir_lif_network_with_sparse_weights():
    rng = np.random.default_rng(5)
    n_in, n = 300, 200
    # 5 % of the weights non-zero: the loader stores them compressed.
    w = ((rng.random((n, n_in)) < 0.05) * rng.normal(0.3, 0.1, (n, n_in))).astype(np.float32)
    model = path("lif.h5")
    with h5py.File(model, "w") as f:  # NIR's layout, as nir.write writes it
        f["version"] = "1.0.0"
        g = f.create_group("node")
        g["type"] = "NIRGraph"
        nodes = g.create_group("nodes")
        params = {
            "input": ("Input", {"shape": np.array([n_in])}),
            "fc": ("Linear", {"weight": w}),
            "lif": ("LIF", {"tau": np.full(n, 2e-3, np.float32), "r": np.full(n, 20.0, np.float32),
                            "v_leak": np.zeros(n, np.float32), "v_threshold": np.ones(n, np.float32),
                            "v_reset": np.zeros(n, np.float32)}),
            "output": ("Output", {"shape": np.array([n])}),
        }
        for name, (typ, ps) in params.items():
            ng = nodes.create_group(name)
            ng["type"] = typ
            for k, v in ps.items():
                ng.create_dataset(k, data=v, compression="gzip" if v.size > 1 else None)
        g["edges"] = np.array([("input", "fc"), ("fc", "lif"), ("lif", "output")],
                              dtype=h5py.string_dtype())
    spikes = path("lif_in.h5")
    with h5py.File(spikes, "w") as f:
        f["spikes"] = (rng.random((3, 40, n_in)) < 0.1).astype(np.int8)
        f["labels"] = np.arange(3, dtype=np.int64)
    # The intact pair runs.
    run("run", model, "--input", spikes, "--no-progress", "--json", "--dt", 1e-4)
    trace = path("lif_trace.h5")

    def args_model(bad):
        return ("run", bad, "--input", spikes, "--no-progress", "--json", "--dt", 1e-4,
                "--trace", trace)

    def args_input(bad):
        return ("run", model, "--input", bad, "--no-progress", "--json", "--dt", 1e-4,
                "--trace", trace)

    check_runs("lif", model, args_model, trace, 13)
    check_runs("lif_in", spikes, args_input, trace, 14)


@test
def corrupted_attention_weights_and_input():
    rng = np.random.default_rng(6)
    d, h, n = 32, 4, 24
    weights = path("w_cat.h5")
    with h5py.File(weights, "w") as f:
        f["W_A"] = rng.standard_normal((d, h)).astype(np.float32)
        f["W_V"] = rng.standard_normal((d, d)).astype(np.float32)
        f["W_O"] = rng.standard_normal((d, d)).astype(np.float32)
        f["b_V"] = rng.standard_normal(d).astype(np.float32)
    x = path("x.h5")
    with h5py.File(x, "w") as f:
        f["x"] = rng.standard_normal((2, n, d)).astype(np.float32)
    out = path("y.h5")
    run("attention", "--kind", "cat", "--weights", weights, "--input", x, "--output", out)

    def args_weights(bad):
        return ("attention", "--kind", "cat", "--weights", bad, "--input", x, "--output", out)

    def args_input(bad):
        return ("attention", "--kind", "cat", "--weights", weights, "--input", bad, "--output", out)

    check_runs("w_cat", weights, args_weights, out, 15)
    check_runs("x", x, args_input, out, 16)


finish()
