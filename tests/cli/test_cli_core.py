#!/usr/bin/env python3
"""End-to-end tests of `ternion run/info/encode` on NIR files written here with h5py.

The snnTorch cases follow snnTorch's NIR exporter (dt = 1e-4, tau = dt/(1-beta), r = tau/dt,
v_leak = 0, v_reset = 0) and compare with an independent numpy implementation of snnTorch's
own update: mem = beta*mem + input; spike where mem > threshold; zero reset. Weights are
multiples of 1/64 and inputs are spikes, so every synaptic sum is exact in float32 and equality
is exact, not approximate.
"""
import os
import signal
import stat
import subprocess
import time

import h5py
import numpy as np

from harness import TERNION, finish, path, run, run_json, test
from nirfile import Nir, spikes_file, trace_spikes

DT = 1e-4
rng = np.random.default_rng(2024)


def dyadic(shape, scale=1.0):
    return (np.round(rng.uniform(-scale, scale, shape) * 64) / 64).astype(np.float32)


def leaky(beta, thr):
    """snnTorch Leaky as its exporter writes it."""
    beta = np.asarray(beta, np.float32)
    tau = (DT / (1 - beta.astype(np.float64))).astype(np.float32)
    return dict(tau=tau, r=(tau / DT).astype(np.float32), v_leak=np.zeros_like(beta),
                v_threshold=np.full(beta.shape, thr, np.float32), v_reset=np.zeros_like(beta))


def snn_leaky_step(mem, inp, beta, thr):
    mem = beta * mem + inp
    spk = (mem > thr).astype(np.float32)
    return np.where(spk > 0, np.float32(0), mem).astype(np.float32), spk


@test
def snntorch_mlp_matches_exactly():
    n_in, n_h, n_out, T, S = 30, 40, 6, 60, 5
    w1, b1, w2 = dyadic((n_h, n_in)), dyadic(n_h, 0.25), dyadic((n_out, n_h))
    beta1 = rng.uniform(0.7, 0.98, n_h).astype(np.float32)
    beta2 = np.full(n_out, 0.85, np.float32)
    (Nir().node("input", "Input", shape=np.array([n_in]))
     .node("fc1", "Affine", weight=w1, bias=b1).node("lif1", "LIF", **leaky(beta1, 1.0))
     .node("fc2", "Linear", weight=w2).node("lif2", "LIF", **leaky(beta2, 0.5))
     .node("output", "Output", shape=np.array([n_out]))
     .edge("input", "fc1").edge("fc1", "lif1").edge("lif1", "fc2").edge("fc2", "lif2").edge("lif2", "output")
     .write(path("mlp.h5")))
    x = (rng.random((S, T, n_in)) < 0.3).astype(np.float32)
    spikes_file(path("mlp_in.h5"), x, labels=np.arange(S) % n_out)
    # numpy reference of snnTorch
    s1 = np.zeros((S, T, n_h), np.float32)
    s2 = np.zeros((S, T, n_out), np.float32)
    for s in range(S):
        m1, m2 = np.zeros(n_h, np.float32), np.zeros(n_out, np.float32)
        for t in range(T):
            m1, s1[s, t] = snn_leaky_step(m1, (w1 @ x[s, t] + b1).astype(np.float32), beta1, np.float32(1.0))
            m2, s2[s, t] = snn_leaky_step(m2, (w2 @ s1[s, t]).astype(np.float32), beta2, np.float32(0.5))
    for engine in ("event", "dense"):
        j = run_json("run", path("mlp.h5"), "--input", path("mlp_in.h5"), "--dt", DT, "--engine", engine,
                     "--trace", path(f"mlp_{engine}.h5"), "--threads", 2)
        layers = {l["name"]: l for l in j["layers"]}
        assert layers["lif1"]["spikes"] == int(s1.sum()), (layers["lif1"]["spikes"], s1.sum())
        assert layers["lif2"]["spikes"] == int(s2.sum())
        assert (trace_spikes(path(f"mlp_{engine}.h5"), "lif1") == s1).all()
        assert (trace_spikes(path(f"mlp_{engine}.h5"), "lif2") == s2).all()
        pred = s2.sum(1).argmax(1)
        assert j["predictions"] == pred.tolist()
        assert abs(j["accuracy"] - float((pred == np.arange(S) % n_out).mean())) < 1e-12
        if engine == "event":
            event_layers = layers
    assert s1.sum() > 100 and s2.sum() > 10  # the comparison saw real activity
    # AC count: every input spike costs the non-zero weights of its column.
    nnz_col = (w1 != 0).sum(0)
    assert event_layers["fc1"]["ops"]["ac"] == int((x * nnz_col).sum())
    assert event_layers["fc1"]["ops"]["mac"] == 0
    # The dense engine multiplies everything but books what the event engine does.
    for name in ("fc1", "lif1", "fc2", "lif2"):
        assert layers[name]["ops"] == event_layers[name]["ops"], name


