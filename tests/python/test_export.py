"""ternion.export against PyTorch: spike-for-spike equality of every neuron and equal predictions.

Fixtures are small modules written here (sj_standins.py) from SpikingJelly's and Spikformer's
documented equations and structure, with seeded random weights and BatchNorm statistics
calibrated on data. Run: /usr/bin/python3 -m pytest tests/python --ternion build/ternion"""
import os
import zlib

import h5py
import numpy as np
import pytest
import torch
import torch.nn as nn

import helpers as H
import sj_standins as sj
import ternion
from ternion.exporter.converters import plif_w_for

torch.set_num_threads(1)


def node_map(report):
    """module path -> node name, for the neurons the exporter wrote."""
    return {origin: name for name, (_, origin) in report.nodes.items()}


def conv_net(gen):
    S = sj.SeqToANNContainer
    plif = sj.MultiStepParametricLIFNode(init_tau=2.5, v_reset=None)
    with torch.no_grad():
        plif.w.add_(0.37 * torch.randn((), generator=gen))  # a learned, not a round, tau
    return nn.Sequential(
        S(nn.Conv2d(2, 8, 3, padding=1), nn.BatchNorm2d(8)),
        sj.MultiStepLIFNode(tau=2.0),
        S(nn.MaxPool2d(2)),
        S(nn.Conv2d(8, 12, 3, stride=1, padding=1, bias=False), nn.BatchNorm2d(12)),
        sj.MultiStepLIFNode(tau=3.0, decay_input=False, v_reset=None),
        S(nn.AvgPool2d(2)),
        S(nn.Flatten(), nn.Linear(12 * 3 * 3, 40), nn.BatchNorm1d(40)),
        plif,
        S(nn.Linear(40, 24), nn.BatchNorm1d(24)),
        sj.MultiStepLIFNode(tau=1.7, v_reset=-0.2, v_threshold=0.8),
        S(nn.Linear(24, 16)),
        sj.MultiStepIFNode(v_reset=None, v_threshold=0.6),
        S(nn.Dropout(0.5), nn.Linear(16, 5)),
    )


def test_multistep_conv_net_spike_for_spike(tmp_path, ternion_bin):
    gen = torch.Generator().manual_seed(1)
    torch.manual_seed(1)
    net = conv_net(gen)
    H.randomize_bn(net, gen)
    T, B = 6, 16
    spikes = lambda: (torch.rand(T, B, 2, 12, 12, generator=gen) < 0.3).float()  # noqa: E731
    H.calibrate(net, [spikes() for _ in range(4)])
    x = spikes()
    out, rec = H.torch_spikes(net, x)
    model = tmp_path / "net.h5"
    rep = ternion.export(net, x, model)
    assert rep.time_first and rep.timesteps == T and rep.input_shape == (2, 12, 12)
    types = {n: t for n, (t, _) in rep.nodes.items()}
    assert types["1"] == "ternion.SJLIF" and types["7"] == "ternion.PLIF" and types["11"] == "IF"
    assert types["0.0"] == "Conv2d" and "0.1" not in types  # BatchNorm folded into the conv
    inp = tmp_path / "in.h5"
    H.write_input(inp, spikes=x.transpose(0, 1).numpy())
    js, tern = H.run_ternion(ternion_bin, model, inp, tmp_path / "trace.h5")
    assert js["timesteps"] == T and js["samples"] == B
    n = H.compare_spikes(rec, tern, node_map(rep))
    for path, s in rec.items():  # every layer is active and not saturated
        assert 0 < s.mean() < 0.9, f"{path} firing rate {s.mean()}"
    assert n > 1000
    pred = out.sum(0).argmax(1).tolist()
    assert js["predictions"] == pred


