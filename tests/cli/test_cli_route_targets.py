#!/usr/bin/env python3
"""Per-synapse spike targets on a mesh chip (docs/chips.md, "Routing"), recounted here from the
documented rule, the placement JSON and the run's recorded spikes, none of it by ternion's code:

- a spike is one packet to each core that holds at least one neuron it has a synapse to: a
  convolution's input (c, y, x) reaches all output channels at the output positions whose
  window has a tap on (y, x); a pooling window's input its own channel's window; a dense Linear's
  input every output neuron; a layer's units lie on its cores in order (a convolution's position
  by position, all channels of a position together);
- core k sits on tile k // per_tile at (t % W, t // W); the host injects the input at (0, 0);
  hops |dx| + |dy|; energy spike_pj + hops at the per-direction energies;
- under `ternion run --chip` the packets and hops per sample and step are the recorded spikes'
  (each element's own targets), identical at 1 and 2 threads and under both engines;
- under `ternion map` every element fires at its rate (every rate 1 without --rates);
- tools/plot_mesh.py still reads the report (its links sum to the hops).
"""
import json
import os
import subprocess

import numpy as np

from harness import finish, path, run, test
from nirfile import Nir, spikes_file, trace_spikes

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
LOIHI = json.load(open(f"{ROOT}/hw/chips/loihi-like.json"))
C_IN, C_OUT, HW, N_OUT = 2, 4, 6, 5
PHW = HW // 2


def chip(fname):
    """loihi-like on 5 x 2 tiles of 2 cores, 10 neurons a core, memories that never bind."""
    c = json.loads(json.dumps(LOIHI))
    c["name"] = fname[:-5]
    c["mesh"].update(width=5, height=2, cores_per_tile=2)
    c["core"].update(neurons=10, synapse_memory_bytes=1 << 20, state_memory_bytes=1 << 20,
                     max_fanin=1 << 20, max_fanout=1 << 20)
    json.dump(c, open(path(fname), "w"))
    return c


def model(fname):
    """Input [2, 6, 6] -> Conv2d 2->4 3x3 pad 1 -> IF -> SumPool 2x2 -> Flatten -> Linear 36->5
    -> IF -> Output."""
    rng = np.random.default_rng(7)
    f = np.float32
    (Nir().node("input", "Input", shape=np.array([C_IN, HW, HW]))
     .node("conv", "Conv2d", weight=rng.uniform(-0.2, 1, (C_OUT, C_IN, 3, 3)).astype(f),
           bias=np.zeros(C_OUT, f), stride=np.array([1, 1]), padding=np.array([1, 1]),
           dilation=np.array([1, 1]), groups=np.array(1))
     .node("if1", "IF", r=np.ones((C_OUT, HW, HW), f), v_threshold=np.ones((C_OUT, HW, HW), f))
     .node("pool", "SumPool2d", kernel_size=np.array([2, 2]), stride=np.array([2, 2]),
           padding=np.array([0, 0]))
     .node("flat", "Flatten", start_dim=np.array(0), end_dim=np.array(-1))
     .node("fc", "Linear", weight=rng.uniform(0.1, 1, (N_OUT, C_OUT * PHW * PHW)).astype(f))
     .node("if2", "IF", r=np.ones(N_OUT, f), v_threshold=np.ones(N_OUT, f))
     .node("output", "Output", shape=np.array([N_OUT]))
     .edge("input", "conv").edge("conv", "if1").edge("if1", "pool").edge("pool", "flat")
     .edge("flat", "fc").edge("fc", "if2").edge("if2", "output")
     .write(path(fname)))


def core_of(layer, unit):
    """The core holding `unit` of a placement layer: its cores' neurons in order."""
    u = 0
    for k in layer["cores"]:
        u += k["neurons"] + k.get("score_rows", 0)
        if unit < u:
            return k["core"]
    raise AssertionError((layer["name"], unit))


