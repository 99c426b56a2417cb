"""Every Python entry point driven with degenerate and random arguments (empty and zero-sized
arrays, NaN, wrong dtypes and ranks, out-of-range integers, bogus names and paths): each call
returns, or raises ternion.Error (or TypeError/ValueError for a wrong Python type), never a
RuntimeError from inside the bindings, and never crashes the interpreter.

The calls run in one child interpreter that reports each case before and after it, so a crash
names the case that caused it. Cases are generated from a fixed seed (a small property-based
sweep); the list is printed on failure."""
import json
import os
import subprocess
import sys

import pytest

CHILD = r'''
import json, os, sys, traceback
import numpy as np
sys.path.insert(0, sys.argv[1])
import ternion
rng = np.random.default_rng(int(sys.argv[3]))
tmp = sys.argv[2]
digits = ternion.load_bundled("bsa_digits")
f32 = np.float32

def odd_arrays():
    """Arrays a caller may hand over by mistake: empty, zero-sized axes, NaN, huge, wrong types."""
    shapes = [(0,), (0, 4), (3, 0, 64), (2, 4, 0), (1, 1), (2, 4, 64), (4, 2, 64), (1, 4, 8, 8),
              (2, 64), (5,), (2, 4, 65)]
    kinds = [np.int8, np.float32, np.float64, np.bool_, np.uint8, np.int64, np.complex64]
    out = [np.array([]), np.array(3.0), np.full((2, 64), np.nan, f32), np.full((2, 64), 1e30, f32),
           np.array(["a", "b"]), [[1, 0], [0, 1]], None]
    for _ in range(24):
        shape = shapes[rng.integers(len(shapes))]
        kind = kinds[rng.integers(len(kinds))]
        out.append((rng.integers(-1, 2, shape) if kind != np.complex64 else np.zeros(shape)).astype(kind))
    return out

INTS = [0, -1, 1, 2 ** 31, 2 ** 63, -(2 ** 63) - 1, 10 ** 30, 1.5, "3", None]

def cases():
    for x in odd_arrays():
        yield "run x", lambda x=x: ternion.run(digits, x)
        yield "run x analog", lambda x=x: ternion.run(digits, x, kind="analog", timesteps=2)
    for name in ("timesteps", "threads", "samples", "first", "seed", "max_record_bytes"):
        for v in INTS:
            yield f"run {name}={v!r}", lambda n=name, v=v: ternion.run(digits, **{n: v})
    for k, v in (("engine", "gpu"), ("count", "bogus"), ("profile", "nope"), ("encoding", "morse"),
                 ("layout", "XY"), ("kind", "weird"), ("spike_format", "bogus"),
                 ("record", ["nothing"]), ("record_nodes", ["nobody"]), ("labels", [1.5, 2]),
                 ("labels", np.zeros((3, 3))), ("trace", tmp), ("trace", "")):
        yield f"run {k}={v!r}", lambda k=k, v=v: ternion.run(digits, **{k: v})
    for path in ("", "/", tmp, os.path.join(tmp, "missing.h5"), "/dev/null"):
        yield f"load {path!r}", lambda p=path: ternion.load(p)
        yield f"run input {path!r}", lambda p=path: ternion.run(digits, p)
        yield f"map {path!r}", lambda p=path: ternion.map(p, "dynapcnn")
        yield f"quantize {path!r}", lambda p=path: ternion.quantize(p, os.path.join(tmp, "q.h5"))
    for bits in INTS:
        yield f"quantize weight_bits={bits!r}", lambda b=bits: ternion.quantize(
            digits.path, os.path.join(tmp, "q.h5"), weight_bits=b)
    for chip in ("", "nope", "/", tmp):
        yield f"map chip {chip!r}", lambda c=chip: ternion.map(digits, c)
    for rates in ((), (0.1,), (-1, 0, 0), (np.nan, 0, 0), ("a", 0, 0)):
        yield f"map rates {rates!r}", lambda r=rates: ternion.map(digits, "xylo-audio2", rates=r)
    for nodes, edges in (({}, []), ({"input": {}}, []), ({"input": {"type": "Input"}}, []),
                         ({"input": {"type": "Input", "shape": np.array([0])}}, []),
                         ({"input": {"type": "Input", "shape": np.array([4])},
                           "fc": {"type": "Linear", "weight": np.zeros((0, 4), f32)}},
                          [("input", "fc")]),
                         ({"input": {"type": "Input", "shape": np.array([4])}},
                          [("input", "nowhere")])):
        yield f"build {list(nodes)}", lambda n=nodes, e=edges: ternion.build(n, e)
    for kind in ternion.attention_kinds() + ["bogus"]:
        for x in (np.zeros((1, 0, 8), f32), np.zeros((0, 4, 8), f32), np.zeros((1, 4, 0), f32),
                  np.zeros((4, 8), f32), np.full((1, 4, 8), np.nan, f32)):
            yield f"attention {kind} {x.shape}", lambda k=kind, x=x: ternion.attention(k, {}, x)
    ev = {k: np.array([0, 1, 2]) for k in "txyp"}
    for events, kw in ((ev, dict(frames=0, size=(4, 4))), (ev, dict(frames=2, size=(0, 4))),
                       ({k: np.array([]) for k in "txyp"}, dict(frames=2, size=(4, 4))),
                       (dict(ev, x=np.array([0, 9, 1])), dict(frames=2, size=(4, 4))),
                       (dict(ev, t=np.array([2, 1, 0])), dict(frames=2, split_by="time", size=(4, 4))),
                       (dict(ev, t=np.array([0.5, 1, 2])), dict(frames=2, size=(4, 4))),
                       (ev, dict(frames=2, split_by="sideways", size=(4, 4))),
                       (ev, dict(duration=-1, size=(4, 4))), (ev, dict(frames=10 ** 12, size=(4, 4)))):
        yield f"frames {kw}", lambda e=events, kw=kw: ternion.frames(e, **kw)
    for name in ("", "nope", "/etc/passwd"):
        yield f"describe_profile {name!r}", lambda n=name: ternion.describe_profile(n)
        yield f"load_bundled {name!r}", lambda n=name: ternion.load_bundled(n)

ok_types = (ternion.Error, TypeError, ValueError)
for i, (label, call) in enumerate(cases()):
    print("START", i, json.dumps(label), flush=True)
    try:
        call()
        outcome = "returned"
    except ok_types as e:
        outcome = type(e).__name__ + ": " + str(e).splitlines()[0][:120] if str(e) else type(e).__name__
    except Exception as e:  # noqa: BLE001 - anything else is the finding
        outcome = "BAD " + type(e).__name__ + ": " + str(e)[:200]
    print("DONE", i, json.dumps(outcome), flush=True)
'''


@pytest.mark.parametrize("seed", [1, 2])
def test_every_entry_point_survives_degenerate_arguments(tmp_path, request, seed):
    package = request.config.getoption("--package")
    if not package:
        pytest.skip("needs the built package (--package)")
    p = subprocess.run([sys.executable, "-c", CHILD, package, str(tmp_path), str(seed)],
                       capture_output=True, text=True, timeout=600,
                       env=dict(os.environ, OMP_NUM_THREADS="1"))
    started, done = {}, {}
    for line in p.stdout.splitlines():
        tag, i, rest = line.split(" ", 2)
        (started if tag == "START" else done)[int(i)] = json.loads(rest)
    crashed = [started[i] for i in started if i not in done]
    assert p.returncode == 0 and not crashed, f"exit {p.returncode} in {crashed}\n{p.stderr[-2000:]}"
    bad = [(started[i], done[i]) for i in done if done[i].startswith("BAD")]
    assert not bad, "\n".join(f"{a}: {b}" for a, b in bad)
    assert len(done) > 150, len(done)
