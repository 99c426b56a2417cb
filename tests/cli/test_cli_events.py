#!/usr/bin/env python3
"""Event-camera inputs (docs/inputs.md, "Event cameras"): `ternion frames` against the framing
rules written out below in numpy, on synthetic streams the test builds; a convolutional model
run on the frames against a numpy reference of it, with its first layer's ACs and MACs; errors.

The rules (SpikingJelly's integrate_events_by_fixed_frames_number and _by_fixed_duration):
a frame of events [j_l, j_r) is F[c, y, x] = #{k in [j_l, j_r): (p_k != 0) = c, y_k = y, x_k = x},
counts in float32, channel 0 for polarity 0 and channel 1 for any other.
  number split, M frames:  d = N // M;  j_l = i d, j_r = j_l + d, the last frame's j_r = N.
  time split, M frames:    dt = (t_{N-1} - t_0) // M; frame i takes the first and the last event
                           with t_0 + i dt <= t < t_0 + (i + 1) dt; the last frame's j_r = N.
  duration D:              T = ceil((t_{N-1} - t_0) / D) frames; frame i < T - 1 holds the
                           events with (t - t_0) // D = i, the last one every event from there on.
"""
import math

import h5py
import numpy as np

from harness import expect_error, finish, path, run, run_json, test
from nirfile import Nir, trace_spikes

rng = np.random.default_rng(40)
DT = 1e-4


def windows(t, M=None, split_by="number", duration=None):
    """(j_l, j_r) per frame by the rules of the module docstring."""
    N = len(t)
    if duration is not None:
        u = t - t[0]
        T = math.ceil(int(u[-1]) / duration)
        k = u // duration  # the frame index of each event
        bounds = [0] + [int(np.nonzero(k >= i + 1)[0][0]) for i in range(T - 1)] + [N]
        return bounds[:-1], bounds[1:]
    if split_by == "number":
        d = N // M
        jl = [i * d for i in range(M)]
        jr = [i * d + d for i in range(M)]
    else:
        dt = (t[-1] - t[0]) // M
        jl, jr = [], []
        for i in range(M):
            lo = t[0] + dt * i
            inside = np.nonzero((t >= lo) & (t < lo + dt))[0]
            jl.append(int(inside[0]))  # an empty window fails here, as in SpikingJelly
            jr.append(int(inside[-1]) + 1)
    jr[-1] = N
    return jl, jr


def frames_ref(ev, H, W, **rule):
    jl, jr = windows(ev["t"], **rule)
    F = np.zeros((len(jl), 2, H, W), np.float64)
    for i, (a, b) in enumerate(zip(jl, jr)):
        c = (ev["p"][a:b] != 0).astype(np.int64)
        np.add.at(F[i], (c, ev["y"][a:b].astype(np.int64), ev["x"][a:b].astype(np.int64)), 1)
    return F.astype(np.float32)


def stream(N, H, W, span, polarity="01", t_dtype=np.int64):
    """N events sorted by t in [0, span): a small span puts many on the windows' borders."""
    t = np.sort(rng.integers(1000, 1000 + span, N)).astype(t_dtype)
    p = rng.integers(0, 2, N)
    if polarity == "-11":
        p = 2 * p - 1
    elif polarity == "bool":
        p = p.astype(bool)
    return dict(t=t, x=rng.integers(0, W, N).astype(np.int16), y=rng.integers(0, H, N).astype(np.int16), p=p)


def sj_defined(ev, **rule):
    """Whether SpikingJelly's time split finds an event in every window."""
    try:
        windows(ev["t"], **rule)
        return True
    except IndexError:
        return False


def frames_of(src, out, *opts):
    run("frames", src, "-o", out, *opts)
    with h5py.File(out, "r") as f:
        return {k: f[k][()] for k in f}


def save_npz(fname, ev, compressed):
    (np.savez_compressed if compressed else np.savez)(fname, **ev)