def test_single_step_network_with_timesteps(tmp_path, ternion_bin):
    # A single-step network (called once per step by the user's loop): example_input [B, ...],
    # T given to export.
    gen = torch.Generator().manual_seed(9)
    torch.manual_seed(9)
    lif = sj.LIFNode(tau=2.0, step_mode="s")
    net = nn.Sequential(nn.Linear(20, 30), nn.BatchNorm1d(30), lif, nn.Linear(30, 6))
    H.randomize_bn(net, gen)
    T, B = 7, 24
    spikes = lambda: (torch.rand(T, B, 20, generator=gen) < 0.4).float()  # noqa: E731
    H.calibrate(net, [s for _ in range(3) for s in spikes()])
    x = spikes()
    steps, out = [], 0
    sj.reset_net(net)
    with torch.no_grad():
        h = lif.register_forward_hook(lambda m, i, o: steps.append(o.clone()))
        for t in range(T):
            out = out + net(x[t])
        h.remove()
    s_torch = torch.stack(steps).transpose(0, 1).to(torch.int8).numpy()
    model = tmp_path / "single.h5"
    rep = ternion.export(net, x[0], model, timesteps=T)
    assert not rep.time_first and rep.timesteps == T and rep.input_shape == (20,)
    inp = tmp_path / "in.h5"
    H.write_input(inp, spikes=x.transpose(0, 1).numpy())
    js, tern = H.run_ternion(ternion_bin, model, inp, tmp_path / "t.h5")
    assert js["timesteps"] == T
    assert 0.05 < s_torch.mean() < 0.8
    assert np.array_equal(tern[node_map(rep)["2"]], s_torch)
    assert js["predictions"] == out.argmax(1).tolist()


def test_plif_w_gives_torch_factor():
    # torch's float32 sigmoid is not always the rounded double one; the stored w makes it so.
    gen = torch.Generator().manual_seed(3)
    w = torch.randn(2000, generator=gen) * 3
    k = w.sigmoid()
    differ = 0
    for wi, ki in zip(w.tolist(), k.tolist()):
        w2 = plif_w_for(ki)
        assert np.float32(1.0 / (1.0 + np.exp(-w2))) == np.float32(ki)
        differ += np.float32(1.0 / (1.0 + np.exp(-np.float64(np.float32(wi))))) != np.float32(ki)
    assert differ > 0  # the case the exporter has to handle does occur


def spikformer_case(tmp_path, ternion_bin, seed, fold_bn=True, tweak=None, **cfg):
    gen = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    net = sj.Spikformer(**cfg)
    if tweak:
        tweak(net)
    H.randomize_bn(net, gen)
    img = lambda b: torch.rand(b, cfg.get("in_channels", 3), 16, 16, generator=gen)  # noqa
    H.calibrate(net, [img(16) for _ in range(3)])
    x = img(12)
    out, rec = H.torch_spikes(net, x)
    model = tmp_path / "spikformer.h5"
    rep = ternion.export(net, x, model, fold_bn=fold_bn)
    assert not rep.time_first and rep.timesteps == cfg["T"] and rep.encoding == "direct"
    inp = tmp_path / "in.h5"
    H.write_input(inp, data=x.numpy())
    js, tern = H.run_ternion(ternion_bin, model, inp, tmp_path / "trace.h5")
    nodes = node_map(rep)
    # q/k/v LIFs live inside the ternion.SSA node: compare their spike totals; attn_lif is the
    # SSA node's output, compared spike for spike.
    layers = {L["name"]: L for L in js["layers"]}
    inner = {}
    for path in list(rec):
        head, _, leaf = path.rpartition(".")
        if leaf in ("q_lif", "k_lif", "v_lif"):
            s = rec.pop(path)
            aux = layers[nodes[head]]["attention"][f"{leaf[0]}_spikes"]
            assert aux == int(s.sum()), f"{path}: ternion {aux}, torch {int(s.sum())}"
            inner[path] = int(s.sum())
        elif leaf == "attn_lif":
            nodes[path] = nodes[head]
    assert min(inner.values()) > 0
    n = H.compare_spikes(rec, tern, nodes)
    assert n > 1000
    for path, s in rec.items():
        assert s.any(), f"{path} never fires"
    assert js["predictions"] == out.argmax(1).tolist()
    return rep


