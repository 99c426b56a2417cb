#!/usr/bin/env python3
"""`ternion map --chip xylo-audio2 | xylo-audio3 | xylo-imu` against Rockpool's documented Xylo
rules, written again here (none of it needs Rockpool):

- limits (docs/devices/xylo-overview.ipynb's family table; the mappers' max_hidden_neurons and
  max_output_neurons): hidden 1000 / 992 / 496, output 8 / 32 / 16, recurrent fan-out per
  hidden neuron 64 / 1024 / 512; more hidden or output neurons, or a larger fan-out, is an error;
  more than 16 input channels, more output channels than the mapper's DRC allows (8 / 16 / 16),
  a bias on a weight node, and projections wider than 128 (Audio 3, IMU) only warn;
- the cycle model (power_cycles_model.py of syns61201, and of syns63300 for IMU and Audio 3):
  cycles = N_in (3.5 p_in N_ien + 1) + N_hid (7 F p_hid + 3) + N_oen p_hid (1 + 8 N_out)
           + N_hid (19 + 2 max(p_hid, a_t a_s) + 3 max(p_hid a_t, a_t a_s) + p_hid
                    + max(p_hid, a_t) a_s) + 12 N_out,
  F = recurrent non-zeros / N_hid, no aliases (a_t = a_s = 0); Audio 2: N_ien = N_oen = N_hid;
  IMU and Audio 3: hidden neurons with a non-zero input weight / a non-zero readout weight;
  clock = cycles(every rate 1) x 1.2 / dt.
The worked case: 16 inputs, 64 hidden, 8 outputs, F = 8, p_in = 0.1, p_hid = 0.05 gives 2275.2
cycles, and 13040 at every rate 1, 15.648 MHz at dt = 1 ms.
"""
import json

import numpy as np

from harness import expect_error, finish, path, run, test
from nirfile import Nir

CHIPS = {  # name: (hidden, output, max fan-out, output-channel warning, non-zero expansion)
    "xylo-audio2": (1000, 8, 64, 8, False),
    "xylo-audio3": (992, 32, 1024, 16, True),
    "xylo-imu": (496, 16, 512, 16, True),
}
rng = np.random.default_rng(39)


def lif(n, spiking=True):
    f = np.float32
    p = dict(tau=np.full(n, 0.02, f), r=np.ones(n, f), v_leak=np.zeros(n, f))
    return ("LIF", dict(p, v_threshold=np.ones(n, f))) if spiking else ("LI", p)


def sparse(rows, cols, per_col):
    """(rows, cols) weights with `per_col[j]` non-zeros in column j (the fan-out of input j)."""
    w = np.zeros((rows, cols), np.float32)
    for j, k in enumerate(per_col):
        w[rng.choice(rows, int(k), replace=False), j] = rng.choice([-2.0, 1.0, 3.0], int(k))
    return w


def network(fname, w_in, hidden, w_out, recurrent=(), links=(), out_spiking=True, bias=False):
    """Input -> w_in -> first hidden population; `hidden` {name: size}; `recurrent` and `links`
    are (weight name, source, target, matrix) between hidden populations; w_out from the last
    hidden population to the output neurons `out` -> Output."""
    names = list(hidden)
    n = Nir().node("input", "Input", shape=np.array([w_in.shape[1]]))
    n.node("w_in", "Affine" if bias else "Linear", weight=w_in,
           **({"bias": np.ones(w_in.shape[0], np.float32)} if bias else {}))
    n.edge("input", "w_in").edge("w_in", names[0])
    for name, size in hidden.items():
        typ, p = lif(size)
        n.node(name, typ, **p)
    for wname, src, dst, w in list(links) + list(recurrent):
        n.node(wname, "Linear", weight=w).edge(src, wname).edge(wname, dst)
    typ, p = lif(w_out.shape[0], out_spiking)
    n.node("w_out", "Linear", weight=w_out).node("out", typ, **p)
    n.node("output", "Output", shape=np.array([w_out.shape[0]]))
    n.edge(names[-1], "w_out").edge("w_out", "out").edge("out", "output")
    n.write(path(fname))


def mapped(fname, chip, *extra):
    return json.loads(run("map", path(fname), "--chip", chip, "--json", *extra).stdout)


