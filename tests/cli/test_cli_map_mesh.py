#!/usr/bin/env python3
"""`ternion map --chip loihi-like | generic-45nm | <mesh file>`: mesh placement, routing, latency
and the energy band, each recounted here from the chip file and the rules of docs/chips.md:

- packing: a layer's neurons go onto cores in order, a new core when the next neuron would
  exceed the core's neurons, synapse memory (fan-in x synapse bits) or input axons (Loihi: 4096
  per core); a neuron that fits no empty core is one error naming the node, the limit, the need
  and the capacity (spikingjelly #543: a 512 x 3 x 3 convolution against Loihi's 4096 axons);
- routing (SANA-FE's rule, chip-model.md D.4): core k on tile k // per_tile at (t % W, t // W);
  a spike is one packet to every core of the layers it feeds; hops |dx| + |dy|; energy
  spike_pj + hops at the destination tile's per-hop energies; the host injects the input at
  tile (0, 0);
- each core's time: events x t_syn + neurons x ((1 - r) t_upd + r t_act) + packets x spike_ns +
  the longest flight's hops; the step: the slowest core + the barrier (linear in the tiles);
- the band: ops (events x E_syn + updates x ((1 - r) E_upd + r E_act)), + memory (SRAM words at
  Horowitz's size table, unless the per-op figures include them), + routing, + static power x
  cores x step time;
- the ANN equivalent, one pass: ops (synapses x E_mac + neurons x E_activation), + memory (every
  stored weight read once at the weight width, every output value and score entry written and
  read once at the activation width), + routing (every output value a packet, the routing rule
  above at rate 1), + static power x cores x the pass (each core's MACs and activations at the
  ANN's op times, its packets, the slowest core + the barrier); SNN/ANN = the SNN's inference
  of T steps over one pass (and over T passes) at each level.
"""
import json

import numpy as np

from harness import expect_error, finish, path, run, test
from nirfile import Nir, spikes_file

ROOT = __import__("os").path.join(__import__("os").path.dirname(__file__), "..", "..")
LOIHI = json.load(open(f"{ROOT}/hw/chips/loihi-like.json"))
GENERIC = json.load(open(f"{ROOT}/hw/chips/generic-45nm.json"))


def lif(n):
    f = np.float32
    return dict(tau=np.full(n, 0.02, f), r=np.ones(n, f), v_leak=np.zeros(n, f),
                v_threshold=np.ones(n, f))


def chain(fname, n_in, sizes, in_shape=None, weights=None):
    """Input [n_in] (or `in_shape`, rows of tokens) -> (Linear -> LIF) per size -> Output; dense
    weights of ones unless given."""
    rows = int(np.prod(in_shape[:-1])) if in_shape else 1
    n = Nir().node("input", "Input", shape=np.array(in_shape or [n_in]))
    prev, fan = "input", n_in
    for i, s in enumerate(sizes):
        w = weights[i] if weights else np.ones((s, fan), np.float32)
        n.node(f"l{i}", "Linear", weight=w).node(f"n{i}", "LIF", **lif(s * rows))
        n.edge(prev, f"l{i}").edge(f"l{i}", f"n{i}")
        prev, fan = f"n{i}", s
    n.node("output", "Output", shape=np.array([fan * rows])).edge(prev, "output")
    n.write(path(fname))


def mesh_chip(fname, w, h, per_tile, neurons, base=LOIHI):
    """A copy of `base` on a w x h mesh with `neurons` per core and memories that never bind."""
    c = json.loads(json.dumps(base))
    c["name"] = fname[:-5]
    c["mesh"].update(width=w, height=h, cores_per_tile=per_tile)
    c["core"].update(neurons=neurons, synapse_memory_bytes=1 << 20, state_memory_bytes=1 << 20,
                     max_fanin=1 << 20, max_fanout=1 << 20)
    json.dump(c, open(path(fname), "w"))
    return c


def mapped(model, chip, *extra):
    return json.loads(run("map", path(model), "--chip", chip, "--json", *extra).stdout)


def tile(c, core):
    t = core // c["mesh"]["cores_per_tile"]
    return t % c["mesh"]["width"], t // c["mesh"]["width"]


def recount_routing(c, j):
    """Per layer (packets, hops, pJ) of the spikes leaving it, the input's pJ, and each core's
    longest flight (ns), from the placement's cores, sources and rates."""
    noc = c["noc"]
    names = {l["name"]: l for l in j["layers"]}
    dest = {}  # source name -> destination cores
    for l in j["layers"]:
        for s in l["sources"]:
            dest.setdefault(s, set()).update(k["core"] for k in l["cores"])

    def send(src_core, spikes, targets):
        sx, sy = (0, 0) if src_core is None else tile(c, src_core)
        pk = hops = pj = flight = 0.0
        for d in sorted(targets):
            dx, dy = tile(c, d)
            hx, hy = abs(dx - sx), abs(dy - sy)
            pk += spikes
            hops += spikes * (hx + hy)
            pj += spikes * (noc["spike_pj"] + hx * noc["hop_pj_east_west"]
                            + hy * noc["hop_pj_north_south"])
            flight = max(flight, noc["spike_ns"] + hx * noc["hop_ns_east_west"]
                         + hy * noc["hop_ns_north_south"])
        return pk, hops, pj, flight

    per_layer, flights = {}, {}
    for name, l in names.items():
        tot = [0.0, 0.0, 0.0]
        for k in l["cores"]:
            pk, hops, pj, fl = send(k["core"], l["rate_out"] * k["out_neurons"],
                                    dest.get(name, ()))
            tot = [tot[0] + pk, tot[1] + hops, tot[2] + pj]
            flights[k["core"]] = (pk, fl)
        per_layer[name] = tot
    _, _, input_pj, _ = send(None, j["rates"]["input"] * j["input_neurons"], dest.get("input", ()))
    return per_layer, input_pj, flights