@test
def snntorch_convnet_matches_exactly():
    C, H, W, T, S = 2, 8, 8, 30, 3
    wc, bc = dyadic((4, C, 3, 3)), dyadic(4, 0.25)
    wf = dyadic((5, 4 * 4 * 4))
    beta_c = np.full((4, H, W), 0.9, np.float32)
    beta_f = np.full(5, 0.8, np.float32)
    (Nir().node("input", "Input", shape=np.array([C, H, W]))
     .node("conv", "Conv2d", weight=wc, bias=bc, stride=np.array([1, 1]), padding=np.array([1, 1]),
           dilation=np.array([1, 1]), groups=1, input_shape=np.array([H, W]))
     .node("lif_c", "LIF", **leaky(beta_c, 1.0))
     .node("pool", "AvgPool2d", kernel_size=np.array([2, 2]), stride=np.array([2, 2]), padding=np.array([0, 0]))
     .node("flat", "Flatten", start_dim=0, end_dim=-1, input_type=np.array([4, 4, 4]))
     .node("fc", "Linear", weight=wf).node("lif_f", "LIF", **leaky(beta_f, 0.5))
     .node("output", "Output", shape=np.array([5]))
     .edge("input", "conv").edge("conv", "lif_c").edge("lif_c", "pool").edge("pool", "flat")
     .edge("flat", "fc").edge("fc", "lif_f").edge("lif_f", "output")
     .write(path("conv.h5")))
    x = (rng.random((S, T, C, H, W)) < 0.3).astype(np.float32)
    spikes_file(path("conv_in.h5"), x)
    xp = np.pad(x, ((0, 0), (0, 0), (0, 0), (1, 1), (1, 1)))
    sc = np.zeros((S, T, 4, H, W), np.float32)
    sf = np.zeros((S, T, 5), np.float32)
    for s in range(S):
        mc, mf = np.zeros((4, H, W), np.float32), np.zeros(5, np.float32)
        for t in range(T):
            cur = np.zeros((4, H, W), np.float32)
            for co in range(4):
                for ky in range(3):
                    for kx in range(3):
                        cur[co] += np.einsum("chw,c->hw", xp[s, t, :, ky:ky + H, kx:kx + W], wc[co, :, ky, kx])
            cur += bc[:, None, None]
            mc, sc[s, t] = snn_leaky_step(mc, cur, beta_c, np.float32(1.0))
            pooled = sc[s, t].reshape(4, 4, 2, 4, 2).mean((2, 4)).astype(np.float32)
            mf, sf[s, t] = snn_leaky_step(mf, (wf @ pooled.reshape(-1)).astype(np.float32), beta_f, np.float32(0.5))
    j = run_json("run", path("conv.h5"), "--input", path("conv_in.h5"), "--dt", DT, "--trace", path("conv_tr.h5"))
    layers = {l["name"]: l for l in j["layers"]}
    assert layers["lif_c"]["spikes"] == int(sc.sum())
    assert layers["lif_f"]["spikes"] == int(sf.sum())
    assert (trace_spikes(path("conv_tr.h5"), "lif_c").reshape(sc.shape) == sc).all()
    assert sf.sum() > 5