def save_tonic(fname, ev):
    a = np.zeros(len(ev["t"]), dtype=[("x", np.int16), ("y", np.int16), ("t", np.int64), ("p", np.int8)])
    for k in "xytp":
        a[k] = ev[k]
    np.save(fname, a)


def save_h5(fname, evs, labels=None):
    with h5py.File(fname, "w") as f:
        for k in "txyp":
            f[f"events/{k}"] = np.concatenate([e[k] for e in evs])
        f["events/offsets"] = np.cumsum([0] + [len(e["t"]) for e in evs]).astype(np.int64)
        if labels is not None:
            f["labels"] = np.asarray(labels, np.int64)


def rule_opts(rule):
    if "duration" in rule:
        return ["--duration", rule["duration"]]
    return ["--frames", rule["M"], "--split-by", rule["split_by"]]


@test
def single_streams_equal_the_rules_in_every_format():
    cases = 0
    for n in range(60):
        H, W = int(rng.integers(1, 9)), int(rng.integers(1, 11))
        N = int(rng.choice([1, 2, 5, 17, 64, 301]))
        ev = stream(N, H, W, int(rng.choice([8, 40, 1000])), ["01", "-11", "bool"][n % 3])
        rules = [dict(M=int(M), split_by="number") for M in (1, 3, 7, N + 2)]
        rules += [dict(M=int(M), split_by="time") for M in (1, 2, 4, 9)]
        rules += [dict(duration=int(D)) for D in (1, 3, 7, 50)]
        for r in rules:
            if "duration" in r and ev["t"][-1] == ev["t"][0]:
                continue  # no frame: refused (errors test)
            if r.get("split_by") == "time" and not sj_defined(ev, **r):
                continue  # an empty window: its own test
            want = frames_ref(ev, H, W, **r)
            kind = n % 4
            src = path(f"s{n}" + [".npz", ".npz", ".npy", ".h5"][kind])
            if kind < 2:
                save_npz(src, ev, kind == 1)
            elif kind == 2:
                save_tonic(src, ev)
            else:
                save_h5(src, [ev])
            size = ["--size", f"{H},{W}"] if n % 2 else ["--sensor", f"{W},{H},2"]
            got = frames_of(src, path("s.h5"), *rule_opts(r), *size)["frames"]
            assert got.dtype == np.float32 and got.shape == (1, *want.shape), (got.shape, want.shape, r)
            assert np.array_equal(got[0], want), (n, r, N)
            cases += 1
    assert cases > 400, cases


@test
def many_samples_in_one_hdf5_file_with_labels():
    H, W = 6, 7
    evs = [stream(int(rng.integers(20, 200)), H, W, 500, "-11") for _ in range(25)]
    labels = rng.integers(0, 4, len(evs))
    save_h5(path("many.h5"), evs, labels)
    for r in (dict(M=5, split_by="number"), dict(M=6, split_by="time")):
        if r["split_by"] == "time":
            assert all(sj_defined(e, **r) for e in evs)
        got = frames_of(path("many.h5"), path("many_f.h5"), *rule_opts(r), "--size", f"{H},{W}")
        assert np.array_equal(got["frames"], np.stack([frames_ref(e, H, W, **r) for e in evs]))
        assert got["labels"].tolist() == labels.tolist()
    # By duration the streams give different counts: padded with empty frames, counts kept.
    got = frames_of(path("many.h5"), path("many_d.h5"), "--duration", 37, "--size", f"{H},{W}")
    refs = [frames_ref(e, H, W, duration=37) for e in evs]
    T = max(len(f) for f in refs)
    assert got["frames"].shape == (len(evs), T, 2, H, W)
    assert got["frame_counts"].tolist() == [len(f) for f in refs]
    for s, f in enumerate(refs):
        assert np.array_equal(got["frames"][s, :len(f)], f)
        assert not got["frames"][s, len(f):].any()


