#!/usr/bin/env python3
"""Strict model files and one uint8 rule: a misspelt parameter is an error naming
nodes/<node>/<param> with the nearest known name, extra fields pass only with
--ignore-unknown-params (and are listed in the notes), and uint8 /data is read as value / 255
exactly as the same values given as float32 / 255."""
import h5py
import numpy as np

from harness import expect_error, finish, path, run_json, test
from nirfile import Nir

rng = np.random.default_rng(5)
W = (rng.integers(-4, 5, (3, 10)) / 4).astype(np.float32)


def model(fname, **lif):
    params = dict(tau=np.float32(2.0), v_threshold=np.float32(0.5))
    params.update(lif)
    (Nir().node("input", "Input", shape=np.array([10])).node("fc", "Linear", weight=W)
     .node("lif", "ternion.SJLIF", **{k: v for k, v in params.items() if v is not None})
     .node("output", "Output", shape=np.array([3]))
     .edge("input", "fc").edge("fc", "lif").edge("lif", "output").write(path(fname)))


def data_file(fname, x):
    with h5py.File(path(fname), "w") as f:
        f["data"] = x


@test
def a_misspelt_optional_parameter_names_the_nearest_one():
    model("tua.h5", tau=None, tua=np.float32(2.0))
    data_file("x.h5", rng.random((2, 10)).astype(np.float32))
    expect_error(["run", path("tua.h5"), "--input", path("x.h5")], "tua.h5: nodes/lif/tua: is not "
                 "a parameter of ternion.SJLIF: did you mean 'tau'?", "--ignore-unknown-params")


@test
def a_misspelt_parameter_names_the_typo():
    model("thr.h5", v_threshold=None, v_treshold=np.float32(0.5))
    expect_error(["run", path("thr.h5"), "--input", path("x.h5")],
                 "thr.h5: nodes/lif/v_treshold: is not a parameter of ternion.SJLIF: did you "
                 "mean 'v_threshold'?")
    # A required one: the missing name, and the typo the node holds instead.
    (Nir().node("input", "Input", shape=np.array([10])).node("fc", "Linear", wieght=W)
     .node("output", "Output", shape=np.array([3]))
     .edge("input", "fc").edge("fc", "output").write(path("w.h5")))
    expect_error(["run", path("w.h5"), "--input", path("x.h5")],
                 "w.h5: nodes/fc/weight: missing parameter (the node has 'wieght': misspelt?)")


@test
def extra_fields_pass_only_when_asked_and_are_noted():
    model("extra.h5", nir_field=np.float32(3.0))
    model("plain.h5")
    expect_error(["run", path("extra.h5"), "--input", path("x.h5")],
                 "nodes/lif/nir_field: is not a parameter of ternion.SJLIF, misspelt?")
    j = run_json("run", path("extra.h5"), "--input", path("x.h5"), "--ignore-unknown-params",
                 "--timesteps", 3)
    assert any("nodes/lif/nir_field" in n for n in j["notes"]), j["notes"]
    ref = run_json("run", path("plain.h5"), "--input", path("x.h5"), "--timesteps", 3)
    assert j["predictions"] == ref["predictions"] and j["totals"] == ref["totals"]


@test
def uint8_data_is_read_as_value_over_255():
    model("plain.h5")
    img = rng.integers(0, 256, (5, 10)).astype(np.uint8)
    data_file("u8.h5", img)
    data_file("f32.h5", img.astype(np.float32) / np.float32(255))
    data_file("raw.h5", img.astype(np.float32))
    a = run_json("run", path("plain.h5"), "--input", path("u8.h5"), "--timesteps", 4)
    b = run_json("run", path("plain.h5"), "--input", path("f32.h5"), "--timesteps", 4)
    c = run_json("run", path("plain.h5"), "--input", path("raw.h5"), "--timesteps", 4)
    assert a["totals"] == b["totals"] and a["predictions"] == b["predictions"]
    assert a["totals"] != c["totals"]  # int16 or float data are read as stored


finish()