@test
def snntorch_recurrent_subgraph_matches():
    """RLeaky exported as a NIRGraph subgraph: Input -> LIF <-> Linear(w_rec) -> Output."""
    n_in, n_h, T, S = 12, 16, 40, 3
    w_in, w_rec = dyadic((n_h, n_in)), dyadic((n_h, n_h), 0.5)
    beta = np.full(n_h, 0.9, np.float32)
    rnn = (Nir().node("input", "Input", shape=np.array([n_h])).node("lif", "LIF", **leaky(beta, 1.0))
           .node("w_rec", "Linear", weight=w_rec).node("output", "Output", shape=np.array([n_h]))
           .edge("input", "lif").edge("lif", "w_rec").edge("w_rec", "lif").edge("lif", "output"))
    (Nir().node("input", "Input", shape=np.array([n_in])).node("fc", "Linear", weight=w_in)
     .node("rnn", rnn).node("output", "Output", shape=np.array([n_h]))
     .edge("input", "fc").edge("fc", "rnn").edge("rnn", "output")
     .write(path("rnn.h5")))
    x = (rng.random((S, T, n_in)) < 0.3).astype(np.float32)
    spikes_file(path("rnn_in.h5"), x)
    total = 0
    rec_pairs = 0  # the recurrent product at step t reads the spikes of t - 1 (none at t = 0)
    nnz_rec = (w_rec != 0).sum(0)
    for s in range(S):
        mem, spk = np.zeros(n_h, np.float32), np.zeros(n_h, np.float32)
        for t in range(T):
            rec_pairs += int((spk * nnz_rec).sum())
            cur = (w_in @ x[s, t]).astype(np.float32) + (w_rec @ spk).astype(np.float32)
            mem, spk = snn_leaky_step(mem, cur.astype(np.float32), beta, np.float32(1.0))
            total += int(spk.sum())
    for engine in ("event", "dense"):
        j = run_json("run", path("rnn.h5"), "--input", path("rnn_in.h5"), "--dt", DT,
                     "--engine", engine, "--count", "neurobench")
        layers = {l["name"]: l for l in j["layers"]}
        assert layers["rnn.lif"]["spikes"] == total, (layers["rnn.lif"]["spikes"], total)
        # The last step's spikes never reach the recurrent weights: not charged to them.
        assert layers["rnn.w_rec"]["ops"]["ac"] == rec_pairs, (layers["rnn.w_rec"]["ops"], rec_pairs)
        nnz_in = (w_in != 0).sum(0)
        assert j["neurobench"]["Effective_ACs"] * S == int((x * nnz_in).sum()) + rec_pairs
    assert total > 20


def expect_failure(args, must_contain, no_file=None):
    p = run(*args, check=False)
    assert p.returncode != 0, f"expected failure for {args}"
    err = p.stderr.strip().splitlines()
    assert len(err) == 1, f"expected one error line, got: {p.stderr!r}"
    assert err[0].startswith("ternion: error:"), err
    for m in must_contain:
        assert m in err[0], f"{m!r} not in {err[0]!r}"
    if no_file:
        assert not os.path.exists(no_file), f"partial output {no_file} left behind"
        leftovers = [f for f in os.listdir(os.path.dirname(no_file)) if ".tmp-" in f]
        assert not leftovers, leftovers