@test
def spikingjelly_folder_takes_classes_in_sorted_order():
    import os
    H, W = 4, 5
    root = path("sjfolder")
    evs, labels = [], []
    for c, cls in enumerate(["a_cls", "b_cls", "c_cls"]):
        os.makedirs(os.path.join(root, cls))
        for k in range(3):
            ev = stream(40, H, W, 300)
            save_npz(os.path.join(root, cls, f"{k:03d}.npz"), ev, k % 2 == 1)
            evs.append(ev)
            labels.append(c)
    got = frames_of(root, path("folder_f.h5"), "--frames", 4, "--size", f"{H},{W}")
    assert np.array_equal(got["frames"], np.stack([frames_ref(e, H, W, M=4, split_by="number") for e in evs]))
    assert got["labels"].tolist() == labels
    assert [c.decode() if isinstance(c, bytes) else c for c in got["classes"]] == ["a_cls", "b_cls", "c_cls"]


@test
def empty_time_windows_are_empty_frames():
    # Windows of dt = (109 - 100) // 3 = 3: [100, 103) holds events, [103, 106) none (SpikingJelly
    # raises IndexError there), [106, ...) runs to the end.
    ev = dict(t=np.array([100, 101, 102, 106, 108, 109]), x=np.array([0, 1, 2, 0, 1, 2]),
              y=np.zeros(6, np.int64), p=np.array([0, 1, 1, 0, 0, 1]))
    save_npz(path("gap.npz"), ev, False)
    got = frames_of(path("gap.npz"), path("gap_f.h5"), "--frames", 3, "--split-by", "time", "--size", "1,3")
    f = got["frames"][0]
    assert f[0].sum() == 3 and f[1].sum() == 0 and f[2].sum() == 3
    assert f[2, 0, 0].tolist() == [1, 1, 0] and f[2, 1, 0].tolist() == [0, 0, 1]


@test
def unsorted_time_is_fine_when_splitting_by_number():
    ev = stream(50, 3, 3, 100)
    ev["t"] = ev["t"][::-1].copy()
    save_npz(path("rev.npz"), ev, False)
    got = frames_of(path("rev.npz"), path("rev_f.h5"), "--frames", 4, "--size", "3,3")
    assert np.array_equal(got["frames"][0], frames_ref(ev, 3, 3, M=4, split_by="number"))


# ---- a model on the frames -------------------------------------------------------------------
C, H, W, CO = 2, 6, 6, 3


def dyadic(shape, scale=1.0):
    return (np.round(rng.uniform(-scale, scale, shape) * 16) / 16).astype(np.float32)


def conv_model(fname, wc, bc):
    beta = np.full((CO, H, W), 0.75, np.float32)
    tau = (DT / (1 - beta.astype(np.float64))).astype(np.float32)
    (Nir().node("input", "Input", shape=np.array([C, H, W]))
     .node("conv", "Conv2d", weight=wc, bias=bc, stride=np.array([1, 1]), padding=np.array([1, 1]),
           dilation=np.array([1, 1]), groups=1, input_shape=np.array([H, W]))
     .node("lif", "LIF", tau=tau, r=(tau / DT).astype(np.float32), v_leak=np.zeros_like(beta),
           v_threshold=np.full(beta.shape, 1.0, np.float32), v_reset=np.zeros_like(beta))
     .node("flat", "Flatten", start_dim=0, end_dim=-1, input_type=np.array([CO, H, W]))
     .node("output", "Output", shape=np.array([CO * H * W]))
     .edge("input", "conv").edge("conv", "lif").edge("lif", "flat").edge("flat", "output")
     .write(fname))


def conv_ref(x, wc, bc):
    """LIF spikes [S, T, CO, H, W] of conv(x) + b: v <- 0.75 v + I, spike where v > 1, reset 0."""
    S, T = x.shape[:2]
    xp = np.pad(x, ((0, 0), (0, 0), (0, 0), (1, 1), (1, 1)))
    out = np.zeros((S, T, CO, H, W), np.float32)
    for s in range(S):
        v = np.zeros((CO, H, W), np.float32)
        for t in range(T):
            cur = np.zeros((CO, H, W), np.float32)
            for ky in range(3):
                for kx in range(3):
                    cur += np.einsum("chw,oc->ohw", xp[s, t, :, ky:ky + H, kx:kx + W], wc[:, :, ky, kx])
            v = (np.float32(0.75) * v + (cur + bc[:, None, None])).astype(np.float32)
            out[s, t] = v > 1
            v[out[s, t] > 0] = 0
    return out