def test_spikformer_spike_for_spike(tmp_path, ternion_bin):
    rep = spikformer_case(tmp_path, ternion_bin, 7, embed_dims=32, num_heads=4, depths=2, T=4)
    types = [t for t, _ in rep.nodes.values()]
    assert types.count("ternion.SSA") == 2 and types.count("ternion.Tokens") == 1
    assert "ternion.TokenMean" in types


@pytest.mark.parametrize("form,v_reset", [("scale", 0.0), ("difference", 0.0),
                                          ("difference", -0.2)])
def test_attention_lifs_without_decay_input_tau3(tmp_path, ternion_bin, form, v_reset):
    # SpikingJelly's two leaks without decay_input round differently at tau 3: the scaled form
    # (MultiStepLIFNode, v * (1 - 1/tau) + x) and activation_based's eval path (LIFNode,
    # v - v / tau + x). The SSA's q/k/v and attention LIFs must each give torch's spikes, and
    # start at v_reset as SpikingJelly's membranes do.
    def make(vth):
        if form == "scale":
            return sj.MultiStepLIFNode(tau=3.0, decay_input=False, v_threshold=vth)
        return sj.LIFNode(tau=3.0, decay_input=False, v_threshold=vth, v_reset=v_reset,
                          step_mode="m")

    def tweak(net):
        for blk in net.block:
            for nm in ("q", "k", "v"):
                setattr(blk.attn, f"{nm}_lif", make(1.0))
            blk.attn.attn_lif = make(0.5)

    rep = spikformer_case(tmp_path, ternion_bin, 13, tweak=tweak, embed_dims=32, num_heads=4,
                          depths=2, T=4)
    with h5py.File(tmp_path / "spikformer.h5") as f:
        ssa = [g for g in f["node/nodes"].values() if g["type"][()] == b"ternion.SSA"]
        assert len(ssa) == 2
        for g in ssa:
            assert g["lif_leak_form"][()].decode() == form
            assert g["attn_leak_form"][()].decode() == form
            assert g["lif_tau"][()] == 3.0 and g["attn_decay_input"][()] == 0


def test_spikformer_one_head_three_blocks(tmp_path, ternion_bin):
    spikformer_case(tmp_path, ternion_bin, 11, embed_dims=16, num_heads=1, depths=3, T=3,
                    in_channels=2, num_classes=4)


def repository_spikformer(kind, seed, batch, side, **cfg):
    """The repository's DigitsSpikformer (ternion.reference) with BatchNorm statistics from three
    training batches of random `side` x `side` inputs, in eval mode; and the generator."""
    from ternion.reference import spikformer as ref

    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(seed)
    net = ref.DigitsSpikformer(kind, **cfg)
    H.randomize_bn(net, gen)
    net.train()
    with torch.no_grad():
        for _ in range(3):
            net(torch.rand(batch, 1, side, side, generator=gen))
    net.eval()
    return net, gen


def run_against_deploy_forward(tmp_path, ternion_bin, kind, net, x, *shape, **order):
    """Exports `net`, runs it on x and checks every layer's spikes and the predictions against
    ref.deploy_forward(..., *shape, **order); returns the run's layers by name, those counts and
    the predictions."""
    from ternion.reference import spikformer as ref

    model = tmp_path / f"{kind}.h5"
    rep = ternion.export(net, x, model)
    assert rep.timesteps == 4
    logits, counts, aux = ref.deploy_forward(ref.export_params(net), x, kind, *shape, **order)
    inp = tmp_path / "in.h5"
    H.write_input(inp, data=x.numpy())
    js, _ = H.run_ternion(ternion_bin, model, inp, tmp_path / "trace.h5")
    layers = {L["name"]: L for L in js["layers"]}
    for name, c in counts.items():
        assert layers[name]["spikes"] == c, name
    assert js["predictions"] == logits.argmax(1).tolist()
    return layers, counts, js["predictions"]