@test
def bad_inputs_give_one_clear_error_and_no_output():
    good = path("mlp.h5")
    out = path("never.h5")
    with open(path("text.h5"), "w") as f:
        f.write("not hdf5")
    data = open(good, "rb").read()
    with open(path("trunc.h5"), "wb") as f:
        f.write(data[: len(data) // 3])
    Nir().node("input", "Input", shape=np.array([3])).node("x", "Hyperbolic").node("output", "Output") \
        .edge("input", "x").edge("x", "output").write(path("unknown.h5"))
    bad = leaky(np.full(3, 0.9, np.float32), 1.0)
    bad["tau"] = np.array([0.001, -0.002, 0.001], np.float32)
    Nir().node("input", "Input", shape=np.array([3])).node("lif", "LIF", **bad).node("output", "Output") \
        .edge("input", "lif").edge("lif", "output").write(path("negtau.h5"))
    nan = leaky(np.full(3, 0.9, np.float32), 1.0)
    nan["v_threshold"] = np.array([1, np.nan, 1], np.float32)
    Nir().node("input", "Input", shape=np.array([3])).node("lif", "LIF", **nan).node("output", "Output") \
        .edge("input", "lif").edge("lif", "output").write(path("nan.h5"))
    spikes_file(path("wrongshape.h5"), np.zeros((1, 5, 7)))
    spikes_file(path("badvals.h5"), np.full((1, 5, 30), 3))
    tr = ["--trace", out]
    expect_failure(["run", path("missing.h5"), "--input", path("mlp_in.h5"), *tr], ["missing.h5", "no such file"], out)
    expect_failure(["run", path("text.h5"), "--input", path("mlp_in.h5"), *tr], ["text.h5", "not an HDF5"], out)
    expect_failure(["run", path("trunc.h5"), "--input", path("mlp_in.h5"), *tr], ["trunc.h5"], out)
    expect_failure(["run", path("unknown.h5"), "--input", path("mlp_in.h5"), *tr], ["unknown.h5", "nodes/x/type", "Hyperbolic"], out)
    expect_failure(["run", path("negtau.h5"), "--input", path("mlp_in.h5"), *tr], ["negtau.h5", "nodes/lif/tau", "positive"], out)
    expect_failure(["run", path("nan.h5"), "--input", path("mlp_in.h5"), *tr], ["nan.h5", "nodes/lif/v_threshold", "NaN"], out)
    # (mlp.h5 is an snnTorch export: without --dt its Euler decay is refused first)
    expect_failure(["run", good, "--input", path("wrongshape.h5"), "--dt", DT, *tr], ["wrongshape.h5", "shape"], out)
    expect_failure(["run", good, "--input", path("badvals.h5"), "--dt", DT, *tr], ["badvals.h5", "/spikes"], out)
    expect_failure(["run", good, "--input", path("mlp_in.h5"), "--engine", "quantum", *tr], ["--engine"], out)
    expect_failure(["run", good, "--input", path("mlp_in.h5"), "--threads", "0", *tr], ["--threads"], out)
    expect_failure(["run", good, "--input", path("mlp_in.h5"), "--dt", "-1", *tr], ["--dt"], out)
    expect_failure(["run", good, "--input", path("mlp_in.h5"), "--profile", "nonexistent-chip", *tr], ["profile"], out)
    expect_failure(["run", good, "--input", path("mlp_in.h5"), "--max-trace-bytes", "10", "--dt", DT, *tr], ["max-trace-bytes"], out)


@test
def existing_trace_survives_a_failed_run():
    target = path("keep.h5")
    run("run", path("mlp.h5"), "--input", path("mlp_in.h5"), "--dt", DT, "--trace", target, "--no-progress")
    before = open(target, "rb").read()
    p = run("run", path("negtau.h5"), "--input", path("mlp_in.h5"), "--trace", target, check=False)
    assert p.returncode != 0
    assert open(target, "rb").read() == before


@test
def outputs_never_replace_special_files_or_follow_planted_links():
    """An output replaces only a regular file: a FIFO, a link to a device (/dev/null) or a
    socket is refused naming the option, and left as it was; a symlink planted at the name a
    temporary used to have (".<name>.tmp-<pid>", pointing at the model) is never written."""
    args = ["run", path("mlp.h5"), "--input", path("mlp_in.h5"), "--dt", DT, "--no-progress"]
    fifo = path("out.fifo")
    if os.path.exists(fifo):
        os.unlink(fifo)
    os.mkfifo(fifo)
    expect_failure([*args, "--trace", fifo], ["--trace", "a FIFO", "refusing to replace"])
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    devlink = path("devnull.h5")
    if os.path.lexists(devlink):
        os.unlink(devlink)
    os.symlink("/dev/null", devlink)
    expect_failure([*args, "--trace", devlink], ["--trace", "a character device"])
    expect_failure(["encode", "--input", path("mlp_in.h5"), "--output", devlink, "--encoding",
                    "poisson", "--timesteps", "3"], ["--output", "a character device"])
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode) and os.path.islink(devlink)
    # The temporary is created exclusively under a random name: whatever a process planted at
    # any name beside the target is never opened. Plant links at the old fixed names for the
    # next pids; the model they point at must come through unchanged.
    model_bytes = open(path("mlp.h5"), "rb").read()
    target = path("planted.h5")
    planted = []
    for pid in range(os.getpid(), os.getpid() + 200):
        name = path(f".planted.h5.tmp-{pid}")
        if not os.path.lexists(name):
            os.symlink(path("mlp.h5"), name)
            planted.append(name)
    run(*args, "--trace", target)
    for name in planted:
        assert os.path.islink(name)
        os.unlink(name)
    assert open(path("mlp.h5"), "rb").read() == model_bytes
    assert os.path.isfile(target) and not os.path.islink(target)
    # The model compared with (--compare) is an input too: the trace may not replace it.
    import shutil
    shutil.copy(path("mlp.h5"), path("twin.h5"))
    twin_bytes = open(path("twin.h5"), "rb").read()
    expect_failure([*args, "--compare", path("twin.h5"), "--trace", path("twin.h5")],
                   ["--trace", "compare file", "refusing to overwrite an input"])
    assert open(path("twin.h5"), "rb").read() == twin_bytes


DIGITS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "models", "bundled",
                      "digits_test.h5")