def synapses(x, wc):
    """Per (sample, step): the conv's synaptic events, each non-zero input element reaching the
    non-zero weights whose output position lies inside the frame, once (pairs) and weighted by
    the element's value (a count of k is k coincident spikes)."""
    S, T = x.shape[:2]
    n = np.zeros((S, T), np.int64)
    k = np.zeros((S, T), np.int64)
    for co in range(CO):
        for c in range(C):
            for ky in range(3):
                for kx in range(3):
                    if wc[co, c, ky, kx] == 0:
                        continue
                    # input (y, x) feeds output (y - ky + 1, x - kx + 1)
                    ys = slice(max(0, ky - 1), min(H, H + ky - 1))
                    xs = slice(max(0, kx - 1), min(W, W + kx - 1))
                    n += (x[:, :, c, ys, xs] != 0).sum((2, 3))
                    k += np.abs(x[:, :, c, ys, xs]).sum((2, 3)).astype(np.int64)
    return n, k


@test
def conv_model_on_frames_equals_numpy_with_acs_for_small_counts_and_macs_above():
    # The event-cost rule (sim/kernels/event_cost.hpp): a step whose values are all integers of
    # at most 16 costs |value| ACs per synaptic event (a count of k is k coincident spikes);
    # a step with any larger count costs one MAC per synaptic event.
    wc, bc = dyadic((CO, C, 3, 3)), dyadic(CO, 0.25)
    wc[0, 1, 1, 1] = 0
    conv_model(path("evconv.h5"), wc, bc)
    S, M = 4, 5
    evs = [stream(int(rng.integers(30, 120)), H, W, 400) for _ in range(S)]
    # Sample 0 sparse enough that some of its frames hold only 0/1 counts (ternary steps).
    evs[0] = stream(6, H, W, 400)
    # Sample 1 with a hot pixel: over 16 events in every frame, so each of its steps is MACs.
    hot = stream(250, H, W, 400)
    hot["x"][::2], hot["y"][::2], hot["p"][::2] = 2, 3, 1
    evs[1] = hot
    save_h5(path("evconv_ev.h5"), evs, np.arange(S) % CO)
    run("frames", path("evconv_ev.h5"), "-o", path("evconv_in.h5"), "--frames", M, "--size", f"{H},{W}")
    with h5py.File(path("evconv_in.h5"), "r") as f:
        x = f["frames"][()]
    ref = conv_ref(x, wc, bc)
    assert ref.sum() > 10
    ternary = np.all(np.isin(x, (0, 1)), axis=(2, 3, 4))
    small = np.all(x <= 16, axis=(2, 3, 4))
    assert ternary.any() and (small & ~ternary).any() and (~small).any(), (ternary, small)
    pairs, weighted = synapses(x, wc)
    seen = []
    for engine in ("event", "dense"):
        for threads in (1, 2):
            tr = path(f"evconv_{engine}{threads}.h5")
            j = run_json("run", path("evconv.h5"), "--input", path("evconv_in.h5"), "--dt", DT,
                         "--engine", engine, "--threads", threads, "--trace", tr)
            assert j["samples"] == S and j["timesteps"] == M
            assert j["input_encodings"] == {"input": "frames"}, j["input_encodings"]
            assert (trace_spikes(tr, "lif").reshape(ref.shape) == ref).all(), (engine, threads)
            ops = {l["name"]: l for l in j["layers"]}["conv"]["ops"]
            assert ops["ac"] == int(weighted[small].sum()), (ops, weighted, small)
            assert ops["mac"] == int(pairs[~small].sum()), (ops, pairs, small)
            j.pop("timing")
            seen.append([l for l in j["layers"]])
    assert all(s == seen[0] for s in seen)
    # A frame file whose values are all 0/1 runs exactly as the same tensor as /spikes.
    xb = (x > 0).astype(np.float32)
    with h5py.File(path("evconv_bin.h5"), "w") as f:
        f["frames"] = xb
    with h5py.File(path("evconv_sp.h5"), "w") as f:
        f["spikes"] = xb.astype(np.int8)
    a = run_json("run", path("evconv.h5"), "--input", path("evconv_bin.h5"), "--dt", DT)
    b = run_json("run", path("evconv.h5"), "--input", path("evconv_sp.h5"), "--dt", DT)
    assert a["layers"] == b["layers"] and a["per_inference"] == b["per_inference"]
    # The text report says what the input is.
    out = run("run", path("evconv.h5"), "--input", path("evconv_in.h5"), "--dt", DT, "--no-progress").stdout
    assert "replayed frames (samples-first)" in out, out


