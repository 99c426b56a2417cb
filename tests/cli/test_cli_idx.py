"""IDX inputs (MNIST family) through the CLI, with small files built here.

  * gzip and raw IDX images run exactly like the same pixels / 255 in an HDF5 /data file (same
    predictions, spikes and operation counts), with labels from the sibling labels file or from
    --labels; `ternion encode` reads IDX too and copies the labels;
  * hostile files (wrong magic, other types, truncated header or values, zero or overflowing
    dimensions, trailing bytes, a damaged gzip stream, labels of another length) are refused with
    exactly one error line that names the file and the field, exit code 1; a header declaring
    more values than the file holds is refused without sizing memory from it.

  /usr/bin/python3 tests/cli/test_cli_idx.py build/ternion
"""
import gzip
import os
import resource
import stat
import struct
import subprocess
import threading

import h5py
import numpy as np

from harness import TERNION, expect_error, finish, path, peak_rss_mb, run, run_json, test

HERE = os.path.dirname(os.path.abspath(__file__))
MODEL = os.path.join(HERE, "..", "..", "models", "bundled", "bsa_digits.h5")  # input [1, 8, 8]
RNG = np.random.default_rng(7)
PIXELS = RNG.integers(0, 256, size=(12, 8, 8), dtype=np.uint8)
PIXELS[:, :2, :] = 0  # some zero pixels: skipped as events
LABELS = RNG.integers(0, 10, size=12, dtype=np.uint8)


def idx_bytes(a, type_code=0x08):
    a = np.asarray(a)
    head = bytes([0, 0, type_code, a.ndim]) + b"".join(struct.pack(">I", d) for d in a.shape)
    return head + a.astype(np.uint8).tobytes()


def write(name, data, gz=False):
    p = path(name)
    with open(p, "wb") as f:
        f.write(gzip.compress(data) if gz else data)
    return p


def reference_h5():
    p = path("ref.h5")
    with h5py.File(p, "w") as f:
        f["data"] = (PIXELS.astype(np.float32) / np.float32(255)).reshape(12, 1, 8, 8)
        f["labels"] = LABELS.astype(np.int64)
    return p


def same_run(a, b):
    assert a["predictions"] == b["predictions"], (a["predictions"], b["predictions"])
    assert a["accuracy"] == b["accuracy"], (a["accuracy"], b["accuracy"])
    for la, lb in zip(a["layers"], b["layers"]):
        assert la["name"] == lb["name"] and la["spikes"] == lb["spikes"], (la, lb)
        assert la["ops"] == lb["ops"], la["name"]
    assert a["per_inference"]["energy_pj"] == b["per_inference"]["energy_pj"]


@test
def gzip_and_raw_idx_equal_hdf5_data():
    ref = run_json("run", MODEL, "--input", reference_h5(), "--timesteps", 4)
    assert ref["accuracy"] is not None
    for gz in (True, False):
        ext = ".gz" if gz else ""
        imgs = write(f"set{int(gz)}-images-idx3-ubyte{ext}", idx_bytes(PIXELS), gz)
        write(f"set{int(gz)}-labels-idx1-ubyte{ext}", idx_bytes(LABELS), gz)
        got = run_json("run", MODEL, "--input", imgs, "--timesteps", 4)
        assert got["samples"] == 12
        same_run(got, ref)


@test
def explicit_labels_and_no_labels():
    imgs = write("plain.idx3", idx_bytes(PIXELS))  # no "images" in the name: no sibling
    got = run_json("run", MODEL, "--input", imgs, "--timesteps", 4)
    assert got["accuracy"] is None
    lab = write("my-labels.gz", idx_bytes(LABELS), gz=True)
    got = run_json("run", MODEL, "--input", imgs, "--labels", lab, "--timesteps", 4)
    ref = run_json("run", MODEL, "--input", reference_h5(), "--timesteps", 4)
    same_run(got, ref)
    # an HDF5 input carries /labels: --labels is refused, naming the option
    p = run("run", MODEL, "--input", reference_h5(), "--labels", lab, "--timesteps", 4,
            "--no-progress", check=False)
    assert p.returncode == 1 and "--labels" in p.stderr, p.stderr