def cycles(n_in, n_hid, n_out, n_ien, n_oen, F, p_in, p_hid, a_t=0.0, a_s=0.0):
    return (n_in * (3.5 * p_in * n_ien + 1) + n_hid * (7 * F * p_hid + 3)
            + n_oen * p_hid * (1 + 8 * n_out)
            + n_hid * (19 + 2 * max(p_hid, a_t * a_s) + 3 * max(p_hid * a_t, a_t * a_s) + p_hid
                       + max(p_hid, a_t) * a_s)
            + 12 * n_out)


def worked(fname, n_hid=64, fanout=8, n_in=16, n_out=8):
    network(fname, np.ones((n_hid, n_in), np.float32), {"lif": n_hid},
            np.ones((n_out, n_hid), np.float32),
            recurrent=[("w_rec", "lif", "lif", sparse(n_hid, n_hid, [fanout] * n_hid))])


@test
def worked_example_gives_rockpools_cycles_and_clock():
    assert abs(cycles(16, 64, 8, 64, 64, 8, 0.1, 0.05) - 2275.2) < 1e-9
    assert cycles(16, 64, 8, 64, 64, 8, 1, 1) == 13040
    worked("worked.h5")
    x = mapped("worked.h5", "xylo-audio2", "--rates", "0.1,0.05,0")["xylo"]
    assert (x["n_in"], x["n_hid"], x["n_out"], x["mean_fanout"], x["max_fanout"]) == (16, 64, 8, 8, 8)
    assert abs(x["cycles_at_rates"] - 2275.2) < 1e-9, x
    assert x["cycles_worst"] == 13040 and abs(x["clock_hz"] - 15.648e6) < 1e-3, x
    assert x["dt"] == 0.001 and x["dt_source"] == "default"
    text = run("map", path("worked.h5"), "--chip", "xylo-audio2", "--rates", "0.1,0.05,0").stdout
    for part in ("2275.2", "13040", "15.648 MHz", "lif", "w_in, w_rec"):
        assert part in text, (part, text)
    x = mapped("worked.h5", "xylo-audio2", "--dt", "0.0005")["xylo"]
    assert abs(x["clock_hz"] - 13040 * 1.2 / 0.0005) < 1e-3 and x["dt_source"] == "option --dt"


@test
def random_networks_match_the_cycle_model_on_every_chip():
    for trial in range(18):
        chip = list(CHIPS)[trial % 3]
        hid_max, out_max, fan_max, _, nonzero = CHIPS[chip]
        n_in, n_out = int(rng.integers(2, 17)), int(rng.integers(1, min(out_max, 16) + 1))
        sizes = [int(rng.integers(4, 60)) for _ in range(int(rng.integers(1, 3)))]
        hidden = {f"h{k}": s for k, s in enumerate(sizes)}
        w_in = rng.standard_normal((sizes[0], n_in)).astype(np.float32)
        w_in[rng.random(sizes[0]) < 0.3] = 0  # hidden neurons without input
        w_out = rng.standard_normal((n_out, sizes[-1])).astype(np.float32)
        w_out[:, rng.random(sizes[-1]) < 0.3] = 0  # hidden neurons without readout
        # at most 30 + 30 recurrent synapses per neuron: within every chip's maximum fan-out
        rec = [(f"r{k}", f"h{k}", f"h{k}", sparse(s, s, rng.integers(0, min(s, 30) + 1, s)))
               for k, s in enumerate(sizes)]
        links = [(f"l{k}", f"h{k}", f"h{k + 1}", sparse(sizes[k + 1], sizes[k],
                                                        rng.integers(0, min(sizes[k + 1], 30) + 1, sizes[k])))
                 for k in range(len(sizes) - 1)]
        network(f"r{trial}.h5", w_in, hidden, w_out, rec, links)
        n_hid = sum(sizes)
        nnz = sum(int(np.count_nonzero(w)) for *_, w in rec + links)
        fan = [np.count_nonzero(w, axis=0) for *_, w in rec + links]
        per_pop = [sum(f[1] for f in zip(rec + links, fan) if f[0][1] == f"h{k}") for k in range(len(sizes))]
        max_fan = max(int(np.max(p)) for p in per_pop)
        ien = int(np.count_nonzero(np.any(w_in != 0, axis=1))) if nonzero else n_hid
        oen = int(np.count_nonzero(np.any(w_out != 0, axis=0))) if nonzero else n_hid
        p_in, p_hid, p_out = (round(float(v), 3) for v in rng.random(3))
        x = mapped(f"r{trial}.h5", chip, "--rates", f"{p_in},{p_hid},{p_out}")["xylo"]
        F = nnz / n_hid
        assert (x["n_in"], x["n_hid"], x["n_out"], x["n_ien"], x["n_oen"]) == (n_in, n_hid, n_out, ien, oen), (trial, x)
        assert x["recurrent_weights"] == nnz and abs(x["mean_fanout"] - F) < 1e-12 and x["max_fanout"] == max_fan
        want = cycles(n_in, n_hid, n_out, ien, oen, F, p_in, p_hid)
        assert abs(x["cycles_at_rates"] - want) < 1e-6 * want, (trial, x["cycles_at_rates"], want)
        worst = cycles(n_in, n_hid, n_out, ien, oen, F, 1, 1)
        assert abs(x["cycles_worst"] - worst) < 1e-6 * worst
        assert abs(x["clock_hz"] - worst * 1.2 / 1e-3) < 1e-6 * worst * 1200