@test
def frames_subranges_time_first_and_input_groups_equal_the_whole():
    with h5py.File(path("evconv_in.h5"), "r") as f:
        x = f["frames"][()]
    whole = run_json("run", path("evconv.h5"), "--input", path("evconv_in.h5"), "--dt", DT,
                     "--trace", path("fw.h5"))
    part = run_json("run", path("evconv.h5"), "--input", path("evconv_in.h5"), "--dt", DT,
                    "--first", 1, "--samples", 2, "--trace", path("fp.h5"))
    assert part["predictions"] == whole["predictions"][1:3]
    assert (trace_spikes(path("fp.h5"), "lif") == trace_spikes(path("fw.h5"), "lif")[1:3]).all()
    with h5py.File(path("evconv_tf.h5"), "w") as f:
        f["frames"] = np.swapaxes(x, 0, 1).copy()
    tf = run_json("run", path("evconv.h5"), "--input", path("evconv_tf.h5"), "--dt", DT,
                  "--layout", "time-first")
    assert tf["layers"] == whole["layers"]
    with h5py.File(path("evconv_grp.h5"), "w") as f:
        f["inputs/input/frames"] = x
    g = run_json("run", path("evconv.h5"), "--input", path("evconv_grp.h5"), "--dt", DT)
    assert g["layers"] == whole["layers"]


# ---- errors ----------------------------------------------------------------------------------
def refused(src, opts, *parts, out="err_out.h5"):
    expect_error(["frames", src, "-o", path(out), *opts], *parts)
    import os
    assert not os.path.exists(path(out)), out