@pytest.mark.parametrize("kind", ["ssa", "bsa"])
def test_repository_digits_spikformer(tmp_path, ternion_bin, kind):
    net, gen = repository_spikformer(kind, 5, 32, 8, dim=32, heads=4, depth=1, T=4)
    x = torch.rand(20, 1, 8, 8, generator=gen)
    _, counts, predictions = run_against_deploy_forward(tmp_path, ternion_bin, kind, net, x, 4,
                                                        1, 4, exact_order=True)
    assert sum(counts.values()) > 100
    with torch.no_grad():
        assert predictions == net(x).argmax(1).tolist()


@pytest.mark.parametrize("kind", ["ssa", "bsa"])
def test_repository_fmnist_spikformer(tmp_path, ternion_bin, kind):
    """The Fashion-MNIST layout: 28x28, conv0 + LIF + max-pool, conv + LIF + max-pool, 49 tokens;
    PyTorch summing in ternion's order (bias last) equals ternion spike for spike."""
    net, gen = repository_spikformer(kind, 6, 16, 28, dim=16, heads=2, depth=1, T=4, stem=4,
                                     image=28, pool0=True)
    x = torch.rand(8, 1, 28, 28, generator=gen)
    layers, counts, _ = run_against_deploy_forward(tmp_path, ternion_bin, kind, net, x, 2, 1, 4,
                                                   pool0=True, ternion_order=True)
    assert layers["tokens"]["neurons"] == 49 * 16
    assert counts["pool0"] > 0 and sum(counts.values()) > 100


def test_tool_writes_the_bundled_files_through_the_package(tmp_path):
    from ternion.reference import spikformer as ref

    root = os.path.join(os.path.dirname(__file__), "..", "..", "models", "bundled")
    for kind in ("bsa", "ssa"):
        src = os.path.join(root, f"{kind}_digits.h5")
        out = tmp_path / f"{kind}.h5"
        ref.write_ternion_model(out, ref.read_params(src), kind, 64, 4, 1, 4)

        def datasets(p):
            d = {}
            with h5py.File(p, "r") as f:
                f.visititems(lambda n, o: d.__setitem__(n, o[()])
                             if isinstance(o, h5py.Dataset) else None)
            return d

        a, b = datasets(src), datasets(out)
        assert a.keys() == b.keys()
        # The writer's name: the bundled files were written when the tool was the script
        # tools/train_spikformer.py, now the module ternion.tools.train_spikformer.
        assert a.pop("node/metadata/source") in (b"tools/train_spikformer.py",
                                                  b"ternion.tools.train_spikformer")
        assert b.pop("node/metadata/source") == b"ternion.tools.train_spikformer"
        for k in a:
            assert np.array_equal(np.asarray(a[k]), np.asarray(b[k])), k


class Weird(nn.Module):
    def forward(self, x):
        return x


def test_unknown_module_names_path_and_type(tmp_path):
    net = sj.Spikformer(embed_dims=16, num_heads=2, depths=3, T=2)
    net.block[2].attn.q_lif = Weird()
    with pytest.raises(ternion.ExportError) as e:
        ternion.export(net, torch.zeros(1, 3, 16, 16), tmp_path / "x.h5")
    msg = str(e.value)
    assert "block.2.attn.q_lif" in msg and "Weird" in msg

    seq = nn.Sequential(sj.SeqToANNContainer(nn.Linear(4, 4)), sj.MultiStepLIFNode(),
                        sj.SeqToANNContainer(nn.Linear(4, 4), nn.GELU()))
    with pytest.raises(ternion.ExportError) as e:
        ternion.export(seq, torch.zeros(2, 1, 4), tmp_path / "y.h5")
    assert "2.1" in str(e.value) and "GELU" in str(e.value)
    assert not os.path.exists(tmp_path / "y.h5")