def small_tmpfs(name):
    """A 1 MiB tmpfs mounted at a new directory, or None (with the reason printed) where this
    process may not mount one."""
    d = path(name)
    os.makedirs(d, exist_ok=True)
    p = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", d],
                       capture_output=True, text=True)
    if p.returncode != 0:
        print(f"     (skipped: cannot mount a tmpfs here: {p.stderr.strip() or p.returncode})")
        return None
    return d


@test
def full_disk_ends_with_one_error_and_the_old_file_intact():
    """A trace or an encoded file onto a full file system: one error naming the output, exit 1,
    no crash (libhdf5's exit handler used to crash on the file it could not flush), no
    temporary left, and an existing output unchanged."""
    d = small_tmpfs("full")
    if d is None:
        return
    try:
        target = os.path.join(d, "t.h5")
        with open(target, "w") as f:
            f.write("old")
        for args, out in (
                (["run", "--samples", "50", "--record", "spikes,membrane", "--no-progress",
                  "--trace", target], target),
                (["encode", "--input", DIGITS, "--output", os.path.join(d, "e.h5"),
                  "--encoding", "poisson", "--timesteps", "20000"], os.path.join(d, "e.h5"))):
            p = run(*args, check=False)
            assert p.returncode == 1, (p.returncode, p.stderr)  # not -11 (SIGSEGV)
            err = p.stderr.strip().splitlines()
            assert len(err) == 1 and err[0].startswith(f"ternion: error: {out}: "), err
            assert "disk full" in err[0], err
            assert not [f for f in os.listdir(d) if ".tmp-" in f]
        assert open(target).read() == "old"
    finally:
        subprocess.run(["umount", d])



