#!/usr/bin/python3
"""How long each figure of tools/plot_trace.py (ternion.plot) takes on a long, wide trace.

    /usr/bin/python3 bench/plot_speed.py [build/ternion] [--steps 10000] [--neurons 20000] [--reps 3]

Writes a three-layer LIF model (input 64 -> NEURONS -> 200 -> 10, tests/cli/nirfile.py's
layered_lif), runs it for one sample of STEPS steps recording spikes (events), membranes and
energy, and a second time with spikes as a grid. Then, per figure, the median of REPS calls of
ternion.plot(trace, out, figures=[name]) in this process (reading, drawing and writing the PNG;
matplotlib already imported), and the median wall time of the whole command line
(tools/plot_trace.py, a fresh interpreter that imports matplotlib and h5py itself).
"""
import argparse
import importlib
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [os.path.join(ROOT, "python"), os.path.join(ROOT, "tests", "cli")]

from nirfile import layered_lif  # noqa: E402


def make_traces(ternion, tmp, steps, neurons):
    model, inputs = os.path.join(tmp, "m.h5"), os.path.join(tmp, "in.h5")
    layered_lif(model, inputs, neurons, steps)
    traces = {}
    for name, extra in (("events", ["--record", "spikes,membrane,energy"]),
                        ("grid", ["--record", "spikes", "--spike-format", "grid"])):
        traces[name] = os.path.join(tmp, f"{name}.h5")
        t0 = time.perf_counter()
        subprocess.run([ternion, "run", model, "--input", inputs, "--trace", traces[name], *extra,
                        "--no-progress", "--max-trace-bytes", str(8 << 30)],
                       check=True, capture_output=True)
        print(f"trace {name}: {os.path.getsize(traces[name]) / 1e6:.0f} MB, "
              f"written in {time.perf_counter() - t0:.1f} s")
    return traces


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("ternion", nargs="?", default=os.path.join(ROOT, "build", "ternion"))
    ap.add_argument("--steps", type=int, default=10000)
    ap.add_argument("--neurons", type=int, default=20000)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--keep", action="store_true", help="keep the traces and figures")
    a = ap.parse_args()
    t0 = time.perf_counter()
    importlib.import_module("matplotlib.figure")
    import ternion

    print(f"importing ternion and matplotlib: {time.perf_counter() - t0:.2f} s")
    tmp = tempfile.mkdtemp(prefix="ternion-plot-bench-")
    traces = make_traces(a.ternion, tmp, a.steps, a.neurons)
    out = os.path.join(tmp, "figs")
    cases = [("raster", "events"), ("raster", "grid"), ("rates", "events"), ("rates", "grid"),
             ("membrane", "events"), ("energy", "events")]
    print(f"{a.steps} steps, {a.neurons} + 210 neurons, median of {a.reps}, {os.cpu_count()} CPUs")
    print(f"{'figure':10s} {'spikes':7s} {'ternion.plot s':>14s} {'command line s':>15s}")
    for fig, kind in cases:
        inproc, cli = [], []
        for _ in range(a.reps):
            t0 = time.perf_counter()
            ternion.plot(traces[kind], out, figures=[fig])
            inproc.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            subprocess.run([sys.executable, os.path.join(ROOT, "tools", "plot_trace.py"), traces[kind],
                            "--out", out, "--figures", fig], check=True, capture_output=True)
            cli.append(time.perf_counter() - t0)
        print(f"{fig:10s} {kind:7s} {statistics.median(inproc):14.2f} {statistics.median(cli):15.2f}")
    if a.keep:
        print(f"files in {tmp}")
    else:
        shutil.rmtree(tmp)


if __name__ == "__main__":
    main()