NEURONS = [
    ("lif_tau2", lambda g: sj.MultiStepLIFNode(tau=2.0)),
    ("lif_tau3_soft", lambda g: sj.MultiStepLIFNode(tau=3.0, v_reset=None)),
    ("lif_tau3_no_decay_input", lambda g: sj.MultiStepLIFNode(tau=3.0, decay_input=False)),
    ("lif_tau1.7_no_decay_input_soft",
     lambda g: sj.MultiStepLIFNode(tau=1.7, decay_input=False, v_reset=None, v_threshold=0.9)),
    ("lif_tau2.5_reset_-0.3",
     lambda g: sj.MultiStepLIFNode(tau=2.5, v_reset=-0.3, v_threshold=0.7)),
    ("lif_no_decay_input_reset_0.1",
     lambda g: sj.MultiStepLIFNode(tau=3.3, decay_input=False, v_reset=0.1)),
    ("activation_based_lif_no_decay_input",
     lambda g: sj.LIFNode(tau=3.0, decay_input=False, step_mode="m")),
    ("activation_based_lif_no_decay_input_soft",
     lambda g: sj.LIFNode(tau=3.0, decay_input=False, v_reset=None, step_mode="m")),
    ("plif", lambda g: plif(g, decay_input=True)),
    ("plif_no_decay_input_soft", lambda g: plif(g, decay_input=False, v_reset=None)),
    ("if_hard", lambda g: sj.MultiStepIFNode(v_threshold=1.3)),
    ("if_soft", lambda g: sj.MultiStepIFNode(v_reset=None, v_threshold=0.45)),
]


def plif(gen, **kw):
    """A PLIF whose w is one where torch's float32 sigmoid(w) differs from sigmoid computed in
    double and rounded (about a third of all w): storing w itself would then be wrong."""
    n = sj.MultiStepParametricLIFNode(init_tau=2.2, **kw)
    w = float(n.w) + float(torch.randn((), generator=gen))
    while True:
        wt = torch.tensor(w, dtype=torch.float32)
        if np.float32(1.0 / (1.0 + np.exp(-np.float64(wt)))) != wt.sigmoid().numpy():
            break
        w += 1e-3
    with torch.no_grad():
        n.w.copy_(wt)
    return n


@pytest.mark.parametrize("name,make", NEURONS, ids=[n for n, _ in NEURONS])
def test_neuron_membranes_bit_for_bit(tmp_path, ternion_bin, name, make):
    # The neuron alone, fed the same analog input every step (ternion's direct encoding): no
    # synaptic sum is involved, so membranes must match to the bit, not only the spikes.
    gen = torch.Generator().manual_seed(zlib.crc32(name.encode()))
    neuron = make(gen)
    net = nn.Sequential(neuron)
    T, B, n = 12, 4, 300
    x1 = torch.rand(B, n, generator=gen) * 2.4 - 0.6
    x = x1.unsqueeze(0).repeat(T, 1, 1)
    vs = []
    sj.reset_net(net)
    with torch.no_grad():
        spikes = []
        for t in range(T):  # step by step to read the membrane after each step
            spikes.append(neuron.step(x[t]))
            vs.append(neuron.v.clone())
    s_torch = torch.stack(spikes).transpose(0, 1).to(torch.int8).numpy()
    v_torch = torch.stack(vs).transpose(0, 1).numpy()
    model = tmp_path / "n.h5"
    rep = ternion.export(net, x, model)
    node = node_map(rep)["0"]
    inp = tmp_path / "in.h5"
    H.write_input(inp, data=x1.numpy())
    trace = tmp_path / "t.h5"
    H.run_ternion(ternion_bin, model, inp, trace, record="spikes,membrane")
    with h5py.File(trace, "r") as f:
        s_t = f[f"nodes/{node}/observables/spikes/data"][()]
        v_t = f[f"nodes/{node}/observables/v/data"][()]
    assert 0.02 < s_torch.mean() < 0.8
    assert np.array_equal(s_t, s_torch)
    bad = np.argwhere(v_t != v_torch)
    assert bad.size == 0, f"{len(bad)} membranes differ, first {bad[0].tolist()}: " \
        f"{v_t[tuple(bad[0])]!r} vs torch {v_torch[tuple(bad[0])]!r}"