def sram(c, nbytes):
    """Horowitz's table as docs/chips.md states it: linear between sizes, from (0, 0) below."""
    x0 = y0 = 0.0
    for x1, y1 in c["memory"]["sram_pj"]:
        if nbytes <= x1:
            return y0 + (y1 - y0) * (nbytes - x0) / (x1 - x0)
        x0, y0 = x1, y1
    return y0


def check_ann(c, j):
    """The ANN equivalent's band, per layer and in total, recounted from the placement and the
    chip file: every rate 1 for the routing (every value sent), each core's MACs at mac_ns."""
    a, core = c["ann"], c["core"]
    dense = json.loads(json.dumps(j))
    dense["rates"]["input"] = 1.0
    for l in dense["layers"]:
        l["rate_out"] = 1.0
    per_layer, input_pj, flights = recount_routing(c, dense)
    ab = c["memory"]["access_bits"]
    in_ops = c["memory"]["included_in_ops"]
    t = c["timing"]
    times = {}
    for l in j["layers"]:
        for k in l["cores"]:
            pk, fl = flights[k["core"]]
            times[k["core"]] = (k["synapses"] * a["mac_ns"] + k["neurons"] * a["activation_ns"]
                                + pk * c["noc"]["spike_ns"] + max(0.0, fl - c["noc"]["spike_ns"]))
    tiles, all_tiles = j["tiles_used"], c["mesh"]["width"] * c["mesh"]["height"]
    barrier = t["barrier_ns_one_tile"] + (t["barrier_ns_all_tiles"] - t["barrier_ns_one_tile"]) \
        * (tiles - 1) / (all_tiles - 1)
    pass_ns = max(times.values()) + barrier
    assert abs(j["ann"]["latency"]["pass_ns"] - pass_ns) < 1e-9, (j["ann"]["latency"], pass_ns)
    total = [0.0] * 4
    for l in j["layers"]:
        stored = sum(k["stored_weights"] for k in l["cores"])
        score = l["attention"]["score_entries"] if l["attention"] else 0
        ops = l["synapses"] * a["mac_pj"] + l["neurons"] * a["activation_pj"]
        mem = 0.0 if in_ops else (
            stored * core["weight_bits"] / ab * sram(c, core["synapse_memory_bytes"])
            + (l["neurons"] + score) * 2 * a["activation_bits"] / ab
            * sram(c, core["state_memory_bytes"]))
        route = per_layer[l["name"]][2]
        static = c["static"]["power_per_core_w"] * len(l["cores"]) * pass_ns * 1e3
        want = [ops, ops + mem, ops + mem + route, ops + mem + route + static]
        got = [l["ann"]["band_pj"][k] for k in ("ops", "memory", "routing", "static")]
        assert all(abs(g - w) < 1e-6 * max(1.0, w) for g, w in zip(got, want)), \
            (l["name"], got, want)
        assert l["ann"]["macs"] == l["synapses"]
        total = [x + y for x, y in zip(total, [ops, mem, route, static])]
    total[2] += input_pj
    want = [sum(total[:i + 1]) for i in range(4)]
    got = [j["ann"]["one_pass_pj"][k] for k in ("ops", "memory", "routing", "static")]
    assert all(abs(g - w) < 1e-6 * max(1.0, w) for g, w in zip(got, want)), (got, want)


def check_routing(c, j):
    per_layer, input_pj, _ = recount_routing(c, j)
    for l in j["layers"]:
        pk, hops, pj = per_layer[l["name"]]
        assert abs(l["packets"] - pk) < 1e-9 and abs(l["hops"] - hops) < 1e-9, (l, pk, hops)
        assert abs(l["band_pj"]["routing"] - l["band_pj"]["memory"] - pj) < 1e-6, (l, pj)
    total = sum(v[2] for v in per_layer.values()) + input_pj
    assert abs(j["routing"]["energy_pj"] - total) < 1e-6, (j["routing"], total)
    assert abs(j["routing"]["input_pj"] - input_pj) < 1e-9
    assert abs(j["routing"]["packets"] - sum(v[0] for v in per_layer.values())
               - j["rates"]["input"] * j["input_neurons"] * len(
                   next(l for l in j["layers"] if "input" in l["sources"])["cores"])) < 1e-9


