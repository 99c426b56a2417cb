"""Tiny test harness shared by the CLI tests: run ternion, collect named checks, report."""
import atexit
import json
import os
import shutil
import subprocess
import sys
import tempfile
import traceback

TERNION = sys.argv[1] if len(sys.argv) > 1 else "build/ternion"
TMP = tempfile.mkdtemp(prefix="ternion-cli-")
_results = []
_keep = []  # set when a check failed: its files stay for a look


@atexit.register
def _clean():
    if not _keep:
        shutil.rmtree(TMP, ignore_errors=True)


def path(name):
    return os.path.join(TMP, name)


def run(*args, check=True):
    p = subprocess.run([TERNION, *map(str, args)], capture_output=True, text=True)
    if check and p.returncode != 0:
        raise AssertionError(f"ternion {' '.join(map(str, args))} failed ({p.returncode}):\n{p.stderr}")
    return p


def expect_error(args, *parts):
    """Runs ternion expecting exit 1 and exactly one error line containing every part."""
    p = run(*args, check=False)
    assert p.returncode == 1, (p.returncode, p.stdout[-400:], p.stderr)
    err = p.stderr.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("ternion: error:"), p.stderr
    for m in parts:
        assert m in err[0], (m, err[0])
    return err[0]


def run_json(*args):
    return json.loads(run(*args, "--json", "--no-progress").stdout)


def test(fn):
    try:
        fn()
        _results.append((fn.__name__, None))
        print(f"ok   {fn.__name__}")
    except Exception:  # noqa: BLE001 - report every failure and continue
        _results.append((fn.__name__, traceback.format_exc()))
        print(f"FAIL {fn.__name__}\n{traceback.format_exc()}")
    return fn


def finish():
    failed = sum(1 for _, e in _results if e)
    print(f"{len(_results) - failed} passed, {failed} failed")
    if failed:
        _keep.append(True)
        print(f"files kept in {TMP}")
    sys.exit(1 if failed else 0)


def peak_rss_mb(args):
    """(exit code, stderr, peak resident MiB) of one ternion run, measured in a fresh process so
    that no earlier child's peak counts."""
    code = ("import resource, subprocess, sys\n"
            "p = subprocess.run(sys.argv[1:], capture_output=True, text=True)\n"
            "print(p.returncode)\nprint(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
            "sys.stderr.write(p.stderr)\n")
    p = subprocess.run([sys.executable, "-c", code, TERNION, *map(str, args)], capture_output=True,
                       text=True)
    rc, kb = p.stdout.split()
    return int(rc), p.stderr, int(kb) / 1024
