#!/usr/bin/env python3
"""Memory bounded before it is spent: a compressed HDF5 /data is refused by --max-memory before
it is inflated, a compressed /spikes of many events while it is streamed (the peak stays near
the limit), and `ternion encode` checks its inputs and the spikes it builds against its own
--max-memory. Peaks are measured in a fresh process (harness.peak_rss_mb) and compared with the
same binary loading the model, so a sanitizer's overhead cancels out."""
import os

import h5py
import numpy as np

from harness import finish, path, peak_rss_mb, test
from nirfile import Nir

# Under AddressSanitizer freed memory stays in its quarantine and the shadow memory counts too:
# peaks say nothing there, so only the refusals are checked (the normal build checks the peaks).
SANITIZED = bool(os.environ.get("ASAN_OPTIONS"))

N = 20000


def model():
    (Nir().node("input", "Input", shape=np.array([N]))
     .node("fc", "Linear", weight=np.ones((2, N), np.float32) * 1e-3)
     .node("lif", "ternion.SJLIF", tau=np.float32(2.0)).node("output", "Output")
     .edge("input", "fc").edge("fc", "lif").edge("lif", "output").write(path("m.h5")))
    return path("m.h5")


@test
def compressed_data_is_refused_before_it_is_inflated():
    m = model()
    _, _, base = peak_rss_mb(["info", m])
    with h5py.File(path("data.h5"), "w") as f:  # 2500 x 20000 floats: 200 MB, a few KB stored
        f.create_dataset("data", data=np.zeros((2500, N), np.float32), chunks=(100, N),
                         compression="gzip", compression_opts=9)
    rc, err, mb = peak_rss_mb(["run", m, "--input", path("data.h5"), "--timesteps", 2,
                               "--max-memory", "100M"])
    assert rc == 1 and "--max-memory" in err and "/data" in err, err
    assert SANITIZED or mb < base + 60, (mb, base)


@test
def compressed_spikes_are_bounded_while_streamed():
    m = model()
    _, _, base = peak_rss_mb(["info", m])
    with h5py.File(path("spikes.h5"), "w") as f:  # 16 M ones: 16 M events, about 200 MB held
        f.create_dataset("spikes", data=np.ones((40, 20, N), np.int8), chunks=(1, 20, N),
                         compression="gzip", compression_opts=9)
    limit = base + 120
    rc, err, mb = peak_rss_mb(["run", m, "--input", path("spikes.h5"), "--max-memory",
                               f"{int(limit)}M"])
    assert rc == 1 and "--max-memory" in err and "/spikes" in err, err
    assert SANITIZED or mb < limit + 60, (mb, limit)


@test
def encode_has_its_own_limit():
    with h5py.File(path("small.h5"), "w") as f:
        f["data"] = np.full((500, N), 0.5, np.float32)  # 40 MB in, 500 MB of spikes at T = 50
    out = path("never.h5")
    rc, err, _ = peak_rss_mb(["encode", "--input", path("small.h5"), "--output", out,
                              "--timesteps", 50, "--max-memory", "300M"])
    assert rc == 1 and "option --max-memory: encoding" in err and not os.path.exists(out), err
    rc, err, _ = peak_rss_mb(["encode", "--input", path("small.h5"), "--output", out,
                              "--timesteps", 2, "--max-memory", "1G"])
    assert rc == 0 and os.path.exists(out), err


@test
def node_major_outputs_are_in_the_run_estimate():
    # 4 samples on 1 thread run node by node: each of 3 x 3000 values is held for all 5000
    # steps (about 360 MB), which the estimate counts before the run starts.
    (Nir().node("input", "Input", shape=np.array([3000]))
     .node("lif", "ternion.SJLIF", tau=np.float32(2.0)).node("output", "Output")
     .edge("input", "lif").edge("lif", "output").write(path("wide.h5")))
    with h5py.File(path("wide_in.h5"), "w") as f:
        f["data"] = np.full((4, 3000), 0.3, np.float32)
    _, _, base = peak_rss_mb(["info", path("wide.h5")])
    rc, err, mb = peak_rss_mb(["run", path("wide.h5"), "--input", path("wide_in.h5"),
                               "--timesteps", 5000, "--threads", 1, "--max-memory", "200M"])
    assert rc == 1 and "option --max-memory: the run needs" in err, err
    assert SANITIZED or mb < base + 60, (mb, base)
    rc, err, _ = peak_rss_mb(["run", path("wide.h5"), "--input", path("wide_in.h5"),
                              "--timesteps", 50, "--threads", 1, "--max-memory", "200M"])
    assert rc == 0, err


finish()