@test
def routing_on_a_2x2_mesh_equals_an_independent_count():
    # 2 x 2 tiles of 2 cores, 4 neurons per core: 10 neurons on cores 0-2, 7 on cores 3-4.
    c = mesh_chip("mesh2.json", 2, 2, 2, 4)
    chain("m2.h5", 6, [10, 7])
    j = mapped("m2.h5", path("mesh2.json"), "--rates", "0.5,0.25,0.125")
    cores = [[k["core"] for k in l["cores"]] for l in j["layers"]]
    assert cores == [[0, 1, 2], [3, 4]], cores
    assert [[k["neurons"] for k in l["cores"]] for l in j["layers"]] == [[4, 4, 2], [4, 3]]
    assert [k["tile"] for k in j["layers"][1]["cores"]] == [[1, 0], [0, 1]]
    # By hand: layer l0 fires at 0.25, 4 + 4 + 2 neurons, each spike to cores 3 (tile (1,0))
    # and 4 (tile (0,1)): cores 0, 1 (tile (0,0)) 1 E-W + 1 N-S hop; core 2 (tile (1,0))
    # 0 + (1 E-W + 1 N-S).
    l0 = j["layers"][0]
    assert abs(l0["packets"] - 0.25 * 10 * 2) < 1e-9
    assert abs(l0["hops"] - (0.25 * 8 * 2 + 0.25 * 2 * 2)) < 1e-9
    e = 0.25 * 8 * (2 * 1.7 + 3.0 + 4.0) + 0.25 * 2 * (2 * 1.7 + 4.0 + 3.0)
    assert abs(l0["band_pj"]["routing"] - l0["band_pj"]["memory"] - e) < 1e-9
    check_routing(c, j)
    # The ANN sends every one of l0's 10 values to both cores of l1: the same hops at rate 1.
    a0 = l0["ann"]
    assert abs(a0["packets"] - 10 * 2) < 1e-9 and abs(a0["hops"] - (8 * 2 + 2 * 2)) < 1e-9
    assert abs(a0["band_pj"]["routing"] - a0["band_pj"]["memory"] - e / 0.25) < 1e-9
    check_ann(c, j)
    # The same mesh with generic-45nm's figures, where the SRAM levels count.
    g = mesh_chip("mesh2g.json", 2, 2, 2, 4, base=GENERIC)
    check_ann(g, mapped("m2.h5", path("mesh2g.json"), "--rates", "0.5,0.25,0.125"))


@test
def routing_and_critical_path_on_a_4x4_mesh_equal_an_independent_count():
    c = mesh_chip("mesh4.json", 4, 4, 1, 3)
    chain("m4.h5", 5, [20, 9, 4])
    j = mapped("m4.h5", path("mesh4.json"), "--rates", "0.3,0.2,0.1", "--steps", "3")
    assert [len(l["cores"]) for l in j["layers"]] == [7, 3, 2]
    assert j["cores_used"] == 12 and j["tiles_used"] == 12
    check_routing(c, j)
    t, e = c["timing"], c["energy"]
    _, _, flights = recount_routing(c, j)
    times = {}
    for l in j["layers"]:
        r = l["rate_out"]
        for k in l["cores"]:
            events = l["rate_in"] * k["synapses"]
            pk, fl = flights[k["core"]]
            times[k["core"]] = (events * t["synaptic_op_ns"]
                                + k["neurons"] * ((1 - r) * t["neuron_update_ns"]
                                                  + r * t["neuron_active_ns"])
                                + pk * c["noc"]["spike_ns"] + max(0.0, fl - c["noc"]["spike_ns"]))
    lat = j["latency"]
    for k in lat["cores"]:
        assert abs(k["ns"] - times[k["core"]]) < 1e-9, (k, times[k["core"]])
    barrier = t["barrier_ns_one_tile"] + (t["barrier_ns_all_tiles"] - t["barrier_ns_one_tile"]) \
        * (12 - 1) / (16 - 1)
    assert abs(lat["barrier_ns"] - barrier) < 1e-9
    assert abs(lat["step_ns"] - (max(times.values()) + barrier)) < 1e-9
    assert lat["critical_core"] == max(times, key=times.get)
    assert abs(lat["inferences_per_s"] - 1e9 / (3 * lat["step_ns"])) < 1e-6
    check_ann(c, j)


@test
def tiny_model_band_equals_the_hand_computed_figures_on_loihi_like():
    # Input [4] -> Linear 4->3 (12 weights) -> LIF -> Output, rates 0.5 / 0.25 / 0.1, 2 steps.
    chain("tiny.h5", 4, [3])
    j = mapped("tiny.h5", "loihi-like", "--rates", "0.5,0.25,0.1", "--steps", "2")
    (l,) = j["layers"]
    assert l["nodes"] == ["l0", "n0"] and l["cores"][0]["core"] == 0 and l["synapses"] == 12
    ops = 0.5 * 12 * 23.6 + 3 * (0.9 * 52 + 0.1 * 81)        # 306.3 pJ
    assert abs(ops - 306.3) < 1e-9
    # Memory: in Davies' per-op figures. Routing: the host's 0.5 x 4 spikes to core 0 on tile
    # (0,0): 2 packets of 1.7 pJ, no hops; l0 feeds only the Output.
    core_ns = 0.5 * 12 * 3.5 + 3 * (0.9 * 5.3 + 0.1 * 8.4)    # 37.83 ns
    step = core_ns + 113                                     # one tile: the one-tile barrier
    static = 1e-4 * 1 * step * 1e3                          # W x ns x 1e3 = pJ
    b = l["band_pj"]
    assert abs(b["ops"] - ops) < 1e-9 and b["memory"] == b["ops"] and b["routing"] == b["ops"]
    assert abs(b["static"] - (ops + static)) < 1e-9
    band = j["band"]["step_pj"]
    assert abs(band["routing"] - (ops + 2 * 1.7)) < 1e-9
    assert abs(band["static"] - (ops + 2 * 1.7 + static)) < 1e-9
    inf = j["band"]["inference_pj"]
    assert abs(inf["static"] - 2 * band["static"]) < 1e-9
    assert abs(j["latency"]["step_ns"] - step) < 1e-9
    levels = [band[k] for k in ("ops", "memory", "routing", "static")]
    assert levels == sorted(levels)
    text = run("map", path("tiny.h5"), "--chip", "loihi-like", "--rates", "0.5,0.25,0.1").stdout
    for part in ("loihi-like", "l0", "latency per step", "+routing", "inferences/s"):
        assert part in text, (part, text)