@test
def encode_onto_a_full_disk_never_crashes():
    """encode --output onto a 1 MiB tmpfs, at sizes around the point where the data still fits
    but the file's final flush does not: libhdf5 keeps such a file half-open, and closing it a
    second time crashed (SIGSEGV, the temporary left behind). Each size either writes the file
    or ends with one error naming the output, exit 1, no temporary, the old file intact."""
    d = small_tmpfs("full-encode")
    if d is None:
        return
    try:
        out = os.path.join(d, "e.h5")
        outcomes = set()
        for steps in range(250, 601, 25):
            with open(out, "w") as f:
                f.write("old")  # also frees what the last size wrote
            p = run("encode", "--input", DIGITS, "--output", out, "--encoding", "poisson",
                    "--timesteps", steps, check=False)
            what = f"{steps} steps: exit {p.returncode}, {p.stderr!r}"
            assert p.returncode in (0, 1), what  # not -11 (SIGSEGV)
            assert not [f for f in os.listdir(d) if ".tmp-" in f], what
            outcomes.add(p.returncode)
            if p.returncode == 0:
                with h5py.File(out) as f:
                    assert f["spikes"].shape[1] == steps, what
                continue
            err = p.stderr.strip().splitlines()
            assert len(err) == 1 and err[0].startswith(f"ternion: error: {out}: "), what
            assert open(out).read() == "old", what
        assert outcomes == {0, 1}, f"the sizes did not cross the full-disk point: {outcomes}"
    finally:
        subprocess.run(["umount", d])