@test
def bad_events_are_one_error_naming_file_and_field():
    ok = stream(20, 4, 4, 100)
    save_npz(path("ok.npz"), ok, False)
    size = ["--size", "4,4"]
    bad = dict(ok, x=ok["x"].copy())
    bad["x"][7] = 4
    save_npz(path("bx.npz"), bad, False)
    refused(path("bx.npz"), ["--frames", 2, *size], "bx.npz: x:", "x = 4 at event 7", "width")
    bad = dict(ok, y=ok["y"].copy())
    bad["y"][3] = -1
    save_npz(path("by.npz"), bad, True)
    refused(path("by.npz"), ["--frames", 2, *size], "by.npz: y:", "y = -1 at event 3")
    bad = dict(ok, t=ok["t"][::-1].copy())
    save_npz(path("bt.npz"), bad, False)
    refused(path("bt.npz"), ["--frames", 2, "--split-by", "time", *size], "bt.npz: t:", "sorted by t")
    refused(path("bt.npz"), ["--duration", 5, *size], "bt.npz: t:", "sorted by t")
    save_npz(path("empty.npz"), dict(t=np.zeros(0, np.int64), x=np.zeros(0, np.int16),
                                     y=np.zeros(0, np.int16), p=np.zeros(0, np.int8)), False)
    refused(path("empty.npz"), ["--frames", 2, *size], "empty.npz: t:", "no events")
    np.savez(path("nop.npz"), t=ok["t"], x=ok["x"], y=ok["y"])
    refused(path("nop.npz"), ["--frames", 2, *size], "nop.npz: p:", "missing")
    np.savez(path("len.npz"), t=ok["t"], x=ok["x"][:-1], y=ok["y"], p=ok["p"])
    refused(path("len.npz"), ["--frames", 2, *size], "len.npz: x:", "holds 19 events, t holds 20")
    np.savez(path("ft.npz"), t=ok["t"] + 0.5, x=ok["x"], y=ok["y"], p=ok["p"])
    refused(path("ft.npz"), ["--frames", 2, *size], "ft.npz: t:", "not an integer")
    short = dict(t=np.array([5, 6, 7]), x=np.zeros(3, np.int64), y=np.zeros(3, np.int64), p=np.ones(3, np.int64))
    save_npz(path("short.npz"), short, False)
    refused(path("short.npz"), ["--frames", 4, "--split-by", "time", *size], "short.npz: t:", "span 2 time units")
    same = dict(short, t=np.array([5, 5, 5]))
    save_npz(path("same.npz"), same, False)
    refused(path("same.npz"), ["--duration", 3, *size], "same.npz: t:", "same time stamp")
    np.save(path("plain.npy"), np.zeros((5, 4), np.int64))
    refused(path("plain.npy"), ["--frames", 2, *size], "plain.npy", "structured array with fields x, y, t, p")
    with open(path("junk.npz"), "wb") as f:
        f.write(b"PK\x03\x04 not really a zip")
    refused(path("junk.npz"), ["--frames", 2, *size], "junk.npz", "npz")
    save_h5(path("h5bad.h5"), [ok, ok])
    with h5py.File(path("h5bad.h5"), "a") as f:
        del f["events/offsets"]
        f["events/offsets"] = np.array([0, 30, 20], np.int64)
    refused(path("h5bad.h5"), ["--frames", 2, *size], "h5bad.h5: /events/offsets:")
    save_h5(path("h5x.h5"), [ok, dict(ok, x=ok["x"] + 3)])
    refused(path("h5x.h5"), ["--frames", 2, *size], "h5x.h5: /events/x:", "sample 1, x = ")


@test
def bad_options_are_refused_before_anything_is_written():
    src = path("ok.npz")
    refused(src, ["--frames", 0, "--size", "4,4"], "option --frames", "at least 1")
    refused(src, ["--size", "4,4"], "option --frames", "--duration")
    refused(src, ["--frames", 2, "--duration", 3, "--size", "4,4"], "option --duration")
    refused(src, ["--frames", 2], "option --size")
    refused(src, ["--frames", 2, "--size", "4,4", "--sensor", "4,4"], "option --size")
    refused(src, ["--frames", 2, "--size", "4"], "option --size")
    refused(src, ["--frames", 2, "--sensor", "4,4,3"], "option --sensor")
    refused(src, ["--frames", 2, "--split-by", "space", "--size", "4,4"], "option --split-by")
    # The output never replaces an input.
    before = open(src, "rb").read()
    expect_error(["frames", src, "-o", src, "--frames", 2, "--size", "4,4"], "option --output")
    assert open(src, "rb").read() == before


@test
def bad_frames_datasets_are_refused_on_run():
    conv = path("evconv.h5")
    with h5py.File(path("nan_frames.h5"), "w") as f:
        x = np.zeros((2, 3, C, H, W), np.float32)
        x[1, 2, 0, 1, 1] = np.nan
        f["frames"] = x
    expect_error(["run", conv, "--input", path("nan_frames.h5"), "--dt", DT],
                 "nan_frames.h5: /frames:", "sample 1, step 2", "not a finite float32")
    with h5py.File(path("two_kinds.h5"), "w") as f:
        f["frames"] = np.zeros((2, 3, C, H, W), np.float32)
        f["spikes"] = np.zeros((2, 3, C, H, W), np.int8)
    expect_error(["run", conv, "--input", path("two_kinds.h5"), "--dt", DT], "two_kinds.h5", "keep one")


finish()