LEVELS = ("ops", "memory", "routing", "static")


@test
def tiny_model_ann_equivalent_by_hand_on_loihi_like():
    # Input [4] -> Linear 4->3 -> LIF at rates 0.5 / 0.25 / 0.1, T = 2 (the SNN's band above).
    # The ANN's one pass: 12 MACs at one synaptic op each (23.6 pJ, assumed) and 3 activations
    # at one inactive neuron update each (52 pJ); memory inside those figures; the host sends
    # all 4 input values to core 0 (tile (0,0), no hops): 4 x 1.7 pJ; core 0 takes
    # 12 x 3.5 + 3 x 5.3 ns, then the one-tile barrier; static 0.1 mW x that.
    a = LOIHI["ann"]
    assert (a["mac_pj"], a["activation_pj"], a["mac_ns"], a["activation_ns"]) == \
        (23.6, 52, 3.5, 5.3)
    chain("tiny.h5", 4, [3])
    j = mapped("tiny.h5", "loihi-like", "--rates", "0.5,0.25,0.1", "--steps", "2")
    ops = 12 * 23.6 + 3 * 52                           # 439.2 pJ
    pass_ns = 12 * 3.5 + 3 * 5.3 + 113                 # 170.9 ns
    static = 1e-4 * pass_ns * 1e3                      # 17.09 pJ
    ann = [ops, ops, ops + 4 * 1.7, ops + 4 * 1.7 + static]
    got = [j["ann"]["one_pass_pj"][k] for k in LEVELS]
    assert all(abs(g - w) < 1e-9 for g, w in zip(got, ann)), (got, ann)
    assert abs(ann[3] - 463.09) < 1e-9
    assert abs(j["ann"]["latency"]["pass_ns"] - pass_ns) < 1e-9 and j["ann"]["macs_per_pass"] == 12
    # The layer alone: no packets of its own (it feeds only the Output).
    lb = j["layers"][0]["ann"]["band_pj"]
    assert abs(lb["routing"] - ops) < 1e-9 and abs(lb["static"] - (ops + static)) < 1e-9
    # The SNN's inference (2 steps of the band above): 2 x (306.3, 306.3, 309.7, 324.783).
    step = 0.5 * 12 * 3.5 + 3 * (0.9 * 5.3 + 0.1 * 8.4) + 113
    snn_step = [306.3, 306.3, 306.3 + 2 * 1.7, 306.3 + 2 * 1.7 + 1e-4 * step * 1e3]
    snn = [2 * v for v in snn_step]
    for k, s_, a_ in zip(LEVELS, snn, ann):
        assert abs(j["ann"]["snn_over_ann"][k] - s_ / a_) < 1e-9, (k, j["ann"]["snn_over_ann"])
        assert abs(j["ann"]["snn_over_ann_t_passes"][k] - s_ / (2 * a_)) < 1e-9
        assert abs(j["ann"]["t_passes_pj"][k] - 2 * a_) < 1e-9
    assert abs(j["ann"]["snn_over_ann"]["static"] - 649.566 / 463.09) < 1e-9
    text = run("map", path("tiny.h5"), "--chip", "loihi-like", "--rates", "0.5,0.25,0.1",
               "--steps", "2").stdout
    for part in ("ANN equivalent, one pass", "SNN/ANN per inference, one pass",
                 "T=2 passes (one a step)", "ann.mac_pj"):
        assert part in text, (part, text)


@test
def tiny_model_ann_equivalent_by_hand_on_generic_45nm():
    # One pass: 12 MACs x (int8 mult 0.2 + int32 add 0.1 pJ) + 3 requantisations x 3.2 pJ;
    # memory: the 12 stored int8 weights read once, 12 x 8 / 64 = 1.5 words of the 32 KB SRAM
    # (20 pJ), and 3 int8 outputs written and read, 3 x 2 x 8 / 64 = 0.75 words of the 8 KB
    # SRAM (10 pJ); routing: the 4 input values, 1 pJ each within tile (0,0); core 0 takes
    # 12 + 3 cycles of 1 ns, then the one-tile barrier of 10 ns; static 0.1 mW x 25 ns.
    a = GENERIC["ann"]
    assert abs(a["mac_pj"] - (0.2 + 0.1)) < 1e-12
    assert abs(a["activation_pj"] - (3.1 + 0.1)) < 1e-12
    chain("tiny.h5", 4, [3])
    j = mapped("tiny.h5", "generic-45nm", "--rates", "0.5,0.25,0.1", "--steps", "2")
    ops = 12 * 0.3 + 3 * 3.2                                 # 13.2 pJ
    mem = 1.5 * 20 + 0.75 * 10                               # 37.5 pJ
    static = 1e-4 * (12 + 3 + 10) * 1e3                      # 2.5 pJ
    ann = [ops, ops + mem, ops + mem + 4, ops + mem + 4 + static]
    got = [j["ann"]["one_pass_pj"][k] for k in LEVELS]
    assert all(abs(g - w) < 1e-9 for g, w in zip(got, ann)), (got, ann)
    # The SNN's step (the memory-level test above): ops 0.5 x 12 x 0.03 + 3 (0.9 x 3.2 + 0.1 x
    # 3.3), memory 0.75 x 20 + 1.5 x 10, the input's 2 spikes x 1 pJ, static 0.1 mW x (6 + 3 +
    # 10) ns; the inference is 2 steps.
    s_ops = 0.5 * 12 * 0.03 + 3 * (0.9 * 3.2 + 0.1 * 3.3)
    s_step = [s_ops, s_ops + 30, s_ops + 30 + 2, s_ops + 30 + 2 + 1e-4 * 19 * 1e3]
    for k, s_, a_ in zip(LEVELS, s_step, ann):
        assert abs(j["ann"]["snn_over_ann"][k] - 2 * s_ / a_) < 1e-9, (k, j["ann"])
        assert abs(j["ann"]["snn_over_ann_t_passes"][k] - s_ / a_) < 1e-9
    lr = j["layers"][0]["ann"]["snn_over_ann"]
    assert abs(lr["memory"] - 2 * (s_ops + 30) / (ops + mem)) < 1e-9


