"""ternion's mesh routing (`ternion run --chip`, docs/chips.md "Routing") against SANA-FE itself.

A local check, not part of the test suite (SANA-FE is not a Debian package and its build
fetches rapidyaml and booksim2 over the network): give it a SANA-FE source tree
(github.com/SLAM-Lab/SANA-FE, checked at 8951ab0) with its standalone simulator built (`sim`,
by SANA-FE's CMake; its `make install` puts it in the source tree). PyYAML is needed for the
per-tile part:

    PYTHONPATH=python /usr/bin/python3 -m ternion.tools.check_sanafe --sanafe ~/src/SANA-FE \\
        --sim ~/src/SANA-FE/build/sim --ternion build/ternion

It writes one network twice, with the same integer weights and the same placement:

- for ternion, a NIR file Input [1, 8, 8] -> Conv2d 1->2 3x3 pad 1 -> IF -> Flatten ->
  Linear 128->64 -> IF -> Linear 64->10 -> IF -> Output, run with `ternion run --chip` on
  loihi-like with 2 neurons a core (so that the 101 cores spread over all four rows of the 8 x 4
  mesh; every other value is loihi-like's);
- for SANA-FE, the same neurons as groups on its `arch/loihi.yaml` (LIF with leak_decay 1, hard
  reset to 0 and threshold 0.5: ternion's IF), one synapse per non-zero weight, each neuron
  mapped to the tile (x, y) and core where ternion placed it (SANA-FE numbers its tiles
  column by column, ternion row by row: ternion's tile 8 y + x is SANA-FE's 4 x + y); the
  input neurons replay the same spike trains from core 0.0 (tile (0, 0), where ternion's host
  injects them).

Both simulators run the spikes; SANA-FE's layers fire one time step later per layer (its soma
reads the previous step's synaptic input), so it runs 3 steps more and the spike trains are
compared shifted. It prints, side by side: spikes per layer, packets (SANA-FE's messages),
hops, the hops along x and y, the hop energy (ternion's destination-tile rule and SANA-FE's
per-tile hop counters), the per-packet latency of the hops (ternion's source-tile rule and
SANA-FE's `min_hop_delay`), the network energy each reports, and what makes them differ:
ternion adds Davies et al.'s within-tile spike (1.7 pJ, 2.1 ns) to every packet, SANA-FE its
axon-out access (111 pJ, 5.1 ns) and axon-in access (0 pJ, 16 ns); Davies et al.'s north-south
hop is 4.0 pJ, SANA-FE's loihi.yaml has 4.2 pJ. Then SANA-FE runs again on a copy of
loihi.yaml with different hop figures on every tile, to show which tile's energy and latency
each message takes. Exits 1 if a count differs.
"""
import argparse
import collections
import csv
import json
import os
import re
import subprocess
import sys
import tempfile

import h5py
import numpy as np

from ternion.tools._peers import ternion_binary

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
H = W = 8           # input map
C = 2               # conv output channels
N1, N2 = 64, 10     # Linear sizes
LAYERS = ("conv", "fc1", "fc2")


def weights(seed):
    """Non-zero integer weights (a zero weight would be no synapse in SANA-FE, while ternion
    routes a dense Linear's spike to every core of the layer)."""
    rng = np.random.default_rng(seed)
    vals = np.array([-2, -1, 1, 1, 2], np.float32)
    return (rng.choice(vals, (C, 1, 3, 3)), rng.choice(vals, (N1, C * H * W)),
            rng.choice(vals, (N2, N1)))