@test
def encode_reads_idx():
    imgs = write("enc-images-idx3-ubyte.gz", idx_bytes(PIXELS), gz=True)
    write("enc-labels-idx1-ubyte.gz", idx_bytes(LABELS), gz=True)
    out = path("enc_spikes.h5")
    run("encode", "--input", imgs, "--output", out, "--encoding", "poisson", "--timesteps", 5,
        "--seed", 3)
    ref_out = path("enc_ref_spikes.h5")
    run("encode", "--input", reference_h5(), "--output", ref_out, "--encoding", "poisson",
        "--timesteps", 5, "--seed", 3)
    with h5py.File(out) as a, h5py.File(ref_out) as b:
        assert a["spikes"].shape == (12, 5, 1, 8, 8)
        assert np.array_equal(a["spikes"][()], b["spikes"][()])
        assert a["labels"][()].tolist() == LABELS.tolist()
    # The sibling labels file is read too: encode may not write over it.
    lab = path("enc-labels-idx1-ubyte.gz")
    before = open(lab, "rb").read()
    p = run("encode", "--input", imgs, "--output", lab, "--encoding", "poisson", "--timesteps", 5,
            check=False)
    assert p.returncode == 1 and "--output" in p.stderr and "labels file" in p.stderr, p.stderr
    assert open(lab, "rb").read() == before


def refused(name, data, field, gz=False, labels=None, labels_field=None):
    p = write(name + "-images-idx3-ubyte" + (".gz" if gz else ""), data, gz)
    args = ["run", MODEL, "--input", p, "--timesteps", 4, "--no-progress"]
    blamed = p
    if labels is not None:
        lp = write("x-" + name + "-labels", labels, gz)
        args += ["--labels", lp]
        blamed = lp
    r = run(*args, check=False)
    lines = [l for l in r.stderr.splitlines() if l.strip()]
    what = f"{name}: exit {r.returncode}, stderr {r.stderr!r}"
    assert r.returncode == 1, what
    assert len(lines) == 1 and lines[0].startswith("ternion: error: "), what
    assert f"{blamed}: {labels_field or field}:" in lines[0], what


@test
def hostile_idx_files():
    good = idx_bytes(PIXELS)
    for gz in (False, True):
        s = "z" if gz else "r"
        refused(f"magic{s}", b"\x00\x01\x08\x03" + good[4:], "magic", gz)
        refused(f"rank{s}", b"\x00\x00\x08\x07" + good[4:], "magic", gz)
        refused(f"float{s}", b"\x00\x00\x0d\x03" + good[4:], "magic", gz)
        refused(f"header{s}", good[:9], "dims", gz)
        refused(f"short{s}", good[:-1], "data", gz)
        refused(f"trailing{s}", good + b"\x00", "data", gz)
        refused(f"zero{s}", good[:4] + struct.pack(">III", 12, 0, 8) + good[16:], "dims", gz)
        refused(f"huge{s}", good[:4] + struct.pack(">III", 0xFFFFFFFF, 0xFFFFFFFF, 8) + good[16:],
                "dims", gz)
        refused(f"labels{s}", good, None, gz, labels=idx_bytes(LABELS[:11]), labels_field="dims")
        refused(f"labelmagic{s}", good, None, gz, labels=idx_bytes(PIXELS), labels_field="magic")
    # a 13-byte file whose header declares 2050 images of 2 x 98305 pixels (1.6 GB as floats)
    declared = b"\x00\x00\x08\x03" + struct.pack(">III", 2050, 2, 98305)
    refused("declared", declared, "data")
    for gz in (False, True):
        p = write("declared-images-idx3-ubyte" + (".gz" if gz else ""), declared, gz)
        err = expect_error(["run", MODEL, "--input", p, "--no-progress"], f"{p}: data: truncated")
        if not gz:  # sized from the file before anything is allocated
            assert "declares 403050500 values, the file holds 0" in err, err
    # the peak resident size of every ternion run so far, this one included
    peak_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    assert peak_mb < 600, f"a refused 13-byte IDX file made ternion grow to {peak_mb:.0f} MB"
    # a damaged gzip stream: the deflate data and the CRC
    z = bytearray(gzip.compress(good))
    z[20] ^= 0xFF
    refused("deflate", bytes(z), "gzip")
    z = bytearray(gzip.compress(good))
    z[-6] ^= 0xFF  # CRC-32
    refused("crc", bytes(z), "gzip")
    refused("cut", gzip.compress(good)[:-12], "gzip")


@test
def label_out_of_range_names_the_labels_file():
    # A label >= the model's classes is the labels file's fault: its name and field ("data",
    # as for its other errors), not the images' (they were blamed).
    bad = LABELS.copy()
    bad[3] = 11  # bsa_digits has 10 classes
    for gz in (False, True):
        ext = ".gz" if gz else ""
        imgs = write(f"oor{int(gz)}-images-idx3-ubyte{ext}", idx_bytes(PIXELS), gz)
        sib = write(f"oor{int(gz)}-labels-idx1-ubyte{ext}", idx_bytes(bad), gz)
        expect_error(["run", MODEL, "--input", imgs, "--timesteps", 4, "--no-progress"],
                     f"ternion: error: {sib}: data: label 11 at index 3 is outside [0, 10)")
        lab = write(f"oor-explicit{int(gz)}{ext}", idx_bytes(bad), gz)
        expect_error(["run", MODEL, "--input", path("plain.idx3"), "--labels", lab, "--timesteps", 4,
                      "--no-progress"], f"ternion: error: {lab}: data: label 11 at index 3")
    # HDF5 labels stay blamed on the input's /labels
    h5 = reference_h5()
    import h5py as _h5
    with _h5.File(h5, "r+") as f:
        f["labels"][3] = 11
    expect_error(["run", MODEL, "--input", h5, "--timesteps", 4, "--no-progress"],
                 f"{h5}: /labels: label 11 at index 3")