@test
def snn_over_ann_grows_with_the_firing_rate_and_the_ann_does_not_move():
    chain("sweep.h5", 32, [64, 48, 10])
    for chip in ("loihi-like", "generic-45nm"):
        prev, ann0 = None, None
        for r in (0.005, 0.02, 0.05, 0.1, 0.2, 0.35, 0.5):
            j = mapped("sweep.h5", chip, "--rates", f"{r},{r},{r}", "--steps", "4")
            ann = [j["ann"]["one_pass_pj"][k] for k in LEVELS]
            snn = [j["band"]["inference_pj"][k] for k in LEVELS]
            ratio = [j["ann"]["snn_over_ann"][k] for k in LEVELS]
            assert all(abs(q - s_ / a_) < 1e-12 * q for q, s_, a_ in zip(ratio, snn, ann))
            ann0 = ann0 or ann
            assert all(abs(a_ - b_) < 1e-9 * b_ for a_, b_ in zip(ann, ann0)), (chip, r)
            if prev:
                assert all(q > p for q, p in zip(ratio, prev)), (chip, r, ratio, prev)
            prev = ratio


@test
def run_chip_prices_the_runs_own_spikes():
    """`ternion run --chip`: each layer's rate and synaptic events are the run's (recounted here
    from the input array and the run's per-layer spike counts), and the band follows from them
    by the same rules as `ternion map --rates`."""
    rng = np.random.default_rng(3)
    S, T = 3, 5
    chain("rc.h5", 16, [8, 4])  # weights of ones: every input spike reaches every neuron
    x = (rng.random((S, T, 16)) < 0.3).astype(np.int8)
    spikes_file(path("rc_in.h5"), x)
    j = json.loads(run("run", path("rc.h5"), "--input", path("rc_in.h5"), "--chip", "loihi-like",
                       "--json", "--no-progress").stdout)
    spikes = {l["name"]: l["spikes"] for l in j["layers"]}
    c = j["chip"]
    assert c["measured"] and c["latency"]["steps"] == T
    per = S * T
    layers = {l["name"]: l for l in c["layers"]}
    (l0, l1) = layers["l0"], layers["l1"]
    events0, events1 = x.sum() * 8 / per, spikes["n0"] * 4 / per
    r0, r1 = spikes["n0"] / per / 8, spikes["n1"] / per / 4
    assert abs(l0["events"] - events0) < 1e-9 and abs(l1["events"] - events1) < 1e-9
    assert abs(l0["rate_out"] - r0) < 1e-12 and abs(l1["rate_out"] - r1) < 1e-12
    assert abs(l0["rate_in"] - x.sum() / per / 16) < 1e-12
    for l, ev, n, r in ((l0, events0, 8, r0), (l1, events1, 4, r1)):
        ops = ev * 23.6 + n * ((1 - r) * 52 + r * 81)
        assert abs(l["band_pj"]["ops"] - ops) < 1e-6, (l["name"], l["band_pj"], ops)
    text = run("run", path("rc.h5"), "--input", path("rc_in.h5"), "--chip", "loihi-like",
               "--no-progress").stdout
    assert "on chip:" in text and "the run's own" in text and "latency per step" in text
    # The trace holds the band per inference: the report's steps times each layer's band per
    # step, and the total; a run without --chip writes no /ternion/chip.
    levels = ("ops", "memory", "routing", "static")
    j = json.loads(run("run", path("rc.h5"), "--input", path("rc_in.h5"), "--chip", "loihi-like",
                       "--trace", path("rc_trace.h5"), "--json", "--no-progress").stdout)
    import h5py
    with h5py.File(path("rc_trace.h5")) as f:
        g = f["ternion/chip"]
        assert g.attrs["chip"] == "loihi-like"
        want = [j["chip"]["band"]["inference_pj"][k] for k in levels]
        assert np.allclose(g["band_pj_per_inference"][:], want, rtol=1e-12, atol=0)
        names = [n.decode() for n in g["layers"][:]]
        assert names == [l["name"] for l in j["chip"]["layers"]]
        per_layer = g["layer_band_pj_per_inference"][:]
        for row, l in zip(per_layer, j["chip"]["layers"]):
            assert np.allclose(row, [l["band_pj"][k] * T for k in levels], rtol=1e-12, atol=0)
    run("run", path("rc.h5"), "--input", path("rc_in.h5"), "--trace", path("rc_plain.h5"),
        "--no-progress")
    with h5py.File(path("rc_plain.h5")) as f:
        assert "chip" not in f["ternion"]


F32 = np.float32