def write_model(fname, wc, w1, w2):
    f32 = np.float32

    def if_node(g, shape):
        g["type"] = "IF"
        g["r"] = np.ones(shape, f32)
        g["v_threshold"] = np.full(shape, 0.5, f32)
        g["v_reset"] = np.zeros(shape, f32)

    with h5py.File(fname, "w") as f:
        f["version"] = "1.0.0"
        g = f.create_group("node")
        g["type"] = "NIRGraph"
        n = g.create_group("nodes")
        n.create_group("input")["type"] = "Input"
        n["input/shape"] = np.array([1, H, W])
        c = n.create_group("conv")
        c["type"] = "Conv2d"
        c["weight"], c["bias"] = wc, np.zeros(C, f32)
        c["stride"], c["padding"] = np.array([1, 1]), np.array([1, 1])
        c["dilation"], c["groups"] = np.array([1, 1]), np.array(1)
        if_node(n.create_group("if1"), (C, H, W))
        fl = n.create_group("flat")
        fl["type"] = "Flatten"
        fl["start_dim"], fl["end_dim"] = np.array(0), np.array(-1)
        for name, w in (("fc1", w1), ("fc2", w2)):
            g2 = n.create_group(name)
            g2["type"] = "Linear"
            g2["weight"] = w
        if_node(n.create_group("if2"), (N1,))
        if_node(n.create_group("if3"), (N2,))
        n.create_group("output")["type"] = "Output"
        n["output/shape"] = np.array([N2])
        edges = [("input", "conv"), ("conv", "if1"), ("if1", "flat"), ("flat", "fc1"),
                 ("fc1", "if2"), ("if2", "fc2"), ("fc2", "if3"), ("if3", "output")]
        g["edges"] = np.array(edges, dtype=h5py.string_dtype())


def write_chip(fname, neurons_per_core):
    c = json.load(open(os.path.join(ROOT, "hw", "chips", "loihi-like.json")))
    c["name"] = "loihi-like-check-sanafe"
    c["core"]["neurons"] = neurons_per_core
    c["core"]["source"] += (f"; check_sanafe: {neurons_per_core} neurons a core, to spread a "
                            "small network over the mesh")
    json.dump(c, open(fname, "w"), indent=1)
    return c


def trace_spikes(fname, node):
    """[T, neurons] spikes of sample 0 of a ternion trace (time grid or events)."""
    with h5py.File(fname, "r") as f:
        o = f[f"nodes/{node}/observables/spikes"]
        if "data" in o:
            return np.asarray(o["data"][0]).reshape(o["data"].shape[1], -1)
        idx, t, dt = o["idx"][()], o["time"][()], float(o.attrs["dt"])
        g = np.zeros((int(round(o.attrs["t_max"] / dt)), int(o.attrs["n_neurons"])), np.int8)
        m = idx[0] >= 0
        g[np.floor(t[0][m] / dt).astype(int), idx[0][m]] = 1
        return g


def core_of(layer):
    """unit -> core of a placement layer (its cores hold consecutive units)."""
    out = []
    for k in layer["cores"]:
        out += [k["core"]] * k["neurons"]
    return out


def placement(j):
    """core of every neuron, by element index of each layer's output tensor."""
    L = {l["name"]: l for l in j["layers"]}
    conv = core_of(L["conv"])
    # a convolution's units go position by position, all channels of a position together
    conv_elem = [conv[(y * W + x) * C + c] for c in range(C) for y in range(H) for x in range(W)]
    return {"conv": conv_elem, "fc1": core_of(L["fc1"]), "fc2": core_of(L["fc2"])}


def synapses(wc, w1, w2):
    """(source group, index) -> [(target group, index, weight)], from the weights alone."""
    syn = collections.defaultdict(list)
    for c in range(C):
        for oy in range(H):
            for ox in range(W):
                for ky in range(3):
                    for kx in range(3):
                        y, x = oy - 1 + ky, ox - 1 + kx
                        if 0 <= y < H and 0 <= x < W and wc[c, 0, ky, kx] != 0:
                            syn[("in", y * W + x)].append(("conv", c * H * W + oy * W + ox,
                                                           wc[c, 0, ky, kx]))
    for o, i in zip(*np.nonzero(w1)):
        syn[("conv", int(i))].append(("fc1", int(o), w1[o, i]))
    for o, i in zip(*np.nonzero(w2)):
        syn[("fc1", int(i))].append(("fc2", int(o), w2[o, i]))
    return syn


def hw(core, width=8, height=4, per_tile=4):
    """SANA-FE's name of ternion's core `core`: the same tile (x, y) and core within it.
    ternion numbers tiles row by row (t = y W + x, docs/chips.md); SANA-FE column by column
    (src/arch.cpp: x = id / height, y = id % height)."""
    t = core // per_tile
    x, y = t % width, t // width
    return f"{x * height + y}.{core % per_tile}"