@test
def hidden_and_output_neurons_fit_up_to_each_chips_maximum():
    for chip, (hid, out, *_rest) in CHIPS.items():
        for n_hid, n_out in ((hid, out), (hid + 1, out), (64, out + 1)):
            f = f"{chip}-{n_hid}-{n_out}.h5"
            network(f, np.ones((n_hid, 4), np.float32), {"lif": n_hid}, np.ones((n_out, n_hid), np.float32))
            if n_hid > hid:
                expect_error(["map", path(f), "--chip", chip], f"{f}: nodes/lif: needs {n_hid} hidden "
                             f"neurons: {chip} has {hid} hidden neurons")
            elif n_out > out:
                expect_error(["map", path(f), "--chip", chip], f"{f}: nodes/out: needs {n_out} output "
                             f"neurons: {chip} has {out} output neurons")
            else:
                j = mapped(f, chip)
                assert j["fits"] and [l["ids"] for l in j["layers"]] == [[0, hid - 1], [0, out - 1]]
    # two hidden populations: the second one overflows, after the first one's ids
    network("two.h5", np.ones((600, 4), np.float32), {"a": 600, "b": 401}, np.ones((2, 401), np.float32),
            links=[("ab", "a", "b", sparse(401, 600, [1] * 600))])
    expect_error(["map", path("two.h5"), "--chip", "xylo-audio2"],
                 "nodes/b: needs 1001 hidden neurons (401 here after 600): xylo-audio2 has 1000")


@test
def a_fanout_above_the_maximum_names_the_neuron():
    for chip, (hid, _, fan, *_rest) in CHIPS.items():
        # XyloAudio 3 allows a fan-out of 1024 over 992 hidden neurons: every neuron fits
        n = min(fan + 1, hid)
        for k in (min(fan, n), fan + 1) if fan < hid else (n,):
            per = [1] * n
            per[3] = k
            f = f"fan-{chip}-{k}.h5"
            network(f, np.ones((n, 4), np.float32), {"lif": n}, np.ones((2, n), np.float32),
                    recurrent=[("w_rec", "lif", "lif", sparse(n, n, per))])
            if k > fan:
                expect_error(["map", path(f), "--chip", chip], f"{f}: nodes/lif: neuron 3 drives {k} "
                             f"recurrent synapses (its fan-out, through w_rec): {chip} holds at most {fan}")
            else:
                assert mapped(f, chip)["xylo"]["max_fanout"] == k


@test
def what_rockpool_only_warns_about_is_a_note():
    network("wide.h5", np.ones((20, 17), np.float32), {"lif": 20}, np.ones((17, 20), np.float32), bias=True)
    notes = mapped("wide.h5", "xylo-audio3")["notes"]
    assert any("17 input channels" in n for n in notes), notes
    assert any("17 output channels" in n and "above 16" in n for n in notes), notes
    assert any(n.startswith("warning: w_in: the bias") for n in notes), notes
    expect_error(["map", path("wide.h5"), "--chip", "xylo-imu"], "nodes/out: needs 17 output neurons")
    network("proj.h5", np.ones((130, 4), np.float32), {"lif": 130}, np.ones((2, 130), np.float32),
            out_spiking=False)
    notes = mapped("proj.h5", "xylo-imu")["notes"]
    assert any("input weights reach 130" in n for n in notes) and any("output projection" in n for n in notes), notes
    assert any(n.startswith("out: does not spike") for n in notes), notes
    assert not any("projection" in n for n in mapped("proj.h5", "xylo-audio2")["notes"])