def attention_model(fname, typ, N=4, D=8, H=2):
    """Input [N, D] -> one ternion.SSA or ternion.BSA node -> Output."""
    p = {"q_weight": np.full((D, D), 0.2, F32), "k_weight": np.full((D, D), 0.2, F32),
         "v_weight": np.full((D, D), 0.2, F32), "q_bias": np.zeros(D, F32), "heads": np.int64(H)}
    if typ == "ternion.SSA":
        p.update({"lif_tau": F32(2.0), "attn_tau": F32(2.0), "scale": F32(0.125)})
    else:
        p.update({"qk_decay": F32(0.5), "out_v_threshold": F32(0.5)})
    (Nir().node("input", "Input", shape=np.array([N, D])).node("attn", typ, **p)
     .node("output", "Output", shape=np.array([N, D]))
     .edge("input", "attn").edge("attn", "output").write(path(fname)))


def attention_layer(j):
    (a,) = [l for l in j["layers"] if l["kind"] == "attention"]
    return a


@test
def attention_ops_at_given_rates_follow_the_closed_forms():
    """`ternion map --rates`: Q, K and V fire at the hidden rate r. N = 4, D = 8, H = 2, dh = 4.
    SSA: H N^2 dh r^2 score adds, then each non-zero score (probability z = 1 - (1 - r^2)^dh)
    adds the dh r V spikes of its key. BSA: H N^2 dh r^2 ternary products, Shiftmax's 2 H N^2
    adds, H N^2 shifts and H N^2 compares, and H N^2 dh shifts and adds with analog V. On
    loihi-like each is a synaptic op (23.6 pJ); on generic-45nm an int8 add (0.03 pJ), and each
    of the H N^2 score entries is written and read (16 bits: 2 x 16 / 64 words at 10 pJ)."""
    N, D, H, r = 4, 8, 2, 0.2
    dh = D // H
    z = 1 - (1 - r * r) ** dh
    want = {"ternion.SSA": (H * N * N * dh * r * r + H * N * N * z * dh * r, 0, 0, N * D * r),
            "ternion.BSA": (H * N * N * dh * r * r + 2 * H * N * N + H * N * N * dh,
                            H * N * N + H * N * N * dh, H * N * N, N * D)}
    ops = {}
    for typ, (adds, shifts, cmps, v) in want.items():
        f = f"att_{typ[8:]}.h5"
        attention_model(f, typ, N, D, H)
        for chip, e in (("loihi-like", 23.6), ("generic-45nm", 0.03)):
            a = attention_layer(mapped(f, chip, "--rates", f"{r},{r},{r}"))
            t = a["attention"]
            assert abs(t["adds"] - adds) < 1e-9 and t["shifts"] == shifts, (typ, t)
            assert t["compares"] == cmps and t["entries_written"] == H * N * N, (typ, t)
            assert abs(t["q_spikes"] - N * D * r) < 1e-9 and abs(t["v_sent"] - v) < 1e-9
            assert abs(t["band_pj"]["ops"] - (adds + shifts + cmps) * e) < 1e-9, (typ, chip, t)
            mem = 0 if chip == "loihi-like" else H * N * N * 2 * 16 / 64 * 10
            assert abs(t["band_pj"]["memory"] - t["band_pj"]["ops"] - mem) < 1e-9, (typ, chip)
            assert t["band_pj"]["routing"] > t["band_pj"]["memory"] and t["packets"] > 0
            assert a["band_pj"]["ops"] >= t["band_pj"]["ops"]
            # The ANN: dense N x N scores and products, 2 N^2 D MACs beyond the projections.
            assert t["ann_macs"] == 2 * N * N * D and a["ann"]["macs"] == 3 * N * D * D + 2 * N * N * D
            ops[typ, chip] = a["band_pj"]["ops"]
    for chip in ("loihi-like", "generic-45nm"):
        assert ops["ternion.BSA", chip] > ops["ternion.SSA", chip], (chip, ops)


@test
def run_chip_prices_attention_from_the_runs_counters():
    """`ternion run --chip`: the attention part is the run's own counters per sample and step
    (its JSON's `attention`: score_ac + norm_ac + mix_ac adds, norm_shift + mix_shift shifts,
    norm_cmp compares; Q, K, V spikes; SSA's entries from the heads evaluated (Q K^T) V)."""
    rng = np.random.default_rng(5)
    S, T, N, D = 2, 3, 4, 8
    x = (rng.random((S, T, N, D)) < 0.5).astype(np.int8)
    spikes_file(path("att_in.h5"), x)
    bands = {}
    for typ in ("SSA", "BSA"):
        attention_model(f"att_{typ}.h5", f"ternion.{typ}", N, D, 2)
        j = json.loads(run("run", path(f"att_{typ}.h5"), "--input", path("att_in.h5"),
                           "--chip", "loihi-like", "--json", "--no-progress").stdout)
        (rec,) = [l for l in j["layers"] if l["name"] == "attn"]
        c, per = rec["attention"], S * T
        adds = (c["score_ac"] + c["norm_ac"] + c["mix_ac"]) / per
        shifts, cmps = (c["norm_shift"] + c["mix_shift"]) / per, c["norm_cmp"] / per
        t = attention_layer(j["chip"])["attention"]
        assert abs(t["adds"] - adds) < 1e-9 and abs(t["shifts"] - shifts) < 1e-9, (typ, t, c)
        assert abs(t["compares"] - cmps) < 1e-9 and abs(t["q_spikes"] - c["q_spikes"] / per) < 1e-9
        assert abs(t["band_pj"]["ops"] - (adds + shifts + cmps) * 23.6) < 1e-6, (typ, t)
        if typ == "SSA":
            entries = (c["qk_first_heads"] * N * N + c["kv_first_heads"] * 4 * 4) / per
            assert abs(t["entries_written"] - entries) < 1e-9 and t["v_sent"] == c["v_spikes"] / per
        else:
            assert t["entries_written"] == 2 * N * N and t["v_sent"] == N * D  # analog V
        bands[typ] = j["chip"]["band"]["inference_pj"]
    assert bands["SSA"] != bands["BSA"], bands