def core_of_hw(name, width=8, height=4, per_tile=4):
    """ternion's core number of SANA-FE's tile.core `name` (the inverse of hw)."""
    tid, c = (int(v) for v in name.split("."))
    x, y = tid // height, tid % height
    return (y * width + x) * per_tile + c


def write_sanafe_net(fname, syn, cores, x, extra_steps):
    """SANA-FE's YAML SNN format (snn/README.md): groups, edges, mappings."""
    sizes = {"in": H * W, "conv": C * H * W, "fc1": N1, "fc2": N2}
    lif = "soma: {threshold: 0.5, leak_decay: 1.0, reset: 0.0, reset_mode: hard}"
    out = ["network:", "  name: ternion_check", "  groups:"]
    out += ["    - name: in", "      attributes: [log_spikes: true]", "      neurons:"]
    for i in range(sizes["in"]):
        train = ", ".join(str(int(v)) for v in list(x[:, i]) + [0] * extra_steps)
        out.append(f"        - {i}: [spikes: [{train}]]")
    for g in LAYERS:
        out += [f"    - name: {g}", f"      attributes: [log_spikes: true, {lif}]",
                "      neurons:", f"        - 0..{sizes[g] - 1}: []"]
    out.append("  edges:")
    for (sg, si), tl in sorted(syn.items()):
        for tg, ti, w in tl:
            out.append(f"    - {sg}.{si} -> {tg}.{ti}: [weight: {float(w)}]")
    out.append("mappings:")
    for i in range(sizes["in"]):
        out.append(f"  - in.{i}: [core: 0.0, soma: 'loihi_inputs[{i}]']")
    for g in LAYERS:
        for i, k in enumerate(cores[g]):
            out.append(f"  - {g}.{i}: [core: {hw(k)}, soma: loihi_lif]")
    open(fname, "w").write("\n".join(out) + "\n")


def skewed_arch(src, dst, n_tiles=32):
    """loihi.yaml with a different hop energy and latency on every tile (SANA-FE tile id i:
    east-west 3.0 + 0.1 i pJ and 4.1 + 0.2 i ns, north-south 4.2 + 0.3 i pJ and 6.5 + 0.4 i
    ns), so that the destination tile's energy and the source tile's latency can be told
    apart from the others. Returns {tile id: (ew pJ, ns pJ, ew ns, ns ns)}."""
    import yaml
    a = yaml.safe_load(open(src))
    tile = a["architecture"]["tile"][0]
    tiles, fig = [], {}
    for i in range(n_tiles):
        t = json.loads(json.dumps(tile))
        t["name"] = f"skewed_tile{i}"
        ew, ns, lew, lns = 3.0 + 0.1 * i, 4.2 + 0.3 * i, 4.1 + 0.2 * i, 6.5 + 0.4 * i
        for d, e, lat in (("east", ew, lew), ("west", ew, lew), ("north", ns, lns),
                          ("south", ns, lns)):
            t["attributes"][f"energy_{d}_hop"] = e * 1e-12
            t["attributes"][f"latency_{d}_hop"] = lat * 1e-9
        tiles.append(t)
        fig[i] = (ew, ns, lew, lns)
    a["architecture"]["tile"] = tiles
    yaml.safe_dump(a, open(dst, "w"), sort_keys=False)
    return fig


def printed_ulp(text):
    """Half a unit in the last place of a number as SANA-FE prints it (%e: 6 decimals), in pJ
    when `text` is in joules: the precision of its summary."""
    mant, _, exp = text.strip().lower().partition("e")
    decimals = len(mant.split(".")[1]) if "." in mant else 0
    return 0.5 * 10 ** (int(exp or 0) - decimals) * 1e12


def read_csv(fname):
    with open(fname) as f:
        return list(csv.DictReader(f))


class Checks:
    """Each comparison's verdict, printed as "equal" or "DIFFER"; ok while all are equal."""

    def __init__(self):
        self.ok = True

    def __call__(self, what, same):
        self.ok &= bool(same)
        return "equal" if same else "DIFFER"