def feed_fifo(fifo, data):
    """A writer that blocks until a reader opens `fifo`, then writes `data` (a daemon thread: a
    reader that never comes does not hold the test up)."""
    def feed():
        try:
            with open(fifo, "wb") as f:
                f.write(data)
        except OSError:
            pass
    threading.Thread(target=feed, daemon=True).start()


def release_fifo(fifo):
    """Opens and closes `fifo` for reading without blocking, so a writer still waiting returns."""
    try:
        os.close(os.open(fifo, os.O_RDONLY | os.O_NONBLOCK))
    except OSError:
        pass


@test
def an_input_through_a_fifo_is_refused_naming_it():
    # The input's format is sniffed (its first bytes read) before its reader opens it again: a
    # FIFO's bytes go to the first open only, and the reader then waited for ever (or read
    # nothing). Refused before it is opened, naming the file; a labels file, opened once, may
    # be a FIFO.
    for name, data in (("in-images-idx3-ubyte", idx_bytes(PIXELS)),
                       ("in.idx", gzip.compress(idx_bytes(PIXELS))), ("in.npy", b"\x93NUMPY")):
        fifo = path("fifo-" + name)
        os.mkfifo(fifo)
        feed_fifo(fifo, data)
        try:
            p = subprocess.run([TERNION, "run", MODEL, "--input", fifo, "--timesteps", "4",
                                "--no-progress"], capture_output=True, text=True, timeout=30)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"ternion run --input {name} (a FIFO) did not finish in 30 s")
        finally:
            release_fifo(fifo)
        err = p.stderr.strip().splitlines()
        assert p.returncode == 1 and len(err) == 1, (p.returncode, p.stderr)
        assert err[0].startswith(f"ternion: error: {fifo}: is a FIFO (pipe), not a regular file"), err
        assert stat.S_ISFIFO(os.stat(fifo).st_mode)
    expect_error(["encode", "--input", fifo, "--output", path("fifo-enc.h5"), "--encoding",
                  "poisson", "--timesteps", 4], f"{fifo}: is a FIFO")
    assert not os.path.exists(path("fifo-enc.h5"))
    # labels through a FIFO: read once, as a file
    lab = path("labels.fifo")
    os.mkfifo(lab)
    feed_fifo(lab, idx_bytes(LABELS))
    try:
        p = subprocess.run([TERNION, "run", MODEL, "--input", path("plain.idx3"), "--labels", lab,
                            "--timesteps", "4", "--no-progress", "--json"], capture_output=True,
                           text=True, timeout=30)
    finally:
        release_fifo(lab)
    assert p.returncode == 0, p.stderr
    ref = run_json("run", MODEL, "--input", reference_h5(), "--timesteps", 4)
    import json
    same_run(json.loads(p.stdout), ref)


@test
def compressed_idx_is_bounded_before_it_is_inflated():
    # A 261 KB gzip stream of 2^28 zero pixels: refused by --max-memory before it is inflated
    # (it reached 1 GB first); a 40-byte stream declaring one 46340 x 46340 image is found
    # truncated before a 2 GiB row buffer is allocated (it was). Peaks are compared with the
    # same binary loading the model (`info`), so a sanitizer's overhead cancels out.
    _, _, base = peak_rss_mb(["info", MODEL])
    bomb = write("bomb-images-idx3-ubyte.gz", idx_bytes(np.zeros((4096, 256, 256), np.uint8)),
                 gz=True)
    rc, err, mb = peak_rss_mb(["run", MODEL, "--input", bomb, "--max-memory", "512M"])
    assert rc == 1 and "--max-memory" in err and "reading " + bomb in err, err
    assert mb < base + 150, (mb, base)
    head = bytes([0, 0, 8, 3]) + struct.pack(">III", 1, 46340, 46340)
    trunc = write("trunc-images-idx3-ubyte.gz", head + bytes(10), gz=True)
    rc, err, mb = peak_rss_mb(["run", MODEL, "--input", trunc])
    assert rc == 1 and "data: truncated" in err, err
    assert mb < base + 150, (mb, base)


finish()