@test
def tiny_model_memory_level_on_generic_45nm():
    chain("tiny.h5", 4, [3])
    j = mapped("tiny.h5", "generic-45nm", "--rates", "0.5,0.25,0.1")
    b = j["layers"][0]["band_pj"]
    ops = 0.5 * 12 * 0.03 + 3 * (0.9 * 3.2 + 0.1 * 3.3)
    # 6 events x 8 bits / 64 = 0.75 words of the 32 KB SRAM (20 pJ); 3 updates x 2 x 16 bits
    # / 64 = 1.5 words of the 8 KB SRAM (10 pJ).
    mem = 0.75 * 20 + 1.5 * 10
    assert abs(b["ops"] - ops) < 1e-9 and abs(b["memory"] - (ops + mem)) < 1e-9, b
    levels = [b[k] for k in ("ops", "memory", "routing", "static")]
    assert levels == sorted(levels) and levels[1] > levels[0] and levels[3] > levels[2]


@test
def layers_split_by_neurons_synapse_memory_and_axons():
    # 64 -> 3000 dense: 64 synapses x 16 bits = 128 B a neuron, so 1024 neurons fill 128 KB
    # exactly: 1024, 1024, 952.
    chain("wide.h5", 64, [3000])
    j = mapped("wide.h5", "loihi-like")
    assert [k["neurons"] for k in j["layers"][0]["cores"]] == [1024, 1024, 952]
    # 100 -> 2000: 200 B a neuron, floor(131072 / 200) = 655 a core.
    chain("syn.h5", 100, [2000])
    j = mapped("syn.h5", "loihi-like")
    assert [k["neurons"] for k in j["layers"][0]["cores"]] == [655, 655, 655, 35]
    assert max(k["synapse_bytes"] for k in j["layers"][0]["cores"]) == 655 * 200
    # 8 tokens of 1000 -> 10: each row of tokens brings its 1000 inputs; 4 rows = 4000 axons
    # fit under 4096, a fifth would not (memory alone would allow 65): 40 + 40.
    chain("tok.h5", 1000, [10], in_shape=[8, 1000])
    j = mapped("tok.h5", "loihi-like")
    cores = j["layers"][0]["cores"]
    assert [k["neurons"] for k in cores] == [40, 40] and [k["axons_in"] for k in cores] == [4000] * 2


def conv(fname, cin, cout, hw):
    n = Nir().node("input", "Input", shape=np.array([cin, hw, hw]))
    n.node("conv", "Conv2d", weight=np.ones((cout, cin, 3, 3), np.float32),
           bias=np.zeros(cout, np.float32), stride=np.array([1, 1]), padding=np.array([1, 1]),
           dilation=np.array([1, 1]), groups=1, input_shape=np.array([hw, hw]))
    n.node("lif", "LIF", **lif(cout * hw * hw)).node("output", "Output")
    n.edge("input", "conv").edge("conv", "lif").edge("lif", "output")
    n.write(path(fname))


@test
def a_512x3x3_convolution_breaks_loihis_axon_limit():
    conv("c512.h5", 512, 4, 4)
    expect_error(["map", path("c512.h5"), "--chip", "loihi-like"],
                 "c512.h5: nodes/conv: one neuron needs 4608 input axons (fan-in 512 x 3 x 3); "
                 "a core takes at most 4096 (core.max_fanin)")
    conv("c448.h5", 448, 4, 4)  # 448 x 9 = 4032 fits
    j = mapped("c448.h5", "loihi-like")
    assert j["fits"] and max(k["axons_in"] for k in j["layers"][0]["cores"]) <= 4096
    assert j["layers"][0]["nodes"] == ["conv", "lif"]


@test
def too_many_neurons_names_the_cores():
    chain("big.h5", 2, [140000])
    expect_error(["map", path("big.h5"), "--chip", "loihi-like"],
                 "big.h5: nodes/l0: needs more cores than the chip has: after the 0 cores of the "
                 "layers before it, the remaining 128 hold 131072 of its 140000 units; the chip "
                 "has 128 cores (8 x 4 tiles x 4)")


@test
def bundled_models_on_both_mesh_chips():
    import os
    d = f"{ROOT}/models/bundled"
    bands = {}
    for m in ("bsa_digits", "ssa_digits"):
        for chip in ("loihi-like", "generic-45nm"):
            j = json.loads(run("map", f"{d}/{m}.h5", "--chip", chip, "--json",
                               "--rates", "0.1,0.1,0.1", "--steps", "4").stdout)
            assert j["fits"] and j["latency"]["step_ns"] > 0
            att = [l for l in j["layers"] if l["kind"] == "attention"]
            assert len(att) == 1 and att[0]["attention"]["score_entries"] == 4 * 16 * 16
            b = j["band"]["inference_pj"]
            assert b["ops"] <= b["memory"] <= b["routing"] <= b["static"]
            bands[m, chip] = b
    # Attention's internal work is priced: the two models, equal otherwise, now differ.
    for chip in ("loihi-like", "generic-45nm"):
        assert bands["bsa_digits", chip]["ops"] > bands["ssa_digits", chip]["ops"], chip
    # The Fashion-MNIST models hold 32 x 28 x 28 + 96 x 14 x 14 convolution neurons and need
    # more cores than either chip has: one error naming the node.
    for m in ("bsa_fmnist", "ssa_fmnist"):
        if os.path.exists(f"{d}/{m}.h5"):
            for chip in ("loihi-like", "generic-45nm"):
                expect_error(["map", f"{d}/{m}.h5", "--chip", chip], "needs more cores")