def test_refused_modules_say_why(tmp_path):
    x = torch.zeros(3, 2, 4)
    cases = [
        # a BatchNorm with nothing to fold into
        (nn.Sequential(sj.SeqToANNContainer(nn.BatchNorm1d(4)), sj.MultiStepLIFNode()),
         ["0.0", "BatchNorm1d", "must follow a Conv or Linear"]),
        # SpikingJelly's IF starts at v_reset; ternion's IF at 0
        (nn.Sequential(sj.SeqToANNContainer(nn.Linear(4, 4)), sj.MultiStepIFNode(v_reset=0.3)),
         ["1 (", "MultiStepIFNode", "v_reset = 0.3"]),
        (nn.Sequential(sj.SeqToANNContainer(nn.Linear(4, 4)), sj.SeqToANNContainer(
            nn.Unflatten(1, (2, 2)), nn.MaxPool2d(2, ceil_mode=True))),
         ["1.0", "Unflatten"]),
    ]
    for net, words in cases:
        with pytest.raises(ternion.ExportError) as e:
            ternion.export(net, x, tmp_path / "r.h5")
        for w in words:
            assert w in str(e.value), (w, str(e.value))


def test_export_is_atomic_and_refuses_what_ternion_would(tmp_path):
    # A failure while writing (a metadata value h5py cannot store) leaves an existing model as
    # it was and no temporary behind; a timesteps ternion would refuse is refused here.
    net = nn.Sequential(sj.SeqToANNContainer(nn.Linear(4, 3)), sj.MultiStepLIFNode())
    x = torch.zeros(2, 1, 4)
    model = tmp_path / "m.h5"
    ternion.export(net, x, model)
    before = model.read_bytes()
    with pytest.raises(TypeError):
        ternion.export(net, x, model, metadata={"note": None})
    assert model.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["m.h5"]
    for bad in (-1, 0, 2.5):
        with pytest.raises(ternion.ExportError, match="timesteps"):
            ternion.export(nn.Sequential(nn.Linear(4, 3), sj.LIFNode(step_mode="s")),
                           torch.zeros(1, 4), tmp_path / "t.h5", timesteps=bad)
    assert not (tmp_path / "t.h5").exists()
    fifo = tmp_path / "f.fifo"
    os.mkfifo(fifo)
    with pytest.raises(ternion.ExportError, match="not a regular file"):
        ternion.export(net, x, fifo)


def test_export_onto_a_full_disk_is_one_error_and_the_interpreter_exits_cleanly(small_tmpfs):
    # h5py writing straight to a disk that fills kept the file half-open inside libhdf5 and
    # raised a RuntimeError; its exit handler then crashed the interpreter (SIGSEGV). The
    # exporter builds the file in memory: one ExportError naming the file, a clean exit.
    import subprocess
    import sys

    d = small_tmpfs
    (d / "filler").write_bytes(b"\0" * (1020 * 1024))  # 4 KiB left
    (d / "m.h5").write_bytes(b"old")
    code = (
        "import torch, torch.nn as nn, sj_standins as sj, ternion\n"
        "net = nn.Sequential(sj.SeqToANNContainer(nn.Linear(64, 64)), sj.MultiStepLIFNode())\n"
        "try:\n"
        f"    ternion.export(net, torch.zeros(2, 1, 64), '{d}/m.h5')\n"
        "except ternion.ExportError as e:\n"
        "    print('error:', e)\n")
    pkg = os.path.dirname(os.path.dirname(os.path.abspath(ternion.__file__)))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([pkg, os.path.dirname(__file__)]))
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert p.returncode == 0, (p.returncode, p.stderr[-2000:])
    assert f"error: {d}/m.h5: write failed (No space left on device; disk full?)" in p.stdout
    assert (d / "m.h5").read_bytes() == b"old"
    assert sorted(x.name for x in d.iterdir()) == ["filler", "m.h5"]
