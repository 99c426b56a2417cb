#!/usr/bin/env python3
"""Damaged HDF5 files that crash or hang libhdf5 itself (found by the fuzzers, kept in
tests/fuzz/regressions/<harness>/): each is given to the command that reads that kind of file,
which must refuse it with exit 1 and exactly one stderr line naming the file, leave no file
behind (no output, temporary or core file) and leave the file unchanged. The valid seed corpus
must still be read.

  /usr/bin/python3 tests/cli/test_cli_hdf5_damage.py build/ternion
"""
import glob
import hashlib
import os
import shutil
import subprocess

from harness import TERNION, TMP, finish, path, run, test

HERE = os.path.dirname(os.path.abspath(__file__))
FUZZ = os.path.join(HERE, "..", "fuzz")
BUNDLED = os.path.join(HERE, "..", "..", "models", "bundled")


def command(kind, f, out):
    """The ternion command that reads a file of this harness's kind."""
    if kind == "model":
        return ["info", f]
    if kind == "input":
        return ["run", os.path.join(BUNDLED, "ssa_digits.h5"), "--input", f, "--samples", "2",
                "--trace", out, "--no-progress"]
    return ["attention", "--kind", "softmax", "--weights", f, "--input",
            os.path.join(FUZZ, "corpus", "weights", "softmax.h5"), "--output", out]


def run_env(env, *args):
    p = subprocess.run([TERNION, *args], capture_output=True, text=True, env={**os.environ, **env})
    assert p.returncode == 0, p.stderr
    return p


def sha(f):
    with open(f, "rb") as fh:
        return hashlib.sha256(fh.read()).hexdigest()


def refused(kind, src):
    d = path(f"{kind}-{os.path.basename(src)}")
    os.mkdir(d)
    f = os.path.join(d, "damaged.h5")
    shutil.copy(src, f)
    before, h = sorted(os.listdir(d)), sha(f)
    p = run(*command(kind, f, os.path.join(d, "out.h5")), check=False)
    lines = p.stderr.strip().splitlines()
    assert p.returncode == 1, (src, p.returncode, p.stderr)
    assert len(lines) == 1 and lines[0].startswith(f"ternion: error: {f}"), (src, p.stderr)
    assert sorted(os.listdir(d)) == before, (src, os.listdir(d))
    assert sha(f) == h, src
    return lines[0]


for kind in ("model", "input", "weights"):
    for src in sorted(glob.glob(os.path.join(FUZZ, "regressions", kind, "*"))):
        def case(kind=kind, src=src):
            refused(kind, src)
        case.__name__ = f"refused_{kind}_{os.path.basename(src)}"
        test(case)


@test
def compact_layout_checked_in_process_too():
    # A layout message whose version byte was changed reads as an empty compact layout; the
    # storage check refuses it before libhdf5 copies from the missing buffer, child or not.
    for src in sorted(glob.glob(os.path.join(FUZZ, "regressions", "weights", "layout-*"))):
        f = path("trusted-" + os.path.basename(src))
        shutil.copy(src, f)
        args = command("weights", f, path("never.h5"))
        p = subprocess.run([TERNION, *args], capture_output=True, text=True,
                           env={**os.environ, "TERNION_TRUST_HDF5": "1"})
        assert p.returncode == 1 and p.stderr.strip() == (
            f"ternion: error: {f}: /W_Q: compact storage holds 0 bytes, the dataset needs 256 "
            "(damaged file?)"), p.stderr
        assert not os.path.exists(path("never.h5"))


@test
def global_heap_damage_refused_before_libhdf5_reads_it():
    # Each of these collections' size field was enlarged: the walk of its objects meets a
    # zero-sized one where libhdf5 would loop forever. Refused in-process, naming the collection.
    for src in sorted(glob.glob(os.path.join(FUZZ, "regressions", "model", "*heap*"))):
        renamed = path("in-process-" + os.path.basename(src))
        shutil.copy(src, renamed)
        line = refused("model", renamed)
        assert "global heap at byte 2064: object at byte 6264 has size 0" in line, line