def parse(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sanafe", required=True, help="SANA-FE source tree (arch/loihi.yaml)")
    ap.add_argument("--sim", help="SANA-FE's standalone simulator (default: SANAFE/sim, "
                    "then SANAFE/build/sim)")
    ap.add_argument("--ternion", default="build/ternion")
    ap.add_argument("--steps", type=int, default=12)
    ap.add_argument("--rate", type=float, default=0.25, help="input spike probability")
    ap.add_argument("--seed", type=int, default=3)
    ap.add_argument("--keep", help="write the files here and keep them")
    a = ap.parse_args(argv)
    a.sim = a.sim or next((q for q in (os.path.join(a.sanafe, "sim"),
                                       os.path.join(a.sanafe, "build", "sim"))
                           if os.path.exists(q)), None)
    a.arch = os.path.join(a.sanafe, "arch", "loihi.yaml")
    if not a.sim or not os.path.exists(a.sim) or not os.path.exists(a.arch):
        sys.exit(f"{a.sanafe}: no arch/loihi.yaml or no built sim (give --sim)")
    a.dir = a.keep or tempfile.mkdtemp(prefix="check_sanafe_")
    os.makedirs(a.dir, exist_ok=True)
    return a


def ternion_side(a, ternion, p):
    """The network and its input spikes written for ternion and run with --chip: (chip report,
    the chip file, spikes per layer [T, n], cores per layer, synapses, input spikes)."""
    wc, w1, w2 = weights(a.seed)
    rng = np.random.default_rng(a.seed + 1)
    x = (rng.random((a.steps, H * W)) < a.rate).astype(np.int8)
    write_model(p("net.h5"), wc, w1, w2)
    chip = write_chip(p("chip.json"), 2)
    with h5py.File(p("in.h5"), "w") as f:
        f["spikes"] = x.reshape(1, a.steps, 1, H, W)
    r = subprocess.run([ternion, "run", p("net.h5"), "--input", p("in.h5"), "--chip",
                        p("chip.json"), "--json", "--no-progress", "--trace", p("trace.h5"),
                        "--record", "spikes", "--record-nodes", "if1,if2,if3"],
                       capture_output=True, text=True)
    if r.returncode:
        sys.exit(f"ternion run failed:\n{r.stderr}")
    tj = json.loads(r.stdout)["chip"]
    json.dump(tj, open(p("ternion_chip.json"), "w"), indent=1)
    t_spk = {"in": x, "conv": trace_spikes(p("trace.h5"), "if1"),
             "fc1": trace_spikes(p("trace.h5"), "if2"), "fc2": trace_spikes(p("trace.h5"), "if3")}
    return tj, chip, t_spk, placement(tj), synapses(wc, w1, w2), x


def run_sanafe(a, arch, net, out, steps):
    """SANA-FE's sim on `arch` and `net` for `steps`: its run summary as a dict."""
    os.makedirs(out, exist_ok=True)
    r = subprocess.run([a.sim, "-s", "-o", out, arch, net, str(steps)], capture_output=True,
                       text=True)
    if r.returncode:
        sys.exit(f"SANA-FE sim failed ({arch}):\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}")
    summary = {}
    for line in open(os.path.join(out, "run_summary.yaml")):
        k, _, v = line.strip().partition(":")
        summary[k] = v.strip().strip("'")
    return summary


def sanafe_spikes(fname):
    """Per (group, neuron): its spike count and its spike steps, from SANA-FE's spikes.csv."""
    count, steps = collections.Counter(), collections.defaultdict(set)
    for row in csv.reader(open(fname)):
        if not row or not row[1].strip().isdigit():
            continue
        g, i = row[0].rsplit(".", 1)
        count[(g, int(i))] += 1
        steps[(g, int(i))].add(int(row[1]))
    return count, steps


def compare_spikes(t_spk, s_spk, s_spk_t, check):
    """The same spikes (SANA-FE's step = ternion's step + 1 + the layer's depth)."""
    print("\nspikes per layer            ternion   SANA-FE")
    for depth_g, g in enumerate(("in",) + LAYERS):
        tt = int((t_spk[g] != 0).sum())
        ss = sum(v for (gg, _), v in s_spk.items() if gg == g)
        same = all({int(s) + 1 + depth_g for s in np.nonzero(t_spk[g][:, i])[0]}
                   == s_spk_t[(g, i)] for i in range(t_spk[g].shape[1]))
        print(f"  {g:<25} {tt:>8} {ss:>9}   trains {check('spikes ' + g, same)}")


class Mesh:
    """The chip file's tiles (row by row) and the placement's source cores."""

    def __init__(self, chip, cores):
        self.mesh, self.noc = chip["mesh"], chip["noc"]
        self.src = {("in", i): 0 for i in range(H * W)}
        for g in LAYERS:
            for i, k in enumerate(cores[g]):
                self.src[(g, i)] = k

    def tile(self, k):
        t = k // self.mesh["cores_per_tile"]
        return t % self.mesh["width"], t // self.mesh["width"]

    def dxy(self, src_neuron, dcore):
        (sx, sy), (dx, dy) = self.tile(self.src[src_neuron]), self.tile(dcore)
        return abs(dx - sx), abs(dy - sy)


def ternion_packets(syn, t_spk, cores):
    """(source neuron, destination core) -> packets, by ternion's rule, from the spikes."""
    t_pk = collections.Counter()
    for (g, i), tl in syn.items():
        n = int((t_spk[g][:, i] != 0).sum())
        for dcore in {cores[tg][ti] for tg, ti, _ in tl}:
            t_pk[((g, i), dcore)] += n
    return +t_pk


def sanafe_messages(msgs, m_):
    """SANA-FE's messages as (source neuron, destination core) -> count, and per message its
    (hops, |dx| + |dy|) and (min_hop_delay, the source-tile rule's delay)."""
    s_pk, s_hops, s_delay = collections.Counter(), [], []
    for m in msgs:
        g, i = m["src_neuron"].rsplit(".", 1)
        src, dcore = (g, int(i)), core_of_hw(m["dest_hw"])
        s_pk[(src, dcore)] += 1
        if core_of_hw(m["src_hw"]) != m_.src[src]:
            s_pk[("source core differs", m["src_hw"])] += 1
        dx, dy = m_.dxy(src, dcore)
        s_hops.append((int(m["hops"]), dx + dy))
        s_delay.append((float(m["min_hop_delay"]), (dx * m_.noc["hop_ns_east_west"]
                                                    + dy * m_.noc["hop_ns_north_south"]) * 1e-9))
    return s_pk, s_hops, s_delay


def arch_value(arch_txt, key):
    return float(re.search(key + r":\s*([0-9.eE+-]+)", arch_txt).group(1))


def compare_routing(a, tj, m_, t_pk, summary, out, check):
    """Packets, hops, hop energy and latency: ternion's report and rule against SANA-FE's."""
    T, noc = a.steps, m_.noc
    msgs = [m for m in read_csv(os.path.join(out, "messages.csv")) if m["dest_hw"] != "x.x"]
    perf = read_csv(os.path.join(out, "perf.csv"))
    s_pk, s_hops, s_delay = sanafe_messages(msgs, m_)
    hx = sum(n * m_.dxy(s, dc)[0] for (s, dc), n in t_pk.items())
    hy = sum(n * m_.dxy(s, dc)[1] for (s, dc), n in t_pk.items())
    packets = sum(t_pk.values())
    rt = tj["routing"]
    rep_packets, rep_hops, rep_pj = rt["packets"] * T, rt["hops"] * T, rt["energy_pj"] * T
    link_x = sum(lk["packets"] for lk in rt["links"] if lk["from"][1] == lk["to"][1]) * T
    link_y = sum(lk["packets"] for lk in rt["links"] if lk["from"][0] == lk["to"][0]) * T
    s_packets = int(summary["total_messages_sent"])
    s_hops_total = sum(int(r_["hops"]) for r_ in perf)
    print("\nper run (1 sample)                        ternion          SANA-FE")
    print(f"  packets (messages)               {rep_packets:>14.6g} {s_packets:>16}   "
          f"{check('packets', abs(rep_packets - s_packets) < 1e-6 and packets == s_packets)}")
    print(f"  same (neuron -> core) packets    {'':>14} {'':>16}   "
          f"{check('pairs', t_pk == s_pk)}")
    print(f"  hops                             {rep_hops:>14.6g} {s_hops_total:>16}   "
          f"{check('hops', abs(rep_hops - s_hops_total) < 1e-6)}")
    print(f"  per-message hops = |dx| + |dy|   {'':>14} {len(s_hops):>10} msgs   "
          f"{check('msg hops', all(a_ == b_ for a_, b_ in s_hops))}")
    xy_same = abs(link_x - hx) < 1e-6 and abs(link_y - hy) < 1e-6
    print(f"  hops along x / y (ternion links) {link_x:>7.6g} / {link_y:<6.6g}"
          f" recount {hx} / {hy}   {check('xy', xy_same)}")
    energy = dict(hx=hx, hy=hy, packets=packets, rep_pj=rep_pj, s_packets=s_packets)
    compare_energy(a, noc, summary, energy, check)
    lat_ok = all(abs(a_ - b_) <= 5e-6 * abs(b_) + 1e-18 for a_, b_ in s_delay)
    print(f"  per-packet hop latency (source tile): SANA-FE min_hop_delay = "
          f"dx x {noc['hop_ns_east_west']} ns + dy x {noc['hop_ns_north_south']} ns for "
          f"{len(s_delay)} messages: {check('latency', lat_ok)}; ternion's flight adds "
          f"{noc['spike_ns']} ns (within tile)")
    # The same core numbers read in SANA-FE's numbering instead (tile id t at (t / 4, t % 4)).
    naive = sum(n * (abs(dc // 16 - m_.src[sc] // 16) + abs(dc // 4 % 4 - m_.src[sc] // 4 % 4))
                for (sc, dc), n in t_pk.items())
    print(f"  (SANA-FE numbers its tiles column by column: had ternion's core k been put on "
          f"SANA-FE's tile k // 4 instead of the same (x, y), the hops would be {naive}, "
          f"not {hx + hy})")
    print(f"  SANA-FE's run: sim_time {summary['sim_time']} s, total energy "
          f"{summary.get('total', '')}; ternion's step {tj['latency']['step_ns']:.6g} ns "
          "(different timing models: see docs/chips.md)")


def compare_energy(a, noc, summary, e, check):
    """The hop energy: ternion's destination-tile figures against SANA-FE's network energy less
    its per-message axon accesses."""
    arch_txt = open(a.arch).read()
    ew_s, ns_s = (arch_value(arch_txt, k) * 1e12 for k in ("energy_east_hop", "energy_north_hop"))
    out_pj, in_pj = (arch_value(arch_txt, k) * 1e12
                     for k in ("energy_message_out", "energy_message_in"))
    net_j = float(summary["network"])
    hx, hy = e["hx"], e["hy"]
    hop_t = hx * noc["hop_pj_east_west"] + hy * noc["hop_pj_north_south"]
    hop_s = net_j * 1e12 - e["s_packets"] * (out_pj + in_pj)
    t_hops_pj = e["rep_pj"] - e["packets"] * noc["spike_pj"]
    print(f"  network energy, pJ               {e['rep_pj']:>14.6g} {net_j * 1e12:>16.6g}")
    print(f"    per packet                     {noc['spike_pj']:>11} within-tile  "
          f"{out_pj:g} axon out + {in_pj:g} axon in")
    print(f"    hops (destination tile)        {t_hops_pj:>14.6g} {hop_s:>16.6g}   ({hx} x "
          f"{noc['hop_pj_east_west']} + {hy} x {noc['hop_pj_north_south']} = {hop_t:.6g} "
          f"against {hx} x {ew_s:g} + {hy} x {ns_s:g} = {hx * ew_s + hy * ns_s:.6g})")
    check("hop pJ", abs(hop_t - t_hops_pj) < 1e-6 * max(1, hop_t)
          and abs(hx * ew_s + hy * ns_s - hop_s) <= printed_ulp(summary["network"]) + 1e-6)
    return out_pj + in_pj


def compare_skewed(a, p, s_packets, check):
    """SANA-FE again with different hop figures on every tile: which tile's energy and latency
    each message takes (ternion's rule: the destination's energy, the source's latency)."""
    fig = skewed_arch(a.arch, p("loihi_skewed.yaml"))
    sk = run_sanafe(a, p("loihi_skewed.yaml"), p("sanafe_net.yaml"), p("sanafe_skewed"),
                    a.steps + len(LAYERS))
    arch_txt = open(a.arch).read()
    axon = sum(arch_value(arch_txt, k) * 1e12 for k in ("energy_message_out", "energy_message_in"))
    rule, lat, n_msgs = {"dst": 0.0, "src": 0.0}, {"src": True, "dst": True}, 0
    for m in read_csv(p("sanafe_skewed/messages.csv")):
        if m["dest_hw"] == "x.x":
            continue
        n_msgs += 1
        st, dt = (int(m[k].split(".")[0]) for k in ("src_hw", "dest_hw"))
        hx_, hy_ = abs(st // 4 - dt // 4), abs(st % 4 - dt % 4)
        for side, t_ in (("dst", dt), ("src", st)):
            rule[side] += hx_ * fig[t_][0] + hy_ * fig[t_][1]
            lat[side] &= abs(float(m["min_hop_delay"]) - (hx_ * fig[t_][2] + hy_ * fig[t_][3])
                             * 1e-9) <= 5e-6 * float(m["min_hop_delay"]) + 1e-18
    hop_sk = float(sk["network"]) * 1e12 - n_msgs * axon
    print(f"\nper-tile hop figures (loihi.yaml, tile i: {fig[0][0]:g}+0.1i / {fig[0][1]:g}+0.3i pJ,"
          f" {fig[0][2]:g}+0.2i / {fig[0][3]:g}+0.4i ns east-west / north-south)")
    print(f"  messages {n_msgs} ({check('skew msgs', n_msgs == s_packets)} to the first run)")
    dst_same = abs(hop_sk - rule["dst"]) <= printed_ulp(sk["network"]) + 1e-6
    print(f"  hop energy, pJ: SANA-FE {hop_sk:.8g}; destination-tile rule {rule['dst']:.8g} "
          f"({check('dst pJ', dst_same)}); source-tile rule {rule['src']:.8g}")
    print(f"  min_hop_delay of every message: source-tile rule "
          f"{check('src ns', lat['src'])}; destination-tile rule "
          f"{'equal' if lat['dst'] else 'differs'}")
    print("  (ternion's route() takes the same sides: hw/chip/route.cpp; its chip files are "
          "uniform, so this part recounts the rule, not ternion's run)")


def main(argv=None):
    a = parse(argv)
    ternion = ternion_binary(a.ternion)
    p = lambda n: os.path.join(a.dir, n)  # noqa: E731
    tj, chip, t_spk, cores, syn, x = ternion_side(a, ternion, p)
    write_sanafe_net(p("sanafe_net.yaml"), syn, cores, x, len(LAYERS))
    summary = run_sanafe(a, a.arch, p("sanafe_net.yaml"), p("sanafe_out"),
                         a.steps + len(LAYERS))
    check = Checks()
    print(f"SANA-FE {a.sim} on {a.arch}; ternion {ternion}; files in {a.dir}")
    print(f"network: Input [1,{H},{W}] -> conv 1->{C} 3x3 pad 1 -> IF -> Linear "
          f"{C * H * W}->{N1} -> IF -> Linear {N1}->{N2} -> IF; {a.steps} steps, input rate "
          f"{a.rate}")
    compare_spikes(t_spk, *sanafe_spikes(p("sanafe_out/spikes.csv")), check)
    m_ = Mesh(chip, cores)
    compare_routing(a, tj, m_, ternion_packets(syn, t_spk, cores), summary, p("sanafe_out"),
                    check)
    compare_skewed(a, p, int(summary["total_messages_sent"]), check)
    print("\nresult:", "every count equal" if check.ok else "DIFFERENCES above")
    return 0 if check.ok else 1


if __name__ == "__main__":
    sys.exit(main())