@test
def bad_mesh_files_and_options_are_refused():
    c = json.loads(json.dumps(LOIHI))
    c["core"]["assumed"] = ["nonsense"]
    json.dump(c, open(path("bad.json"), "w"))
    chain("tiny.h5", 4, [3])
    expect_error(["map", path("tiny.h5"), "--chip", path("bad.json")], "core.assumed")
    c = json.loads(json.dumps(LOIHI))
    del c["ann"]["mac_pj"]
    json.dump(c, open(path("bad_ann.json"), "w"))
    expect_error(["map", path("tiny.h5"), "--chip", path("bad_ann.json")], "ann.mac_pj",
                 "missing")
    expect_error(["map", path("tiny.h5"), "--chip", "loihi-like", "--steps", "0"], "--steps")
    expect_error(["map", path("tiny.h5"), "--chip", "dynapcnn", "--rates", "0.1,0.1,0.1"],
                 "--rates")


@test
def run_chip_refuses_a_model_that_does_not_fit_before_running():
    conv("rc512.h5", 512, 4, 4)
    spikes_file(path("rc512_in.h5"), np.zeros((1, 2, 512, 4, 4), np.int8))
    expect_error(["run", path("rc512.h5"), "--input", path("rc512_in.h5"), "--chip", "loihi-like",
                  "--trace", path("rc512_tr.h5"), "--no-progress"],
                 "nodes/conv: one neuron needs 4608 input axons")
    assert not __import__("os").path.exists(path("rc512_tr.h5"))
    expect_error(["run", path("rc.h5"), "--input", path("rc_in.h5"), "--chip", "no-such-chip"],
                 "option --chip")



@test
def weights_that_outgrow_the_cores_sram_spill_to_dram_on_generic_45nm():
    # 4096 -> 600 dense: a neuron's column is 4096 int8 weights = 4 KB, so the 32 KB synapse
    # SRAM of a core holds 8 neurons and the layer would need 75 cores of the 64. generic-45nm
    # declares a DRAM: the weights live there and the 600 neurons share one core.
    chain("dram.h5", 4096, [600])
    j = mapped("dram.h5", "generic-45nm", "--rates", "0.1,0.05,0.05")
    l0 = j["layers"][0]
    assert j["fits"] and j["dram_layers"] == ["l0"] and l0["weights_in_dram"]
    assert len(l0["cores"]) == 1 and l0["cores"][0]["synapse_bytes"] == 0
    assert l0["dram_weight_bytes"] == 600 * 4096  # every column once (weight_sharing)
    assert j["chip"]["dram"]["pj_per_access"] == 1300 and j["chip"]["dram"]["access_bits"] == 64
    assert any("live in DRAM" in n and "not modelled" in n for n in j["notes"]), j["notes"]
    b = l0["band_pj"]
    events = 0.1 * 4096 * 600                       # 245 760 synaptic events a step
    ops = events * 0.03 + 600 * (0.95 * 3.2 + 0.05 * 3.3)
    dram = events * 8 / 64 * 1300                   # 30 720 DRAM words of 64 bits
    state = 600 * 2 * 16 / 64 * 10                  # 300 words of the 8 KB state SRAM
    assert abs(b["ops"] - ops) < 1e-6 and abs(b["memory"] - b["ops"] - (dram + state)) < 1e-6, b
    # The ANN reads every stored weight once, from DRAM too.
    a = l0["ann"]["band_pj"]
    ann_ops = 600 * 4096 * 0.3 + 600 * 3.2
    ann_mem = 600 * 4096 * 8 / 64 * 1300 + 600 * 2 * 8 / 64 * 10
    assert abs(a["ops"] - ann_ops) < 1e-6 and abs(a["memory"] - a["ops"] - ann_mem) < 1e-6, a
    # A layer that fits keeps its weights on chip.
    chain("tiny.h5", 4, [3])
    t = mapped("tiny.h5", "generic-45nm")
    assert t["dram_layers"] == [] and not t["layers"][0]["weights_in_dram"]
    # Without the dram section the same model is refused, as before.
    c = json.loads(json.dumps(GENERIC))
    del c["dram"]
    json.dump(c, open(path("nodram.json"), "w"))
    expect_error(["map", path("dram.h5"), "--chip", path("nodram.json")],
                 "dram.h5: nodes/l0: needs more cores than the chip has")
    # Bad dram fields name the file and the field.
    for key, value, part in (("pj_per_access", -1, "dram.pj_per_access"),
                             ("access_bits", 0, "dram.access_bits"),
                             ("bandwidth", 1, "dram.bandwidth")):
        c = json.loads(json.dumps(GENERIC))
        c["dram"][key] = value
        json.dump(c, open(path("baddram.json"), "w"))
        expect_error(["map", path("tiny.h5"), "--chip", path("baddram.json")], "baddram.json", part)

finish()