@test
def many_strings_in_several_heap_collections_still_load():
    # Thousands of variable-length strings (some longer than a collection's 4096 bytes) fill
    # several global heap collections of different sizes: every one must walk cleanly.
    import h5py
    import numpy as np
    f = path("many-strings.h5")
    shutil.copy(os.path.join(BUNDLED, "ssa_digits.h5"), f)
    with h5py.File(f, "a") as h:
        words = [("w%d-" % i) * (1 + i % 7) for i in range(6000)] + ["x" * 9000, "y" * 5000]
        h.create_dataset("notes", data=np.array(words, dtype=object),
                         dtype=h5py.string_dtype())
    with open(f, "rb") as fh:
        assert fh.read().count(b"GCOL") >= 3
    assert run("info", f).stdout == run("info", os.path.join(BUNDLED, "ssa_digits.h5")).stdout \
        .replace(os.path.join(BUNDLED, "ssa_digits.h5"), f)


@test
def a_short_chunk_among_thousands_is_refused():
    # 1500 chunks of 256 bytes; one size field in the chunk index (a v1 B-tree key: size,
    # filter mask, the chunk's offsets) lowered to 128. Beyond 1024 chunks the check is the
    # index's total against 1500 whole chunks.
    import struct
    import h5py
    import numpy as np
    x = (np.random.default_rng(0).random((1500, 4, 1, 8, 8)) < 0.2).astype(np.int8)
    good, bad = path("chunks-good.h5"), path("chunks-bad.h5")
    with h5py.File(good, "w") as f:
        f.create_dataset("spikes", data=x, chunks=(1, 4, 1, 8, 8))
    b = bytearray(open(good, "rb").read())
    key = struct.pack("<II6Q", 256, 0, 1300, 0, 0, 0, 0, 0)
    at = b.find(key)
    assert at > 0 and b.find(key, at + 1) < 0
    b[at:at + 4] = struct.pack("<I", 128)
    open(bad, "wb").write(bytes(b))
    model = os.path.join(BUNDLED, "ssa_digits.h5")
    assert run("run", model, "--input", good, "--samples", 2, "--no-progress").returncode == 0
    line = refused("input", bad)
    assert line.endswith("/spikes: 1500 chunks store 383872 bytes, 1500 unfiltered chunks have "
                         "384000 (damaged file?)"), line


@test
def data_beyond_the_end_of_the_file_is_refused_before_any_buffer():
    # A 3 KB file whose dataspace (dims and max dims) and contiguous layout size were raised so
    # that /W_K declares 1 GiB at its real offset: refused from the file's size, in-process too,
    # without a buffer sized from the header.
    import resource
    import struct
    import h5py
    import numpy as np
    good, bad = path("beyond-good.h5"), path("beyond-bad.h5")
    with h5py.File(good, "w") as f:
        for name, rows in (("W_Q", 8), ("W_K", 13), ("W_V", 8)):
            f.create_dataset(name, data=np.ones((rows, 8), np.float32))
        at = f["W_K"].id.get_offset()
    b = open(good, "rb").read()
    rows = 33554440  # x 8 float32 = 1073742080 bytes
    assert b.count(struct.pack("<QQ", 13, 8)) == 2 and b.count(struct.pack("<QQ", at, 416)) == 1
    b = b.replace(struct.pack("<QQ", 13, 8), struct.pack("<QQ", rows, 8))
    b = b.replace(struct.pack("<QQ", at, 416), struct.pack("<QQ", at, rows * 32))
    open(bad, "wb").write(b)
    want = (f"/W_K: stored data (1073742080 bytes at offset {at}) ends beyond the file's "
            f"{len(b)} bytes (damaged or truncated file?)")
    line = refused("weights", bad)
    assert line.endswith(want), line
    args = command("weights", bad, path("never.h5"))
    p = subprocess.run([TERNION, *args], capture_output=True, text=True,
                       env={**os.environ, "TERNION_TRUST_HDF5": "1"})
    assert p.returncode == 1 and p.stderr.strip() == f"ternion: error: {bad}: {want}", p.stderr
    peak_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    assert peak_mb < 600, f"ternion grew to {peak_mb:.0f} MB on a 3 KB file"


@test
def seed_models_still_load():
    for f in sorted(glob.glob(os.path.join(FUZZ, "corpus", "model", "*.h5"))):
        assert "parameters:" in run("info", f).stdout, f


@test
def trusted_env_skips_the_child_but_reads_the_same():
    f = os.path.join(BUNDLED, "ssa_digits.h5")
    assert run("info", f).stdout == \
        run_env({"TERNION_TRUST_HDF5": "1"}, "info", f).stdout


assert TMP
finish()