def signal_during_trace_write(sig, target):
    """Starts a traced run, sends `sig` once the trace's temporary has data in it; returns the
    exit status and stderr, or None when the write ended before it could be signalled."""
    d = os.path.dirname(target)
    for samples in (300, 1000):
        proc = subprocess.Popen([TERNION, "run", "--samples", str(samples), "--record",
                                 "spikes,membrane", "--no-progress", "--trace", target],
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        signalled = False
        while proc.poll() is None and not signalled:
            tmps = [os.path.join(d, f) for f in os.listdir(d) if ".tmp-" in f]
            try:
                if tmps and os.path.getsize(tmps[0]) > 0:
                    proc.send_signal(sig)
                    signalled = True
            except FileNotFoundError:
                pass
            time.sleep(0.002)
        _, err = proc.communicate(timeout=120)
        if signalled:
            return proc.returncode, err
    return None


@test
def hangup_or_term_during_a_trace_write_keeps_the_old_trace():
    """SIGHUP (the terminal closed) or SIGTERM while the trace is being written: the process
    dies by the signal (non-zero), the temporary is removed and the old trace is untouched.
    SIGHUP's default action used to leave the temporary behind."""
    d = path("signalled")
    os.makedirs(d, exist_ok=True)
    target = os.path.join(d, "t.h5")
    for sig in (signal.SIGHUP, signal.SIGTERM):
        with open(target, "w") as f:
            f.write("old trace")
        got = signal_during_trace_write(sig, target)
        assert got is not None, f"{sig.name}: the trace was written before it could be signalled"
        assert got[0] == -sig, (sig.name, got)
        assert sorted(os.listdir(d)) == ["t.h5"], (sig.name, os.listdir(d))
        assert open(target).read() == "old trace", sig.name


@test
def interrupted_run_leaves_no_file():
    """SIGINT during a long run: no trace at the target and no temporary left."""
    n = 2000
    w = (np.round(rng.uniform(-1, 1, (n, n)) * 8) / 64).astype(np.float32)
    Nir().node("input", "Input", shape=np.array([n])).node("fc", "Linear", weight=w) \
        .node("lif", "ternion.SJLIF", tau=2.0).node("output", "Output") \
        .edge("input", "fc").edge("fc", "lif").edge("lif", "output").write(path("long.h5"))
    spikes_file(path("long_in.h5"), rng.random((40, 200, n)) < 0.2)
    target = path("interrupted.h5")
    proc = subprocess.Popen([TERNION, "run", path("long.h5"), "--input", path("long_in.h5"), "--engine", "dense",
                             "--threads", "1", "--trace", target], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(1.5)
    assert proc.poll() is None, "run finished before it could be interrupted"
    proc.send_signal(signal.SIGINT)
    proc.wait(timeout=30)
    assert proc.returncode != 0
    assert not os.path.exists(target)
    assert not [f for f in os.listdir(os.path.dirname(target)) if ".tmp-" in f]


@test
def info_lists_nodes_shapes_and_edges():
    out = run("info", path("rnn.h5")).stdout
    for s in ("rnn.lif", "rnn.w_rec", "recurrent: one-step delay", "[16]", "LIF"):
        assert s in out, s
    types = run("info", "--types").stdout
    for t in ("LIF", "CubaLIF", "Conv2d", "ternion.TernaryLIF", "ternion.SJLIF"):
        assert t in types


@test
def encode_poisson_then_run_equals_run_with_poisson_encoding():
    x = rng.random((4, 30)).astype(np.float32)
    with h5py.File(path("analog.h5"), "w") as f:
        f["data"] = x
        f["labels"] = np.arange(4)
    run("encode", "--input", path("analog.h5"), "--output", path("enc.h5"), "--encoding", "poisson",
        "--timesteps", 60, "--seed", 7)
    with h5py.File(path("enc.h5"), "r") as f:
        s = f["spikes"][()]
    assert s.shape == (4, 60, 30) and set(np.unique(s)) <= {0, 1}
    assert abs(s.mean() - x.mean()) < 0.02
    a = run_json("run", path("mlp.h5"), "--input", path("enc.h5"), "--dt", DT)
    b = run_json("run", path("mlp.h5"), "--input", path("analog.h5"), "--dt", DT, "--encoding", "poisson",
                 "--timesteps", 60, "--seed", 7)
    assert [l["spikes"] for l in a["layers"]] == [l["spikes"] for l in b["layers"]]


@test
def json_report_has_the_documented_keys():
    j = run_json("run", path("mlp.h5"), "--input", path("mlp_in.h5"), "--dt", DT)
    for k in ("samples", "timesteps", "accuracy", "layers", "per_inference", "ann_equivalent", "timing"):
        assert k in j, k
    l = j["layers"][1]
    for k in ("name", "type", "neurons", "spikes", "firing_rate", "ops"):
        assert k in l, k
    for k in ("ac", "mac", "cmp", "neuron_update"):
        assert k in l["ops"], k
    assert j["ann_equivalent"]["mac"] == (30 * 40 + 40 * 6) * 60
    assert {"load_s", "simulate_s", "sample_ms"} <= set(j["timing"])
    sm = j["timing"]["sample_ms"]  # per-sample latency over the run's samples
    assert 0 < sm["min"] <= sm["median"] <= sm["max"] <= 1e3 * j["timing"]["simulate_s"]
    pi = j["per_inference"]
    assert abs(pi["energy_pj"] - (0.9 * pi["ops"]["ac"] + 4.6 * pi["ops"]["mac"])) < 1e-6 * pi["energy_pj"]


@test
def node_times_cover_every_node_and_leave_the_results_alone():
    base = run_json("run", path("mlp.h5"), "--input", path("mlp_in.h5"), "--dt", DT)
    j = run_json("run", path("mlp.h5"), "--input", path("mlp_in.h5"), "--dt", DT, "--node-times")
    assert "nodes" not in base["timing"]
    nodes = j["timing"]["nodes"]
    assert [n["name"] for n in nodes] == [l["name"] for l in j["layers"]]
    assert all(n["s"] >= 0 for n in nodes)
    assert abs(sum(n["share"] for n in nodes) - 1.0) < 1e-9
    # thread seconds of the nodes' steps fit in the run's wall time (one thread by default)
    assert sum(n["s"] for n in nodes) <= j["timing"]["simulate_s"] * j["threads"] + 1e-3
    for k in ("layers", "predictions", "per_inference"):
        assert j[k] == base[k], k
    text = run("run", path("mlp.h5"), "--input", path("mlp_in.h5"), "--dt", DT, "--node-times",
               "--no-progress").stdout
    assert "node (by time)" in text


finish()
