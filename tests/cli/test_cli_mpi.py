"""`mpirun -n K ternion run` against the same command in one process: the text report (less its
timing lines), --json (less "timing") and the trace file must be identical byte for byte, for
K = 1, 2, 3, on the bundled models and on a NIR LIF network; errors are reported once, with the
serial message, and every process stops.

usage: test_cli_mpi.py TERNION MPIEXEC   (exits 77, a skip, when ternion was built without MPI)
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import time

import h5py
import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from harness import TERNION, finish, path, run, test  # noqa: E402
from nirfile import Nir, spikes_file  # noqa: E402

MPIEXEC = sys.argv[2] if len(sys.argv) > 2 else "mpirun"
if "with MPI" not in run("version").stdout or not shutil.which(MPIEXEC):
    print("skipped: ternion was built without MPI (TERNION_MPI=OFF), or no mpirun")
    sys.exit(77)

# Root may start ranks here (CI runs as root); more ranks than cores are allowed.
ENV = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
           OMPI_MCA_rmaps_base_oversubscribe="1", OMPI_MCA_btl_vader_single_copy_mechanism="none")
DT = 1e-3
TIMING_LINES = ("time:", "processes:")


def mpirun(k, *args, timeout=300):
    cmd = [MPIEXEC, "-n", str(k), "--bind-to", "none", TERNION, "run", *map(str, args)]
    return subprocess.run(cmd, capture_output=True, text=True, env=ENV, timeout=timeout)


def report_text(stdout):
    return "\n".join(l for l in stdout.splitlines() if not l.startswith(TIMING_LINES))


def report_json(stdout):
    j = json.loads(stdout)
    j.pop("timing", None)
    if "compare" in j:
        j["compare"].pop("simulate_s")
    return j


def same_runs(args, ranks=(1, 2, 3), trace=None):
    """Serial and K-rank runs of `args` give the same report, JSON and trace bytes."""
    serial = run("run", *args, "--no-progress")
    want_trace = open(trace, "rb").read() if trace else None  # the command line is in it
    serial_json = run("run", *args, "--no-progress", "--json").stdout
    for k in ranks:
        if trace:
            os.remove(trace)
        p = mpirun(k, *args, "--no-progress")
        assert p.returncode == 0, f"{k} ranks: exit {p.returncode}\n{p.stderr}"
        assert report_text(p.stdout) == report_text(serial.stdout), f"{k} ranks: text differs\n{p.stdout}"
        assert "processes:" in p.stdout or k == 1, p.stdout
        if trace:
            got = open(trace, "rb").read()
            assert got == want_trace, f"{k} ranks: trace differs ({len(got)} vs {len(want_trace)} bytes)"
        p = mpirun(k, *args, "--no-progress", "--json")
        assert p.returncode == 0, p.stderr
        assert report_json(p.stdout) == report_json(serial_json), f"{k} ranks: --json differs"
        assert k == 1 or json.loads(p.stdout)["timing"]["ranks"] == k


def lif_network(name, n_in=12, n_h=20, n_out=4, S=7, T=9, seed=3):
    rng = np.random.default_rng(seed)

    def leaky(beta, thr):
        tau = (DT / (1 - np.float64(beta))) * np.ones(1)
        tau = np.full(n_h if thr == 1.0 else n_out, tau[0], np.float32)
        return dict(tau=tau, r=(tau / DT).astype(np.float32), v_leak=np.zeros_like(tau),
                    v_threshold=np.full(tau.shape, thr, np.float32), v_reset=np.zeros_like(tau))

    (Nir().node("input", "Input", shape=np.array([n_in]))
     .node("fc1", "Affine", weight=rng.normal(0, 0.6, (n_h, n_in)).astype(np.float32),
           bias=rng.normal(0, 0.1, n_h).astype(np.float32))
     .node("lif1", "LIF", **leaky(0.8, 1.0))
     .node("fc2", "Linear", weight=rng.normal(0, 0.6, (n_out, n_h)).astype(np.float32))
     .node("lif2", "LIF", **leaky(0.7, 0.5))
     .node("output", "Output", shape=np.array([n_out]))
     .edge("input", "fc1").edge("fc1", "lif1").edge("lif1", "fc2").edge("fc2", "lif2")
     .edge("lif2", "output").write(path(f"{name}.h5")))
    spikes_file(path(f"{name}_in.h5"), (rng.random((S, T, n_in)) < 0.3), labels=np.arange(S) % n_out)
    with __import__("h5py").File(path(f"{name}_analog.h5"), "w") as f:
        f["data"] = rng.random((S, n_in)).astype(np.float32)
        f["labels"] = np.arange(S) % n_out
    return path(f"{name}.h5")


def bundled(name):
    return os.path.join(os.path.dirname(__file__), "..", "..", "models", "bundled", name)


@test
def bundled_digits_run():
    tr = path("bsa.h5")
    same_runs([bundled("bsa_digits.h5"), "--input", bundled("digits_test.h5"), "--threads", "1",
               "--trace", tr, "--record", "spikes,ops,energy",
               "--record-samples", "0-5,170-190,355-359"], trace=tr)


@test
def compare_and_the_default_twin_run_split_too():
    # --compare, and the default run's bundled SSA twin, as one process reports them
    same_runs([bundled("bsa_digits.h5"), "--input", bundled("digits_test.h5"), "--threads", "1",
               "--compare", bundled("ssa_digits.h5")], ranks=(2, 3))
    p = mpirun(2, "--samples", "30", "--threads", "1", "--no-progress", "--json")
    assert p.returncode == 0, p.stderr
    j = json.loads(p.stdout)
    assert j["compare"]["model"].endswith("ssa_fmnist.h5") and j["compare"]["samples"] == 30
    serial = json.loads(run("run", "--samples", "30", "--threads", "1", "--no-progress",
                            "--json").stdout)
    assert report_json(p.stdout)["compare"] == report_json(json.dumps(serial))["compare"]


@test
def fashion_mnist_idx_subrange():
    # IDX images (gzip) with their sibling labels file, as the default run reads them
    images = "/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz"  # tools/install_deps.sh
    same_runs([bundled("bsa_fmnist.h5"), "--input", images, "--threads", "1", "--first", "7",
               "--samples", "40"], ranks=(2,))


@test
def bundled_ssa_syops_subrange():
    # syops: per-layer float sums (binary_in_sum) merged sample by sample as one process does
    same_runs([bundled("ssa_digits.h5"), "--input", bundled("digits_test.h5"),
               "--threads", "1", "--count", "syops", "--first", "11", "--samples", "100"],
              ranks=(2, 3))


@test
def nir_lif_network():
    model = lif_network("lif")
    tr = path("lif_trace.h5")
    same_runs([model, "--input", path("lif_in.h5"), "--threads", "2", "--trace", tr,
               "--record", "all"], trace=tr)
    # analog input, Poisson coding, syops: random numbers keyed by sample, not by process
    same_runs([model, "--input", path("lif_analog.h5"), "--encoding", "poisson", "-T", "6",
               "--threads", "1", "--count", "syops", "--trace", tr, "--spike-format", "grid"],
              ranks=(2, 3), trace=tr)
    # more ranks than samples: one rank simulates nothing
    same_runs([model, "--input", path("lif_in.h5"), "--threads", "1", "--first", "5",
               "--samples", "2", "--trace", tr], ranks=(3,), trace=tr)


def expect_same_error(args, ranks=(2, 3)):
    serial = run("run", *args, "--no-progress", check=False)
    assert serial.returncode != 0
    line = [l for l in serial.stderr.splitlines() if l.startswith("ternion:")]
    assert len(line) == 1, serial.stderr
    for k in ranks:
        t0 = time.time()
        p = mpirun(k, *args, "--no-progress", timeout=120)
        got = [l for l in p.stderr.splitlines() if l.startswith("ternion:")]
        assert p.returncode != 0, f"{k} ranks: exit 0"
        assert got == line, f"{k} ranks: {got} != {line}\n{p.stderr}"
        assert time.time() - t0 < 60
    return line[0]


@test
def errors_reported_once():
    model = lif_network("lif_err")
    expect_same_error([model, "--input", path("lif_err_in.h5"), "--engine", "warp"])
    expect_same_error([model, "--input", path("nonexistent.h5")])
    expect_same_error([model, "--input", path("lif_err_in.h5"), "--trace", path("t.h5"),
                       "--record-samples", "3,40"])
    # a defect in the samples of the second and third ranks only
    bad = (np.random.default_rng(1).random((8, 9, 12)) < 0.3).astype(np.int8)
    bad[6, 4, 3] = 2
    spikes_file(path("bad_in.h5"), bad)
    msg = expect_same_error([model, "--input", path("bad_in.h5")], ranks=(1, 2, 3))
    assert "sample 6" in msg, msg
    # only the samples a run covers are read: a defect outside them is no error, serially or not
    same_runs([model, "--input", path("bad_in.h5"), "--threads", "1", "--samples", "3"],
              ranks=(2, 3))
    # time-first [T, S, n], read by steps: the defect reported is the first by sample, then step
    # (sample 2 at step 7, not sample 6 at step 1), whichever rank holds which samples
    tf = np.transpose((np.random.default_rng(4).random((8, 9, 12)) < 0.3).astype(np.int8),
                      (1, 0, 2)).copy()
    tf[1, 6, 0] = 3
    tf[7, 2, 5] = -2
    spikes_file(path("bad_tf.h5"), tf)
    msg = expect_same_error([model, "--input", path("bad_tf.h5"), "--layout", "time-first"],
                            ranks=(1, 2, 3))
    assert "sample 2, step 7, element 5" in msg, msg
    data = np.random.default_rng(2).random((9, 12)).astype(np.float32)
    data[7, 5] = np.nan
    with __import__("h5py").File(path("nan_in.h5"), "w") as f:
        f["data"] = data
        f["labels"] = np.arange(9) % 4
    msg = expect_same_error([model, "--input", path("nan_in.h5"), "-T", "4", "--first", "1",
                             "--samples", "7"])
    assert "sample 7" in msg, msg
    same_runs([model, "--input", path("nan_in.h5"), "-T", "4", "--threads", "1", "--first", "1",
               "--samples", "4"], ranks=(2, 3))


def two_input_network(name, S=8, T=7, seed=5):
    """Input a (spikes) and Input b (analog) through Linear -> LIF each, summed into a LIF."""
    rng = np.random.default_rng(seed)

    def leaky(beta, n=6):
        tau = np.full(n, DT / (1 - beta), np.float32)
        return dict(tau=tau, r=(tau / DT).astype(np.float32), v_leak=np.zeros(n, np.float32),
                    v_threshold=np.full(n, 0.5, np.float32), v_reset=np.zeros(n, np.float32))

    (Nir().node("a", "Input", shape=np.array([10])).node("b", "Input", shape=np.array([5]))
     .node("fa", "Linear", weight=rng.normal(0, 0.6, (6, 10)).astype(np.float32))
     .node("fb", "Linear", weight=rng.normal(0, 0.6, (6, 5)).astype(np.float32))
     .node("la", "LIF", **leaky(0.8)).node("lb", "LIF", **leaky(0.7))
     .node("join", "ternion.Identity").node("lo", "LIF", **leaky(0.6))
     .node("output", "Output", shape=np.array([6]))
     .edge("a", "fa").edge("fa", "la").edge("b", "fb").edge("fb", "lb").edge("la", "join")
     .edge("lb", "join").edge("join", "lo").edge("lo", "output").write(path(f"{name}.h5")))
    with __import__("h5py").File(path(f"{name}_in.h5"), "w") as f:
        f["inputs/a/spikes"] = (rng.random((S, T, 10)) < 0.3).astype(np.int8)
        f["inputs/b/data"] = rng.random((S, 5)).astype(np.float32)
        f["labels"] = np.arange(S) % 6
    with __import__("h5py").File(path(f"{name}_bad.h5"), "w") as f:
        f["inputs/a/spikes"] = (rng.random((S, T, 10)) < 0.3).astype(np.int8)
        f["inputs/b/data"] = rng.random((S - 1, 5)).astype(np.float32)
    return path(f"{name}.h5")


@test
def several_input_nodes():
    # each rank reads its share of both datasets; Poisson numbers keyed by sample and input
    model = two_input_network("two")
    tr = path("two_trace.h5")
    same_runs([model, "--input", path("two_in.h5"), "--threads", "1", "--trace", tr,
               "--record", "all"], trace=tr)
    same_runs([model, "--input", path("two_in.h5"), "--encoding", "poisson", "--threads", "1",
               "--first", "1", "--samples", "6", "--trace", tr], ranks=(2, 3), trace=tr)
    msg = expect_same_error([model, "--input", path("two_bad.h5")])
    assert "/inputs/b/data: has 7 samples, /inputs/a/spikes has 8" in msg, msg


def rank_pid(root, rank):
    """The pid of MPI rank `rank` among the children of mpirun (`root`)."""
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            env = open(f"/proc/{pid}/environ", "rb").read().split(b"\0")
            ppid = int(open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        if ppid == root and f"OMPI_COMM_WORLD_RANK={rank}".encode() in env:
            return int(pid)
    return None


@test
def slow_network():
    # 400 neurons, Poisson input, 6 samples: about a second per sample per 200 000 steps on one
    # thread, without a big file.
    rng = np.random.default_rng(5)
    n = 400
    tau = np.full(n, 0.02, np.float32)
    (Nir().node("input", "Input", shape=np.array([n]))
     .node("fc", "Linear", weight=rng.normal(0, 0.2, (n, n)).astype(np.float32))
     .node("lif", "LIF", tau=tau, r=np.full(n, 20, np.float32), v_leak=np.zeros(n, np.float32),
           v_threshold=np.ones(n, np.float32), v_reset=np.zeros(n, np.float32))
     .node("output", "Output", shape=np.array([n]))
     .edge("input", "fc").edge("fc", "lif").edge("lif", "output").write(path("slow.h5")))
    with h5py.File(path("slow_in.h5"), "w") as f:
        f["data"] = (rng.random((6, n)) * 0.1).astype(np.float32)


def start_ranks(k, steps, tr, env=ENV):
    """The slow network on k ranks, tracing to `tr`, which holds an older trace first."""
    slow_network()
    with open(tr, "wb") as f:
        f.write(b"older trace")
    cmd = [MPIEXEC, "-n", str(k), "--bind-to", "none", TERNION, "run", path("slow.h5"), "--input",
           path("slow_in.h5"), "--timesteps", str(steps), "--encoding", "poisson", "--threads",
           "1", "--no-progress", "--trace", tr, "--record", "ops", "--record-nodes", "output",
           "--record-samples", "0"]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, text=True)
    victim = None
    for _ in range(200):
        time.sleep(0.05)
        victim = rank_pid(p.pid, 1)
        if victim:
            break
    assert victim, "rank 1 not found"
    return p, victim


def hit_rank(p, victim, sig, tr, limit_s, what):
    """Sends `sig` to rank 1 mid-run: the job must end within limit_s, non-zero, leaving the
    older trace at `tr` and no temporary file. Returns the job's standard error."""
    assert p.poll() is None, f"the run ended before rank 1 was {what}: make it longer"
    t0 = time.time()
    os.kill(victim, sig)
    try:
        _, err = p.communicate(timeout=limit_s)
    except subprocess.TimeoutExpired:
        p.kill()
        raise AssertionError(f"the job did not end within {limit_s} s of rank 1 being {what}")
    finally:
        try:
            os.kill(victim, signal.SIGKILL)
        except ProcessLookupError:
            pass
    assert p.returncode != 0
    assert open(tr, "rb").read() == b"older trace"
    prefix = "." + os.path.basename(tr) + ".tmp"
    leftovers = [f for f in os.listdir(os.path.dirname(tr)) if f.startswith(prefix)]
    assert not leftovers, leftovers
    print(f"     rank 1 {what}: job ended {time.time() - t0:.1f} s later")
    return err


@test
def killed_rank_stops_the_job_and_leaves_no_trace():
    # Long enough to be killed mid-run on any machine: a million steps per sample.
    tr = path("kept.h5")
    p, victim = start_ranks(2, 1000000, tr)
    time.sleep(1.0)
    hit_rank(p, victim, signal.SIGKILL, tr, 60, "killed")


@test
def hung_rank_is_timed_out():
    # Rank 1 stopped (SIGSTOP) mid-run: rank 0 finishes its share, waits at the next agreement
    # TERNION_MPI_TIMEOUT (2 s) plus twice its own time, then ends the job.
    tr = path("kept_hung.h5")
    p, victim = start_ranks(2, 200000, tr, env=dict(ENV, TERNION_MPI_TIMEOUT="2"))
    time.sleep(0.5)
    err = hit_rank(p, victim, signal.SIGSTOP, tr, 120, "stopped")
    assert "did not answer within" in err and "TERNION_MPI_TIMEOUT" in err, err


finish()
