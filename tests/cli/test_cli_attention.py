#!/usr/bin/env python3
"""CLI test of `ternion attention` against an independent numpy reference (softmax, CAT with a
prime N, cat-causal), plus the error paths: one line, non-zero exit, no output file left."""
import json
import os
import subprocess
import sys
import tempfile

import h5py
import numpy as np

TERNION = sys.argv[1]
rng = np.random.default_rng(0)
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def run(*args):
    return subprocess.run([TERNION, *args], capture_output=True, text=True)


def softmax(z, axis):
    e = np.exp(z - z.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def ref_softmax(x, w, H):
    N, D = x.shape
    d = D // H
    q, k, v = (x @ w[f"W_{n}"] + w[f"b_{n}"] for n in "QKV")
    o = np.zeros_like(q)
    for h in range(H):
        s = slice(h * d, (h + 1) * d)
        o[:, s] = softmax(q[:, s] @ k[:, s].T / np.sqrt(d), 1) @ v[:, s]
    return o @ w["W_O"] + w["b_O"]


def ref_cat(x, w, causal=False):
    N, D = x.shape
    H = w["W_A"].shape[1]
    d = D // H
    z = softmax(x @ w["W_A"] + w["b_A"], 0)  # over tokens
    v = x @ w["W_V"] + w["b_V"]
    i, j = np.meshgrid(np.arange(N), np.arange(N), indexing="ij")
    o = np.zeros_like(v)
    for h in range(H):
        R = z[(i - j) % N, h]  # Roll[i, j] = z[(i - j) mod N]
        if causal:
            R = np.tril(R)
        o[:, h * d:(h + 1) * d] = R @ v[:, h * d:(h + 1) * d]
    return o @ w["W_O"] + w["b_O"]


def lin(w, name, i, o):
    w[f"W_{name}"] = rng.normal(0, 1 / np.sqrt(i), (i, o)).astype(np.float32)
    w[f"b_{name}"] = rng.normal(0, 0.1, (o,)).astype(np.float32)


with tempfile.TemporaryDirectory() as tmp:
    def path(n):
        return os.path.join(tmp, n)

    B, N, D, H = 2, 13, 16, 4  # N = 13: prime
    x = rng.normal(size=(B, N, D)).astype(np.float32)
    with h5py.File(path("x.h5"), "w") as f:
        f["x"] = x

    ws = {}
    for n in "QKVO":
        lin(ws, n, D, D)
    with h5py.File(path("softmax.h5"), "w") as f:
        for k, v in ws.items():
            f[k] = v
        f["heads"] = H
    wc = {}
    lin(wc, "A", D, H)
    lin(wc, "V", D, D)
    lin(wc, "O", D, D)
    with h5py.File(path("cat.h5"), "w") as f:
        for k, v in wc.items():
            f[k] = v

    for kind, wf, ref in [("softmax", "softmax.h5", lambda s: ref_softmax(s, ws, H)),
                          ("cat", "cat.h5", lambda s: ref_cat(s, wc)),
                          ("cat-causal", "cat.h5", lambda s: ref_cat(s, wc, True))]:
        r = run("attention", "--kind", kind, "--weights", path(wf), "--input", path("x.h5"),
                "--output", path("y.h5"), "--json")
        check(r.returncode == 0, f"{kind}: exit {r.returncode}: {r.stderr}")
        if r.returncode:
            continue
        rep = json.loads(r.stdout)
        check(rep["ops"]["mac"] == 2 * rep["ops_per_sample"]["mac"], f"{kind}: ops cover the batch")
        check(rep["energy"]["total_pj"] > 0, f"{kind}: energy reported")
        with h5py.File(path("y.h5")) as f:
            y = f["y"][...]
        check(y.shape == (B, N, D), f"{kind}: output shape {y.shape}")
        err = max(np.abs(y[b] - ref(x[b].astype(np.float64))).max() for b in range(B))
        check(err < 1e-4, f"{kind}: max error {err}")
        print(f"{kind}: max |ternion - numpy| = {err:.2e}")

    # Error paths: one line on stderr, non-zero exit, no output left behind.
    with h5py.File(path("bad.h5"), "w") as f:
        xb = x.copy()
        xb[1, 3, 2] = np.nan
        f["x"] = xb
    with h5py.File(path("badw.h5"), "w") as f:
        for k, v in ws.items():
            f[k] = v
        f["heads"] = 3  # does not divide 16
    cases = [
        (["--weights", path("softmax.h5"), "--input", path("bad.h5")], "NaN"),
        (["--weights", path("badw.h5"), "--input", path("x.h5")], "heads"),
        (["--weights", path("cat.h5"), "--input", path("x.h5"), "--kind", "cat-avgkey"], "W_Q"),
        (["--weights", path("softmax.h5"), "--input", path("missing.h5")], "missing.h5"),
        (["--weights", path("softmax.h5"), "--input", path("x.h5"), "--kind", "bogus"], "bogus"),
    ]
    for extra, needle in cases:
        out = path("never.h5")
        args = ["attention", "--kind", "softmax", "--output", out] + extra
        if "--kind" in extra[4:]:
            args = ["attention", "--output", out] + extra
        r = run(*args)
        lines = r.stderr.strip().splitlines()
        check(r.returncode != 0, f"{needle}: non-zero exit")
        check(len(lines) == 1 and needle in lines[0], f"{needle}: one line naming it: {r.stderr!r}")
        check(not os.path.exists(out), f"{needle}: no output file")
        check(not [p for p in os.listdir(tmp) if ".tmp-" in p], f"{needle}: no temporary file")

    r = run("bench", "attention", "--kind", "cat", "--tokens", "64", "--dim", "32", "--heads", "4",
            "--repeats", "2", "--json")
    check(r.returncode == 0 and json.loads(r.stdout)["ms_median"] > 0, "bench attention runs")
    r = run("bench", "nothing")
    check(r.returncode != 0 and "unknown bench subcommand" in r.stderr, "bench: unknown subcommand")

if failures:
    print(f"{len(failures)} checks failed")
    sys.exit(1)
print("all CLI attention checks passed")