@test
def graphs_outside_xylos_arrangement_are_one_line_errors():
    f32 = np.float32

    def write(fname, nodes, edges):
        n = Nir()
        for name, typ, p in nodes:
            n.node(name, typ, **p)
        for a, b in edges:
            n.edge(a, b)
        n.write(path(fname))
    inp = ("input", "Input", dict(shape=np.array([4])))
    out = ("output", "Output", {})
    w = lambda name, o, i: (name, "Linear", dict(weight=np.ones((o, i), f32)))  # noqa: E731
    h = lambda name, k: (name, lif(k)[0], lif(k)[1])  # noqa: E731
    cases = {
        "direct.h5": ([inp, h("lif", 4), w("wo", 2, 4), h("o", 2), out],
                      [("input", "lif"), ("lif", "wo"), ("wo", "o"), ("o", "output")],
                      "nodes/lif: takes the network input directly"),
        "twice.h5": ([inp, w("a", 4, 4), w("b", 4, 4), h("lif", 4), w("wo", 2, 4), h("o", 2), out],
                     [("input", "a"), ("a", "b"), ("b", "lif"), ("lif", "wo"), ("wo", "o"), ("o", "output")],
                     "nodes/a: feeds b, a Linear: on Xylo weights feed neurons"),
        "lin_out.h5": ([inp, w("a", 4, 4), h("lif", 4), w("wo", 2, 4), out],
                       [("input", "a"), ("a", "lif"), ("lif", "wo"), ("wo", "output")],
                       "nodes/wo: feeds output, a Output"),
        "one.h5": ([inp, w("a", 4, 4), h("lif", 4), out],
                   [("input", "a"), ("a", "lif"), ("lif", "output")], "needs hidden and output neurons"),
        "rec_out.h5": ([inp, w("a", 4, 4), h("lif", 4), w("wo", 2, 4), h("o", 2), w("back", 4, 2), out],
                       [("input", "a"), ("a", "lif"), ("lif", "wo"), ("wo", "o"), ("o", "output"),
                        ("o", "back"), ("back", "lif")],
                       "nodes/o: feeds the Output and other nodes"),
        "in_out.h5": ([inp, w("a", 2, 4), h("o", 2), out],
                      [("input", "a"), ("a", "o"), ("o", "output")], "needs hidden and output neurons"),
        "scale.h5": ([inp, w("a", 4, 4), h("lif", 4), ("s", "Scale", dict(scale=np.float32(2))),
                      w("wo", 2, 4), h("o", 2), out],
                     [("input", "a"), ("a", "lif"), ("lif", "s"), ("s", "wo"), ("wo", "o"), ("o", "output")],
                     "nodes/s: is a Scale, which Xylo's SNN core does not run"),
    }
    for fname, (nodes, edges, message) in cases.items():
        write(fname, nodes, edges)
        expect_error(["map", path(fname), "--chip", "xylo-imu"], fname + ": ", message)
    worked("ok.h5")
    expect_error(["map", path("ok.h5"), "--chip", "dynapcnn", "--rates", "1,1,1"],
                 "option --rates: the dynapcnn family has no cycle model")
    expect_error(["map", path("ok.h5"), "--chip", "xylo-imu", "--rates", "1,2,0"], "option --rates: '2'")
    expect_error(["map", path("ok.h5"), "--chip", "xylo-imu", "--rates", "1,1"], "expected three rates")


@test
def chip_files_are_strict_and_listed():
    worked("ok.h5")
    listed = run("map", "--chips").stdout
    for chip in CHIPS:
        assert chip in listed, listed
    doc = json.loads(open(mapped("ok.h5", "xylo-imu")["chip"]["path"]).read())
    doc["neurons"]["hidden_neurons"] = 5
    with open(path("bad.json"), "w") as fh:
        json.dump(doc, fh)
    expect_error(["map", path("ok.h5"), "--chip", path("bad.json")], "bad.json: neurons.hidden_neurons: unknown key")
    del doc["neurons"]["hidden_neurons"]
    doc["cores"] = {}
    with open(path("bad.json"), "w") as fh:
        json.dump(doc, fh)
    expect_error(["map", path("ok.h5"), "--chip", path("bad.json")], "bad.json: cores: unknown key")
    del doc["cores"]
    del doc["cycles"]["source"]
    with open(path("bad.json"), "w") as fh:
        json.dump(doc, fh)
    expect_error(["map", path("ok.h5"), "--chip", path("bad.json")], "cycles.source: missing")


finish()