def targets(j):
    """Per source node: per output element, (source core or None, destination cores)."""
    L = {l["name"]: l for l in j["layers"]}
    conv, pool, fc = L["conv"], L["pool"], L["fc"]
    out = {"input": [], "if1": [], "pool": []}
    for c in range(C_IN):
        for y in range(HW):
            for x in range(HW):
                d = {core_of(conv, (oy * HW + ox) * C_OUT + oc) for oc in range(C_OUT)
                     for oy in range(HW) for ox in range(HW)
                     if abs(oy - y) <= 1 and abs(ox - x) <= 1}
                out["input"].append((None, d))
    for c in range(C_OUT):
        for y in range(HW):
            for x in range(HW):
                src = core_of(conv, (y * HW + x) * C_OUT + c)
                out["if1"].append((src, {core_of(pool, c * PHW * PHW + (y // 2) * PHW + x // 2)}))
    all_fc = {k["core"] for k in fc["cores"]}
    for e in range(C_OUT * PHW * PHW):
        out["pool"].append((core_of(pool, e), all_fc))
    return out


def recount(c, j, spikes):
    """(packets, hops, pJ) per step from `spikes` {node: per-element spikes per step}."""
    w, per_tile, noc = c["mesh"]["width"], c["mesh"]["cores_per_tile"], c["noc"]

    def tile(k):
        t = 0 if k is None else k // per_tile
        return t % w, t // w

    pk = hops = pj = 0.0
    for node, elems in targets(j).items():
        for (src, dst), n in zip(elems, spikes[node]):
            sx, sy = tile(src)
            for d in dst:
                dx, dy = tile(d)
                hx, hy = abs(dx - sx), abs(dy - sy)
                pk += n
                hops += n * (hx + hy)
                pj += n * (noc["spike_pj"] + hx * noc["hop_pj_east_west"]
                           + hy * noc["hop_pj_north_south"])
    return pk, hops, pj


def close(a, b):
    return abs(a - b) <= 1e-9 * max(1.0, abs(b))


@test
def map_routes_each_element_to_its_own_targets_at_every_rate_1():
    c = chip("rt_chip.json")
    model("rt.h5")
    j = json.loads(run("map", path("rt.h5"), "--chip", path("rt_chip.json"), "--json").stdout)
    ones = {k: np.ones(len(v)) for k, v in targets(j).items()}
    pk, hops, pj = recount(c, j, ones)
    r = j["routing"]
    assert close(r["packets"], pk) and close(r["hops"], hops) and close(r["energy_pj"], pj), (r, pk, hops, pj)
    # Fewer than every core of the next layer: the conv's 15 cores for each of 72 inputs.
    conv_cores = len([l for l in j["layers"] if l["name"] == "conv"][0]["cores"])
    assert r["input_packets"] < 72 * conv_cores
    assert close(sum(l["packets"] for l in r["links"]), r["hops"])
    text = run("map", path("rt.h5"), "--chip", path("rt_chip.json")).stdout
    assert "routing per step:" in text


@test
def run_chip_routes_the_recorded_spikes_identically_at_any_thread_count_and_engine():
    c = chip("rt_chip.json")
    model("rt.h5")
    rng = np.random.default_rng(11)
    S, T = 3, 4
    x = (rng.random((S, T, C_IN, HW, HW)) < 0.35).astype(np.int8)
    spikes_file(path("rt_in.h5"), x)
    base = ("run", path("rt.h5"), "--input", path("rt_in.h5"), "--chip", path("rt_chip.json"),
            "--json", "--no-progress")
    j = json.loads(run(*base, "--trace", path("rt_tr.h5"), "--record", "spikes",
                       "--record-nodes", "if1,pool,if2").stdout)
    chip_j = j["chip"]
    assert chip_j["measured"]
    per = S * T
    spikes = {
        "input": (x != 0).reshape(S * T, -1).sum(0) / per,
        "if1": (trace_spikes(path("rt_tr.h5"), "if1") != 0).reshape(S * T, -1).sum(0) / per,
        "pool": (trace_spikes(path("rt_tr.h5"), "pool") != 0).reshape(S * T, -1).sum(0) / per,
    }
    pk, hops, pj = recount(c, chip_j, spikes)
    r = chip_j["routing"]
    assert close(r["packets"], pk) and close(r["hops"], hops) and close(r["energy_pj"], pj), (r, pk, hops, pj)
    assert close(sum(l["packets"] for l in r["links"]), r["hops"])
    # The same report at 2 threads and under the dense engine (timings aside).
    for extra in (("--threads", "2"), ("--engine", "dense"), ("--engine", "dense", "--threads", "2")):
        other = json.loads(run(*base, *extra).stdout)["chip"]
        assert other == chip_j, extra
    # tools/plot_mesh.py reads it.
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return
    open(path("rt_run.json"), "w").write(json.dumps(j))
    p = subprocess.run(["/usr/bin/python3", f"{ROOT}/tools/plot_mesh.py", path("rt_run.json"),
                        "-o", path("rt_mesh.png")], capture_output=True, text=True)
    assert p.returncode == 0 and os.path.getsize(path("rt_mesh.png")) > 0, p.stderr


if __name__ == "__main__":
    finish()
