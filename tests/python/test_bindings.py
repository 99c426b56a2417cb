"""The Python bindings (ternion.load / run / profiles / attention) against the command line and
against independent numpy references: same spikes, counts and energy, bit for bit."""
import json
import os
import re
import stat
import subprocess
import sys

import h5py
import numpy as np
import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "cli"))
from nirfile import Nir, spikes_file, trace_spikes  # noqa: E402

ternion = pytest.importorskip("ternion")


@pytest.fixture(scope="module")
def core(request):
    if not request.config.getoption("--package"):
        pytest.skip("no built package given (--package <build>/python)")
    try:
        import ternion._core  # noqa: F401
    except ImportError as e:
        pytest.fail(f"the built package has no extension module: {e}")
    return ternion


def cli_json(ternion_bin, *args):
    r = subprocess.run([ternion_bin, "run", *args, "--json", "--no-progress"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def without_timing(doc):
    doc = dict(doc)
    doc.pop("timing", None)
    return doc


@pytest.mark.parametrize("count", ["exact", "neurobench", "syops", "paper"])
def test_result_fields_equal_the_cli_document(core, ternion_bin, count):
    # Result's fields come from the typed report, not from the JSON document: each must equal
    # what the command line's document says, under every counting convention.
    model = core.load_bundled("ssa_digits")
    cli = cli_json(ternion_bin, model.path, "--input", model.default_input, "--count", count,
                   "--samples", "40", "--node-times")
    r = core.run(model, count=count, samples=40, node_times=True)
    layers = cli["layers"]
    assert r.counts["layers"] == {l["name"]: dict(l["ops"], spikes=l["spikes"]) for l in layers}
    assert r.counts["totals"] == cli["totals"]["ops"]
    assert r.counts["per_inference"] == cli["per_inference"]["ops"]
    for k in ("neurobench", "syops", "paper"):
        assert r.counts[k] == cli.get(k), k
    pi = cli["per_inference"]
    assert r.energy == {"profile": cli["profile"]["name"], "count_mode": count,
                        "per_inference_pj": pi["energy_pj"], "by_kind_pj": pi["energy_by_kind_pj"],
                        "layers": {l["name"]: l.get("energy_pj", 0.0) for l in layers},
                        "ann_pj": cli["ann_equivalent"]["energy_pj"],
                        "ann_ratio": cli["ann_equivalent"]["energy_ratio"],
                        "ann_pj_one_pass": cli["ann_equivalent"]["one_pass"]["energy_pj"],
                        "ann_ratio_one_pass": cli["ann_equivalent"]["one_pass"]["energy_ratio"],
                        "exact_pj": cli["headline"]["exact_energy_pj"],
                        "headline": cli["headline"]["text"],
                        "which_number": cli["headline"]["which_number"]}
    assert set(r.node_seconds) == {n["name"] for n in cli["timing"]["nodes"]}
    assert list(r.predictions) == cli["predictions"] and r.accuracy == cli["accuracy"]


@pytest.mark.parametrize("name", ["bsa_digits", "ssa_digits"])
def test_bundled_equals_cli(core, ternion_bin, tmp_path, name):
    model = core.load_bundled(name)
    trace = tmp_path / "t.h5"
    cli = cli_json(ternion_bin, model.path, "--input", model.default_input, "--threads", "2",
                   "--trace", str(trace), "--spike-format", "grid")
    r = core.run(model, threads=2)
    assert r.samples == 360 and r.timesteps == 4
    # The whole report, counts and energy included, equals the command line's.
    py_doc, cli_doc = without_timing(r.report), without_timing(cli)
    cli_doc.pop("trace")
    assert py_doc == cli_doc
    assert r.accuracy == cli["accuracy"] and r.accuracy > 0.9
    assert r.energy["per_inference_pj"] == cli["per_inference"]["energy_pj"]
    assert list(r.predictions) == cli["predictions"]
    assert r.outputs.shape == (360, 10)
    assert (r.outputs.argmax(1) == r.predictions).all()
    # Spikes recorded in memory equal the trace file's, for every spiking node.
    layers = {l["name"]: l for l in cli["layers"]}
    assert set(r.spikes) == {n for n, l in layers.items() if l["firing_rate"] is not None}
    for node, spk in r.spikes.items():
        assert spk.dtype == np.int8 and spk.shape[:2] == (360, 4)
        assert not spk.flags.writeable
        grid = trace_spikes(str(trace), node)
        assert np.array_equal(spk.reshape(grid.shape), grid), node
        assert int(np.count_nonzero(spk)) == layers[node]["spikes"], node


def test_bundled_fashion_mnist_equals_cli(core, ternion_bin):
    """The default run's model from Python, on the first 200 Fashion-MNIST test images."""
    model = core.load_bundled("bsa_fmnist")
    assert model.default_input.endswith("t10k-images-idx3-ubyte.gz")
    r = core.run(model, samples=200, threads=2)
    cli = cli_json(ternion_bin, "--samples", "200", "--threads", "2")
    cli.pop("compare")
    assert without_timing(r.report) == without_timing(cli)
    ref = json.load(open(os.path.join(os.path.dirname(model.path), "fmnist_reference.json")))
    assert list(r.predictions) == ref["bsa"]["predictions"][:200]


def leaky(beta, thr, dt=1e-3):
    """snnTorch Leaky as its NIR exporter writes it (tau = dt / (1 - beta), r = tau / dt)."""
    tau = (dt / (1 - beta.astype(np.float64))).astype(np.float32)
    return dict(tau=tau, r=(tau / dt).astype(np.float32), v_leak=np.zeros_like(beta),
                v_threshold=np.full(beta.shape, thr, np.float32), v_reset=np.zeros_like(beta))


@pytest.fixture(scope="module")
def lif_net(tmp_path_factory):
    """A NIR Linear -> LIF network whose spikes a numpy loop of the documented equations gives."""
    rng = np.random.default_rng(7)
    n_in, n_out, T, S = 12, 5, 20, 6
    # Dyadic weights: every sum is exact in float32, so the reference is exact too.
    w = (rng.integers(-8, 9, (n_out, n_in)) / 8).astype(np.float32)
    beta = np.full(n_out, 0.75, np.float32)
    d = tmp_path_factory.mktemp("lif")
    (Nir().node("input", "Input", shape=np.array([n_in]))
     .node("fc", "Linear", weight=w).node("lif", "LIF", **leaky(beta, 1.0))
     .node("output", "Output", shape=np.array([n_out]))
     .edge("input", "fc").edge("fc", "lif").edge("lif", "output").write(str(d / "lif.h5")))
    x = (rng.random((S, T, n_in)) < 0.35).astype(np.int8)
    labels = np.arange(S) % n_out
    spikes_file(str(d / "in.h5"), x, labels)
    ref = np.zeros((S, T, n_out), np.int8)
    for s in range(S):
        mem = np.zeros(n_out, np.float32)
        for t in range(T):
            mem = beta * mem + w @ x[s, t].astype(np.float32)
            spk = mem > 1.0
            ref[s, t] = spk
            mem = np.where(spk, np.float32(0), mem).astype(np.float32)
    return dict(model=str(d / "lif.h5"), input=str(d / "in.h5"), x=x, labels=labels, ref=ref,
                dt=1e-3)


def test_nir_lif_arrays_equal_reference_and_cli(core, ternion_bin, lif_net):
    m = core.load(lif_net["model"], dt=lif_net["dt"], discretization="euler")
    r = core.run(m, lif_net["x"], lif_net["labels"], threads=1)
    assert np.array_equal(r.spikes["lif"], lif_net["ref"])
    cli = cli_json(ternion_bin, lif_net["model"], "--input", lif_net["input"], "--dt", "0.001",
                   "--discretization", "euler", "--threads", "1")
    assert r.counts["layers"] == {l["name"]: dict(l["ops"], spikes=l["spikes"])
                                  for l in cli["layers"]}
    assert r.energy["per_inference_pj"] == cli["per_inference"]["energy_pj"]
    assert list(r.predictions) == cli["predictions"]
    # Every input form gives the same run: time-first, bool, float spikes, a file path.
    for x, kw in [(np.swapaxes(lif_net["x"], 0, 1).copy(), dict(layout="TS")),
                  (lif_net["x"].astype(bool), {}),
                  (lif_net["x"].astype(np.float32), dict(kind="spikes"))]:
        r2 = core.run(m, x, lif_net["labels"], **kw)
        assert np.array_equal(r2.spikes["lif"], lif_net["ref"]), kw
    r3 = core.run(m, lif_net["input"], threads=2)
    assert np.array_equal(r3.spikes["lif"], lif_net["ref"])
    assert r3.counts == r.counts
    assert r3.node_seconds is None
    r4 = core.run(m, lif_net["input"], threads=2, node_times=True)
    assert r4.counts == r.counts and set(r4.node_seconds) == set(r.counts["layers"])


def test_model_built_in_python_equals_the_file(core, lif_net):
    """ternion.build from dicts: the same nodes as lif.h5, the same spikes and counts."""
    with h5py.File(lif_net["model"]) as f:
        nodes = {}
        for name in ("input", "fc", "lif", "output"):
            g = f["node/nodes"][name]
            nodes[name] = {k: (g[k][()].decode() if k == "type" else g[k][()]) for k in g}
    edges = [("input", "fc"), ("fc", "lif"), ("lif", "output")]
    m = core.build(nodes, edges, dt=lif_net["dt"], discretization="euler", name="lif in memory")
    r = core.run(m, lif_net["x"], lif_net["labels"], threads=1)
    assert np.array_equal(r.spikes["lif"], lif_net["ref"])
    f = core.run(core.load(lif_net["model"], dt=lif_net["dt"], discretization="euler"),
                 lif_net["x"], lif_net["labels"], threads=1)
    assert r.counts == f.counts and r.energy["per_inference_pj"] == f.energy["per_inference_pj"]
    # metadata the file would carry: steps for analog input
    m5 = core.build(nodes, edges, dt=lif_net["dt"], discretization="euler", timesteps=5)
    assert core.run(m5, lif_net["x"][:, 0, :].astype(np.float32)).spikes["lif"].shape[1] == 5
    # errors name the model and the node's parameter, as for a file
    bad = dict(nodes, lif=dict(nodes["lif"], v_threshold=np.ones(3, np.float32)))
    with pytest.raises(core.Error, match=r"lif in memory: nodes/lif/"):
        core.build(bad, edges, name="lif in memory")
    with pytest.raises(core.Error, match=r"nodes/fc/weight: is neither a string nor numeric"):
        core.build(dict(nodes, fc={"type": "Linear", "weight": object()}), edges)
    with pytest.raises(core.Error, match=r"nodes/fc/type: missing"):
        core.build(dict(nodes, fc={"weight": nodes["fc"]["weight"]}), edges)
    with pytest.raises(core.Error, match=r"discretization"):
        core.build(nodes, edges, discretization="rk4")


def test_membrane_and_analog_input(core, lif_net):
    m = core.load(lif_net["model"], dt=lif_net["dt"], discretization="euler")
    r = core.run(m, lif_net["x"], record=["spikes", "membrane"], record_nodes=["lif"])
    assert set(r.spikes) == {"lif"} and r.membrane["lif"].dtype == np.float32
    v = r.membrane["lif"]
    # After a spike the membrane is reset to zero; below threshold it stays at most 1.
    assert np.all(v[r.spikes["lif"] == 1] == 0) and np.all(v <= 1.0)
    # Analog data, direct coding for T steps, equals the same values replayed as spikes.
    x0 = lif_net["x"][:, 0, :].astype(np.float32)
    a = core.run(m, x0, timesteps=5)
    s = core.run(m, np.repeat(lif_net["x"][:, :1, :], 5, axis=1))
    assert np.array_equal(a.spikes["lif"], s.spikes["lif"])


def test_errors_carry_the_cli_messages(core, ternion_bin, lif_net, tmp_path):
    m = core.load(lif_net["model"])
    bad = lif_net["x"].copy()
    bad[1, 2, 3] = 2
    with pytest.raises(core.Error, match=r"value 2 at sample 1, step 2, element 3 is not -1, 0 or 1"):
        core.run(m, bad)
    with pytest.raises(core.Error, match=r"sample shape \[11\] does not match"):
        core.run(m, lif_net["x"][:, :, :11])
    with pytest.raises(core.Error, match=r"option --profile|unknown profile"):
        core.run(m, lif_net["x"], profile="no-such-profile")
    with pytest.raises(core.Error, match=r"option --threads"):
        core.run(m, lif_net["x"], threads=0)
    with pytest.raises(core.Error, match=r"label 9 at index 0 is outside \[0, 5\)"):
        core.run(m, lif_net["x"], np.full(6, 9))
    # Integers out of their range, and non-integral labels, are ternion.Error naming them.
    with pytest.raises(core.Error, match=r"option --seed: must be between 0 and"):
        core.run(m, lif_net["x"], seed=2 ** 70)
    with pytest.raises(core.Error, match=r"option --threads: must be an integer"):
        core.run(m, lif_net["x"], threads="two")
    with pytest.raises(core.Error, match=r"option --max-trace-bytes: must be between 0 and 9223372036854775807, got -1"):
        core.run(m, lif_net["x"], max_record_bytes=-1)
    with pytest.raises(core.Error, match=r"<labels>: labels must be integers"):
        core.run(m, lif_net["x"], np.full(6, 1.5))
    # A misspelt spike format is refused, as --spike-format is, not taken as "grid".
    with pytest.raises(core.Error, match=r"option --spike-format: must be events or grid, got 'evnts'"):
        core.run(m, lif_net["x"], record=["spikes"], spike_format="evnts")
    missing = str(tmp_path / "missing.h5")
    with pytest.raises(core.Error, match=re.escape(missing)):
        core.load(missing)
    # The same message as the command line prints after "ternion: error: ".
    with pytest.raises(core.Error) as e:
        core.run(m, lif_net["input"], samples=100)
    cli = subprocess.run([ternion_bin, "run", lif_net["model"], "--input", lif_net["input"],
                          "--samples", "100"], capture_output=True, text=True)
    assert cli.returncode == 1 and str(e.value) in cli.stderr
    # A trace may not overwrite an input.
    with pytest.raises(core.Error, match="refusing to overwrite an input"):
        core.run(m, lif_net["input"], trace=lif_net["input"])


# One option table serves `ternion run` and `ternion.run`: the same bad value gets the same
# message from both, whatever the option's type.
BAD_OPTIONS = [("threads", "0"), ("threads", "two"), ("seed", "-3"), ("timesteps", "0"),
               ("engine", "quantum"), ("count", "roughly"), ("arith", "int8"),
               ("spike-format", "morse"), ("record-samples", "3-1"), ("max-memory", "8X"),
               ("layout", "XY"), ("first", "1.5"), ("encoding", "morse")]


@pytest.mark.parametrize("option,value", BAD_OPTIONS)
def test_bad_option_values_get_the_cli_message(core, ternion_bin, lif_net, tmp_path, option,
                                               value):
    p = subprocess.run([ternion_bin, "run", lif_net["model"], "--input", lif_net["input"],
                        "--no-progress", "--trace", str(tmp_path / "t.h5"), f"--{option}", value],
                       capture_output=True, text=True)
    assert p.returncode == 1, p.stderr
    cli = p.stderr.strip().removeprefix("ternion: error: ")
    assert cli.startswith(f"option --{option}: "), cli
    keyword = {"max-trace-bytes": "max_record_bytes"}.get(option, option.replace("-", "_"))
    with pytest.raises(core.Error) as e:
        core.run(lif_net["model"], lif_net["input"], trace=str(tmp_path / "p.h5"),
                 **{keyword: value})
    assert str(e.value) == cli
    assert not (tmp_path / "t.h5").exists() and not (tmp_path / "p.h5").exists()


def test_every_shared_option_is_a_keyword(core):
    """Python's run() and load() take every option of the shared tables, under its name."""
    import inspect
    run_kw = set(inspect.signature(core.run).parameters)
    assert set(core._core.option_names("run")) <= run_kw, set(core._core.option_names("run")) - run_kw
    load_kw = set(inspect.signature(core.load).parameters)
    assert set(core._core.option_names("load")) <= load_kw
    assert {"dt", "from_", "ignore_unknown", "no_weight_codebook"} <= load_kw


def test_python_reads_a_file_with_the_layout_given(core, lif_net, tmp_path):
    """layout applies to an input file too, as --layout does (it was used for arrays only)."""
    ts = str(tmp_path / "ts.h5")
    spikes_file(ts, np.ascontiguousarray(lif_net["x"].transpose(1, 0, 2)), lif_net["labels"])
    r = core.run(lif_net["model"], ts, layout="TS", record=["spikes"])
    assert np.array_equal(r.spikes["lif"], lif_net["ref"])


@pytest.fixture(scope="module")
def two_streams(tmp_path_factory):
    """Input a (spikes) -> Linear -> LIF la, Input b (analog) -> Linear -> LIF lb, la + lb ->
    LIF lo: spikes from a numpy loop of the documented update, and its input file."""
    rng = np.random.default_rng(19)
    S, T, na, nb, nh = 5, 9, 6, 3, 4
    wa = (rng.integers(-8, 9, (nh, na)) / 4).astype(np.float32)
    wb = (rng.integers(-8, 9, (nh, nb)) / 4).astype(np.float32)
    betas = dict(la=0.75, lb=0.5, lo=0.875)
    d = tmp_path_factory.mktemp("two")
    n = Nir().node("a", "Input", shape=np.array([na])).node("b", "Input", shape=np.array([nb]))
    for k, beta in betas.items():
        n.node(k, "LIF", **leaky(np.full(nh, beta, np.float32), 0.5))
    (n.node("fa", "Linear", weight=wa).node("fb", "Linear", weight=wb)
     .node("join", "ternion.Identity").node("output", "Output", shape=np.array([nh]))
     .edge("a", "fa").edge("fa", "la").edge("b", "fb").edge("fb", "lb").edge("la", "join")
     .edge("lb", "join").edge("join", "lo").edge("lo", "output").write(str(d / "two.h5")))
    xa = (rng.random((S, T, na)) < 0.4).astype(np.int8)
    xb = (rng.integers(-2, 5, (S, nb)) / 8).astype(np.float32)
    labels = np.arange(S) % nh
    with h5py.File(d / "in.h5", "w") as f:
        f["inputs/a/spikes"], f["inputs/b/data"], f["labels"] = xa, xb, labels
    ref = {k: np.zeros((S, T, nh), np.int8) for k in betas}
    for s in range(S):
        mem = {k: np.zeros(nh, np.float32) for k in betas}
        for t in range(T):
            drive = dict(la=wa @ xa[s, t].astype(np.float32), lb=wb @ xb[s])
            drive["lo"] = None
            for k in ("la", "lb", "lo"):
                i = drive[k] if k != "lo" else (ref["la"][s, t] + ref["lb"][s, t]).astype(np.float32)
                mem[k] = (np.float32(betas[k]) * mem[k] + i).astype(np.float32)
                ref[k][s, t] = mem[k] > 0.5
                mem[k] = np.where(ref[k][s, t] > 0, np.float32(0), mem[k]).astype(np.float32)
    assert all(r.sum() > 5 for r in ref.values())
    return dict(model=str(d / "two.h5"), input=str(d / "in.h5"), xa=xa, xb=xb, labels=labels,
                ref=ref)


def test_two_inputs_as_a_dict_equal_numpy_and_the_cli(core, ternion_bin, two_streams):
    t = two_streams
    m = core.load(t["model"], dt=1e-3)
    r = core.run(m, {"b": t["xb"], "a": t["xa"]}, t["labels"], threads=2)
    for k, ref in t["ref"].items():
        assert np.array_equal(r.spikes[k], ref), k
    cli = cli_json(ternion_bin, t["model"], "--input", t["input"], "--dt", "0.001", "--threads", "1")
    py_doc, cli_doc = without_timing(r.report), without_timing(cli)
    for doc in (py_doc, cli_doc):
        doc.pop("input"), doc.pop("threads")
    assert py_doc == cli_doc
    assert r.accuracy == cli["accuracy"]
    # The file through Python, time-first spikes, bool spikes: the same spikes.
    for x, kw in [(t["input"], {}),
                  ({"a": np.swapaxes(t["xa"], 0, 1).copy(), "b": t["xb"]}, dict(layout="TS")),
                  ({"a": t["xa"].astype(bool), "b": t["xb"].astype(np.float64)}, {}),
                  ({"a": t["xa"].astype(np.float32), "b": t["xb"]}, dict(kind={"a": "spikes"}))]:
        r2 = core.run(m, x, t["labels"], **kw)
        assert np.array_equal(r2.spikes["lo"], t["ref"]["lo"]), kw
        assert r2.counts == r.counts


def test_two_inputs_dict_errors(core, two_streams):
    t = two_streams
    m = core.load(t["model"], dt=1e-3)
    with pytest.raises(core.Error, match=re.escape("<array>: /inputs/b: missing: no array for "
                                                   "the model's Input node 'b'")):
        core.run(m, {"a": t["xa"]})
    with pytest.raises(core.Error, match=re.escape("/inputs/c: names no Input node of the "
                                                   "model (a, b)")):
        core.run(m, {"a": t["xa"], "b": t["xb"], "c": t["xb"]})
    with pytest.raises(core.Error, match=re.escape("<array>: /inputs/b/data: has 4 samples, "
                                                   "/inputs/a/spikes has 5")):
        core.run(m, {"a": t["xa"], "b": t["xb"][:4]})
    with pytest.raises(core.Error, match=re.escape("<array>: /inputs/b/data: sample shape [2] "
                                                   "does not match the model's Input shape [3] "
                                                   "of Input node 'b'")):
        core.run(m, {"a": t["xa"], "b": t["xb"][:, :2]})
    bad = t["xa"].copy()
    bad[1, 2, 3] = 2
    with pytest.raises(core.Error, match=re.escape("<array>: /inputs/a/spikes: value 2 at "
                                                   "sample 1, step 2")):
        core.run(m, {"a": bad, "b": t["xb"]})
    with pytest.raises(core.Error, match=re.escape("one array for a model with 2 Input nodes")):
        core.run(m, t["xa"])


def test_trace_from_python_equals_cli(core, ternion_bin, lif_net, tmp_path):
    m = core.load(lif_net["model"], dt=1e-3)
    core.run(m, lif_net["input"], trace=str(tmp_path / "py.h5"), record=["spikes", "ops"])
    subprocess.run([ternion_bin, "run", lif_net["model"], "--input", lif_net["input"],
                    "--dt", "0.001", "--trace", str(tmp_path / "cli.h5"), "--record",
                    "spikes,ops", "--no-progress"], check=True, capture_output=True)
    with h5py.File(tmp_path / "py.h5") as a, h5py.File(tmp_path / "cli.h5") as b:
        def walk(g, out, p=""):
            for k, v in g.items():
                if isinstance(v, h5py.Dataset):
                    out[p + k] = v[()]
                else:
                    walk(v, out, p + k + "/")
            return out
        da, db = walk(a, {}), walk(b, {})
        assert da.keys() == db.keys()
        for k in da:
            assert np.array_equal(da[k], db[k]), k


def test_profiles_and_attention(core, ternion_bin, tmp_path):
    p = core.profiles()
    assert "horowitz45-fp32" in p and "Horowitz" in core.describe_profile("horowitz45-fp32")
    rng = np.random.default_rng(3)
    B, N, D, H = 2, 7, 8, 2
    w = {}
    for n in "QKVO":
        w[f"W_{n}"] = rng.standard_normal((D, D)).astype(np.float32) / np.sqrt(D)
        w[f"b_{n}"] = rng.standard_normal(D).astype(np.float32) * 0.1
    x = rng.standard_normal((B, N, D)).astype(np.float32)
    r = core.attention("softmax", w, x, heads=H)
    # Independent reference: multi-head softmax attention in float64.
    for b in range(B):
        q, k, v = (x[b].astype(np.float64) @ w[f"W_{n}"] + w[f"b_{n}"] for n in "QKV")
        o = np.zeros_like(q)
        for h in range(H):
            s = slice(h * D // H, (h + 1) * D // H)
            z = q[:, s] @ k[:, s].T / np.sqrt(D // H)
            e = np.exp(z - z.max(1, keepdims=True))
            o[:, s] = (e / e.sum(1, keepdims=True)) @ v[:, s]
        assert np.allclose(r["y"][b], o @ w["W_O"] + w["b_O"], atol=1e-5)
    # The command line on the same weights gives the same y, ops and energy.
    with h5py.File(tmp_path / "w.h5", "w") as f:
        for k, v in w.items():
            f[k] = v
        f["heads"] = H
    with h5py.File(tmp_path / "x.h5", "w") as f:
        f["x"] = x
    out = subprocess.run([ternion_bin, "attention", "--kind", "softmax", "--weights",
                          str(tmp_path / "w.h5"), "--input", str(tmp_path / "x.h5"), "--output",
                          str(tmp_path / "y.h5"), "--json"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    cli = json.loads(out.stdout)
    with h5py.File(tmp_path / "y.h5") as f:
        assert np.array_equal(f["y"][()], r["y"])
    assert r["ops"] == cli["ops"]
    assert r["energy"]["total_pj"] == cli["energy"]["total_pj"]
    # The inputs the command line refuses, Python refuses with the same words (one set of checks):
    # no tokens (it crashed before), NaN values, a wrong width.
    with pytest.raises(core.Error, match=r"x: empty: shape \[2, 0, 8\]"):
        core.attention("softmax", w, np.zeros((B, 0, D), np.float32), heads=H)
    bad = x.copy()
    bad[1, 3, 2] = np.nan
    with pytest.raises(core.Error, match=r"x: contains NaN or Inf \(sample 1\)"):
        core.attention("softmax", w, bad, heads=H)
    with pytest.raises(core.Error, match=r"has D = 6 but the softmax weights expect D = 8"):
        core.attention("softmax", w, x[:, :, :6], heads=H)
    with h5py.File(tmp_path / "x0.h5", "w") as f:
        f["x"] = np.zeros((B, 0, D), np.float32)
    out = subprocess.run([ternion_bin, "attention", "--kind", "softmax", "--weights",
                          str(tmp_path / "w.h5"), "--input", str(tmp_path / "x0.h5"), "--output",
                          str(tmp_path / "y0.h5")], capture_output=True, text=True)
    assert out.returncode == 1 and "/x: empty: shape [2, 0, 8]" in out.stderr, out.stderr


def test_python_guide_runs(core, tmp_path, monkeypatch):
    """Every ```python block of docs/python.md, run in order as one script."""
    doc = os.path.join(os.path.dirname(__file__), "..", "..", "docs", "python.md")
    blocks = re.findall(r"```python\n(.*?)```", open(doc).read(), re.S)
    assert len(blocks) >= 3
    monkeypatch.chdir(tmp_path)
    exec(compile("\n".join(blocks), "docs/python.md", "exec"), {})


def test_encoding_per_input_node(core, ternion_bin, two_streams, tmp_path):
    """encoding={"a": "latency"}: a's analog values latency-coded (docs/inputs.md: one spike of
    sign(x) at step round((1 - |x|) (T - 1))), b direct; the same spikes as a's closed-form
    latency spikes given as spikes, and as the CLI's --encoding a=latency."""
    t = two_streams
    m = core.load(t["model"], dt=1e-3)
    S, T, na = t["xa"].shape
    xa = (np.arange(S * na).reshape(S, na) % 9 / 8 - 0.5).astype(np.float32)  # 0 never fires
    a = np.abs(xa)
    step = np.floor((np.float32(1) - a) * np.float32(T - 1) + np.float32(0.5)).astype(int)
    spikes = np.stack([np.where((a > 0) & (step == k), np.sign(xa), 0) for k in range(T)], 1)
    assert np.abs(spikes).sum() == (xa != 0).sum()
    want = core.run(m, {"a": spikes.astype(np.int8), "b": t["xb"]})
    for enc in ({"a": "latency"}, {None: "latency", "b": "direct"}):
        got = core.run(m, {"a": xa, "b": t["xb"]}, encoding=enc, timesteps=T)
        for k in ("la", "lb", "lo"):
            assert np.array_equal(got.spikes[k], want.spikes[k]), (enc, k)
        assert got.report["input_encodings"] == {"a": "latency", "b": "direct"}
    assert want.report["input_encodings"] == {"a": "spikes", "b": "direct"}
    with h5py.File(tmp_path / "analog.h5", "w") as f:
        f["inputs/a/data"], f["inputs/b/data"] = xa, t["xb"]
    cli = cli_json(ternion_bin, t["model"], "--input", str(tmp_path / "analog.h5"), "--dt", "0.001",
                   "-T", str(T), "--encoding", "a=latency")
    assert cli["layers"] == got.report["layers"]
    with pytest.raises(core.Error, match=re.escape("option --encoding: 'c' is not an Input node "
                                                   "(Input nodes: a, b)")):
        core.run(m, {"a": xa, "b": t["xb"]}, encoding={"c": "poisson"}, timesteps=T)


def test_trace_never_replaces_a_fifo(core, tmp_path):
    # As the CLI: an output replaces only a regular file; the session goes on after the error.
    fifo = tmp_path / "out.fifo"
    os.mkfifo(fifo)
    model = core.load_bundled("bsa_digits")
    with pytest.raises(core.Error, match=r"option --trace: .* is a FIFO, not a regular file"):
        core.run(model, samples=2, trace=str(fifo))
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert core.run(model, samples=2).samples == 2


def test_full_disk_raises_and_the_session_goes_on(core, small_tmpfs):
    # A trace onto a full file system: ternion.Error naming the output, then the interpreter
    # goes on and exits cleanly (libhdf5's exit handler used to crash on the unflushed file).
    d = small_tmpfs
    code = (
        "import ternion\n"
        "m = ternion.load_bundled('bsa_fmnist')\n"
        "try:\n"
        f"    ternion.run(m, samples=50, record=['spikes', 'membrane'], trace='{d}/t.h5')\n"
        "    print('no error')\n"
        "except ternion.Error as e:\n"
        "    print('error:', e)\n"
        "print('goes on', ternion.run(m, samples=3).samples)\n")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       env=dict(os.environ, PYTHONPATH=os.path.dirname(core.__path__[0])))
    assert p.returncode == 0, (p.returncode, p.stderr)
    assert f"error: {d}/t.h5: " in p.stdout and "disk full" in p.stdout, p.stdout
    assert "goes on 3" in p.stdout
    assert not list(d.iterdir())
    # A disk all but full: libhdf5 used to keep the file whose flush failed half-open, and
    # its exit handler then crashed the interpreter (SIGSEGV) at these sizes.
    for free_kib in (4, 16, 256):
        with open(d / "filler", "wb") as f:
            f.write(b"\0" * ((1024 - free_kib) * 1024))
        code = (
            "import ternion\n"
            "m = ternion.load_bundled('bsa_digits')\n"
            "for s in (1, 3):\n"
            "    try:\n"
            f"        ternion.run(m, samples=s, record=['spikes', 'membrane'], trace='{d}/t.h5')\n"
            "        print('written')\n"
            "    except ternion.Error as e:\n"
            "        print('error:', e)\n")
        p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           env=dict(os.environ, PYTHONPATH=os.path.dirname(core.__path__[0])))
        assert p.returncode == 0, (free_kib, p.returncode, p.stderr[-2000:])
        errors = p.stdout.count("No space left on device; disk full?")
        written = p.stdout.count("written")
        assert errors + written == 2 and (errors == 2 or free_kib > 16), p.stdout
        assert "HDF5-DIAG" not in p.stderr
        assert sorted(x.name for x in d.iterdir()) == ["filler"] + ["t.h5"] * (written > 0)
        for x in d.iterdir():
            os.remove(x)


def test_kernels_level_is_the_clis(ternion_bin):
    # The extension reports the vector kernels it runs, as `ternion version` does; a forced
    # lower level (TERNION_ISA, read at start) shows in both.
    k = ternion.kernels()
    assert set(k) == {"kernels", "cpu_best"}
    out = subprocess.run([ternion_bin, "version"], capture_output=True, text=True,
                         check=True).stdout
    assert f"kernels: {k['kernels']}; this CPU runs up to {k['cpu_best']}" in out
    code = ("import ternion, json; print(json.dumps(ternion.kernels()))")
    # The child imports the same package as this process.
    pkg = os.path.dirname(os.path.dirname(os.path.abspath(ternion.__file__)))
    env = {**os.environ, "TERNION_ISA": "v2",
           "PYTHONPATH": os.pathsep.join([pkg, os.environ.get("PYTHONPATH", "")])}
    forced = json.loads(subprocess.run([sys.executable, "-c", code], env=env, check=True,
                                       capture_output=True, text=True).stdout)
    assert forced["kernels"].startswith("x86-64-v2") or forced["kernels"] == "portable"
    assert forced["cpu_best"] == k["cpu_best"]


def test_quantize_equals_the_cli(core, ternion_bin, tmp_path):
    """ternion.quantize writes the same integer model as `ternion quantize`, and a run of it
    gives the CLI's predictions; bad widths raise ternion.Error naming the option."""
    model = os.path.join(os.path.dirname(__file__), "..", "..", "models", "bundled", "bsa_digits.h5")
    rep = core.quantize(model, tmp_path / "py.h5", "horowitz45-int8", weight_bits=6)
    cli = subprocess.run([ternion_bin, "quantize", model, "-o", str(tmp_path / "cli.h5"),
                          "--profile", "horowitz45-int8", "--weight-bits", "6", "--json"],
                         capture_output=True, text=True)
    assert cli.returncode == 0, cli.stderr
    doc = json.loads(cli.stdout)
    assert rep["nodes"] == doc["nodes"] and rep["weight_bits"] == 6
    attn = [n for n in rep["nodes"] if n["name"] == "b0_attn"][0]
    assert attn["action"] == "integer attention", attn  # the BSA node's integer form
    with h5py.File(tmp_path / "py.h5", "r") as a, h5py.File(tmp_path / "cli.h5", "r") as b:
        for n, w in (("conv", "weight"), ("b0_fc1", "weight"), ("head", "weight"),
                     ("b0_attn", "q_weight"), ("b0_attn", "v_weight")):
            assert np.array_equal(a[f"node/nodes/{n}/{w}"][()], b[f"node/nodes/{n}/{w}"][()])
            assert np.abs(a[f"node/nodes/{n}/{w}"][()]).max() <= 31
        assert a["node/nodes/b0_attn/datapath"][()] == b["node/nodes/b0_attn/datapath"][()]
    data = os.path.join(os.path.dirname(model), "digits_test.h5")
    r = core.run(core.load(tmp_path / "py.h5"), data)
    out = cli_json(ternion_bin, str(tmp_path / "cli.h5"), "--input", data)
    assert list(r.predictions) == out["predictions"]
    with pytest.raises(core.Error, match="weight-bits"):
        core.quantize(model, tmp_path / "x.h5", weight_bits=1)
    with pytest.raises(core.Error, match="formats"):
        core.quantize(model, tmp_path / "x.h5", "horowitz45-fp32")
    assert not (tmp_path / "x.h5").exists()


def test_export_quantize_equals_export_then_quantize(core, ternion_bin, tmp_path):
    """ternion.export(..., quantize=P) writes what `ternion quantize` makes of the float export;
    SpikingJelly LIFs with subtractive reset, a reset level of -0.2, a PLIF and an IF all map."""
    import torch
    import torch.nn as nn

    import sj_standins as sj

    gen = torch.Generator().manual_seed(3)
    torch.manual_seed(3)
    S = sj.SeqToANNContainer
    net = nn.Sequential(
        S(nn.Conv2d(2, 6, 3, padding=1)), sj.MultiStepLIFNode(tau=2.0),
        S(nn.MaxPool2d(2)),
        S(nn.Conv2d(6, 8, 3, padding=1)), sj.MultiStepLIFNode(tau=3.0, decay_input=False, v_reset=None),
        S(nn.Flatten(), nn.Linear(8 * 6 * 6, 20)), sj.MultiStepParametricLIFNode(init_tau=2.5),
        S(nn.Linear(20, 12)), sj.MultiStepLIFNode(tau=1.7, v_reset=-0.2, v_threshold=0.8),
        S(nn.Linear(12, 10)), sj.MultiStepIFNode(v_reset=None, v_threshold=0.6),
        S(nn.Linear(10, 4))).eval()
    x = (torch.rand(5, 3, 2, 12, 12, generator=gen) < 0.3).float()
    rep = ternion.export(net, x, tmp_path / "q.h5", quantize="horowitz45-int8")
    fixed = [n["name"] for n in rep.quantized["nodes"] if n["action"] == "FixedLIF"]
    assert len(fixed) == 5 and not [n for n in rep.quantized["nodes"] if n["action"] == "kept float"]
    ternion.export(net, x, tmp_path / "f.h5")
    r = subprocess.run([ternion_bin, "quantize", str(tmp_path / "f.h5"), "-o", str(tmp_path / "c.h5"),
                        "--profile", "horowitz45-int8"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    with h5py.File(tmp_path / "q.h5", "r") as a, h5py.File(tmp_path / "c.h5", "r") as b:
        for name in a["node/nodes"]:
            for k in a[f"node/nodes/{name}"]:
                assert np.array_equal(a[f"node/nodes/{name}/{k}"][()], b[f"node/nodes/{name}/{k}"][()]), (name, k)
    assert not [f for f in os.listdir(tmp_path) if f.startswith(".ternion-float-")]
    spikes = x.transpose(0, 1).numpy().astype(np.int8)
    with h5py.File(tmp_path / "in.h5", "w") as f:
        f["spikes"] = spikes
    out = core.run(core.load(tmp_path / "q.h5"), tmp_path / "in.h5")
    assert out.samples == 3


def test_spikingformer_export_runs_in_python_as_in_pytorch(core, ternion_bin, tmp_path):
    """A Spikingformer stand-in exported and run by ternion.run on the image array: every neuron
    layer spike for spike with PyTorch, the CLI's predictions, and the outputs (the head summed
    over the T steps) T times PyTorch's logits (the head of the mean over time) up to float32
    rounding: the sums over time and tokens are taken in another order."""
    import torch

    import test_export_spikingformer as ts

    net, x = ts.build(3, image=16, embed_dims=32, num_heads=2, depths=2, T=4)
    out, rec = ts.H.torch_spikes(net, x)
    rep = ternion.export(net, x, tmp_path / "sf.h5", fold_bn=False)
    res = core.run(core.load(tmp_path / "sf.h5"), x.numpy())
    nodes = {origin: name for name, (_, origin) in rep.nodes.items()}
    want, _ = ts.expected(rec, ts.tokens_of(net, 16))
    flat = {n: a.reshape(a.shape[0], a.shape[1], -1) for n, a in res.spikes.items()}
    assert ts.H.compare_spikes(want, flat, nodes) > 1000
    ts.H.write_input(tmp_path / "in.h5", data=x.numpy())
    js = cli_json(ternion_bin, str(tmp_path / "sf.h5"), "--input", str(tmp_path / "in.h5"))
    assert res.predictions.tolist() == js["predictions"] == out.argmax(1).tolist()
    logits = out.double().numpy()
    assert torch.is_tensor(out) and res.outputs.shape == logits.shape
    np.testing.assert_allclose(res.outputs / 4, logits, rtol=0, atol=1e-5 * np.abs(logits).max())


def test_strict_schemas_layouts_and_uint8(core, ternion_bin, lif_net, tmp_path):
    """Typos are refused with the nearest name; extra fields pass only when asked for; an
    ambiguous spike layout is refused as the CLI refuses it; uint8 analog data are /255."""
    with h5py.File(lif_net["model"]) as f:
        nodes = {n: {k: (g[k][()].decode() if k == "type" else g[k][()]) for k in g}
                 for n, g in f["node/nodes"].items()}
    edges = [("input", "fc"), ("fc", "lif"), ("lif", "output")]
    sj = {"type": "ternion.SJLIF", "tua": 2.0}
    with pytest.raises(core.Error, match=r"nodes/lif/tua: is not a parameter of ternion.SJLIF: "
                                         r"did you mean 'tau'\?"):
        core.build(dict(nodes, lif=sj), edges)
    typo = dict(nodes["lif"])
    typo["v_treshold"] = typo.pop("v_threshold")
    with pytest.raises(core.Error, match=r"nodes/lif/v_threshold: missing parameter \(the node "
                                         r"has 'v_treshold': misspelt\?\)"):
        core.build(dict(nodes, lif=typo), edges)
    extra = dict(nodes, lif=dict(nodes["lif"], nir_extra=np.float32(1)))
    with pytest.raises(core.Error, match=r"nodes/lif/nir_extra: is not a parameter of LIF, "
                                         r"misspelt\?"):
        core.build(extra, edges)
    m = core.build(extra, edges, dt=lif_net["dt"], discretization="euler", ignore_unknown=True)
    assert any("nodes/lif/nir_extra" in n for n in m.info()["notes"])
    assert np.array_equal(core.run(m, lif_net["x"]).spikes["lif"], lif_net["ref"])
    # Ambiguous layout: the model suggests T = 6 and x is [6, 20, 12].
    m6 = core.build(nodes, edges, dt=lif_net["dt"], discretization="euler", timesteps=6)
    x = lif_net["x"]  # [6 samples, 20 steps, 12]
    with pytest.raises(core.Error, match=r"shape \(6, 20, 12\) is ambiguous: .* pass "
                                         r"layout='ST' or layout='TS'"):
        core.run(m6, x)
    assert np.array_equal(core.run(m6, x, layout="ST").spikes["lif"], lif_net["ref"])
    # uint8 analog data: value / 255, the same as the float array scaled by hand.
    img = (np.arange(6 * 12) * 7 % 256).astype(np.uint8).reshape(6, 12)
    a = core.run(m, img, kind="analog", timesteps=4)
    b = core.run(m, img.astype(np.float32) / np.float32(255), timesteps=4)
    assert np.array_equal(a.spikes["lif"], b.spikes["lif"]) and a.spikes["lif"].any()
    with pytest.raises(core.Error, match=r"uint8 values above 1 are not spikes: pass "
                                         r"kind='analog'"):
        core.run(m, img[:, None, :].repeat(4, axis=1))
    with h5py.File(tmp_path / "u8.h5", "w") as f:
        f["data"] = img
    c = core.run(m, str(tmp_path / "u8.h5"), timesteps=4)
    assert np.array_equal(c.spikes["lif"], b.spikes["lif"])


def test_frames_equal_the_cli_and_run_as_frames(core, ternion_bin, lif_net, tmp_path):
    # ternion.frames equals `ternion frames` on the same streams (SpikingJelly's dict and
    # Tonic's structured array), and run(kind="frames") equals `ternion run` on the /frames file.
    rng = np.random.default_rng(40)
    H, W = 2, 3  # 2 x 2 x 3 = 12 inputs: lif_net's Input
    for n, rule in enumerate([dict(frames=5), dict(frames=4, split_by="time"), dict(duration=9)]):
        ev = dict(t=np.sort(rng.integers(0, 60, 80)), x=rng.integers(0, W, 80),
                  y=rng.integers(0, H, 80), p=rng.integers(0, 2, 80))
        if n % 2:
            ev["p"] = ev["p"] * 2 - 1  # -1/1 polarities: channel 1 takes every non-zero one
        np.savez(tmp_path / f"e{n}.npz", **ev)
        opts = (["--duration", str(rule["duration"])] if "duration" in rule else
                ["--frames", str(rule["frames"]), "--split-by", rule.get("split_by", "number")])
        r = subprocess.run([ternion_bin, "frames", str(tmp_path / f"e{n}.npz"), "-o",
                            str(tmp_path / f"f{n}.h5"), "--size", f"{H},{W}", *opts],
                           capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        with h5py.File(tmp_path / f"f{n}.h5", "r") as f:
            cli = f["frames"][0]
        got = core.frames(ev, size=(H, W), **rule)
        assert got.dtype == np.float32 and np.array_equal(got, cli), rule
        tonic = np.zeros(80, dtype=[("x", np.int16), ("y", np.int16), ("p", bool), ("t", np.int64)])
        for k in "xytp":
            tonic[k] = ev[k] if k != "p" else ev["p"] != 0
        assert np.array_equal(core.frames(tonic, size=(H, W), **rule), cli)
    x = np.stack([core.frames(dict(t=np.sort(rng.integers(0, 90, 40)), x=rng.integers(0, W, 40),
                                   y=rng.integers(0, H, 40), p=rng.integers(0, 2, 40)),
                              frames=6, size=(H, W)) for _ in range(3)])
    with h5py.File(tmp_path / "frames.h5", "w") as f:
        f["frames"] = x
    cli = cli_json(ternion_bin, lif_net["model"], "--input", str(tmp_path / "frames.h5"),
                   "--dt", str(lif_net["dt"]))
    m = core.load(lif_net["model"], dt=lif_net["dt"])
    py = core.run(m, x, kind="frames")
    assert py.report["layers"] == cli["layers"]
    assert py.report["input_encodings"] == {"input": "frames"}
    ts = core.run(m, np.swapaxes(x, 0, 1), kind="frames", layout="TS")
    assert np.array_equal(ts.spikes["lif"], py.spikes["lif"])
    with pytest.raises(core.Error, match=r"<events>: x: x = 3 at event"):
        core.frames(dict(t=[1, 2], x=[0, 3], y=[0, 0], p=[0, 1]), frames=1, size=(H, W))
    with pytest.raises(core.Error, match=r"option --frames"):
        core.frames(dict(t=[1, 2], x=[0, 1], y=[0, 0], p=[0, 1]), frames=0, size=(H, W))


def test_map_equals_the_cli(core, ternion_bin, tmp_path):
    """ternion.map gives `ternion map --json`'s placement; a misfit raises the CLI's message."""
    lif = dict(tau=np.float32(2.0), v_threshold=np.float32(1.0))
    conv = dict(stride=np.array([1, 1]), padding=np.array([1, 1]), dilation=np.array([1, 1]),
                groups=1, input_shape=np.array([16, 16]))
    rng = np.random.default_rng(2)

    def write(fname, cin, cout):
        (Nir().node("input", "Input", shape=np.array([cin, 16, 16]))
         .node("conv", "Conv2d", weight=rng.normal(0, .1, (cout, cin, 3, 3)).astype(np.float32),
               bias=np.zeros(cout, np.float32), **conv)
         .node("lif", "ternion.SJLIF", **lif).node("output", "Output")
         .edge("input", "conv").edge("conv", "lif").edge("lif", "output").write(str(tmp_path / fname)))
    write("ok.h5", 4, 8)
    r = subprocess.run([ternion_bin, "map", str(tmp_path / "ok.h5"), "--chip", "dynapcnn", "--json"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    cli = json.loads(r.stdout)
    cli.pop("model")
    assert core.map(str(tmp_path / "ok.h5"), "dynapcnn") == cli
    assert cli["layers"][0]["kernel_memory"] == 4 * 2 ** (4 + 3) and cli["layers"][0]["core"] == 0
    assert "dynapcnn" in core.chips()
    write("big.h5", 4, 2048)
    with pytest.raises(core.Error, match=r"nodes/conv: 2048 output channels: the chip holds at "
                                         r"most 1024"):
        core.map(core.load(str(tmp_path / "big.h5")), "dynapcnn")


def test_map_xylo_cycles_equal_the_cli(core, ternion_bin, tmp_path):
    """Rockpool's worked cycle example through ternion.map and `ternion map --rates`."""
    rng = np.random.default_rng(5)
    f = np.float32
    lif = lambda n: dict(tau=np.full(n, 0.02, f), r=np.ones(n, f), v_leak=np.zeros(n, f),  # noqa: E731
                         v_threshold=np.ones(n, f))
    rec = np.zeros((64, 64), f)
    for j in range(64):  # every hidden neuron drives 8 others: F = 8
        rec[rng.choice(64, 8, replace=False), j] = 1.0
    (Nir().node("input", "Input", shape=np.array([16]))
     .node("w_in", "Linear", weight=np.ones((64, 16), f)).node("hid", "LIF", **lif(64))
     .node("w_rec", "Linear", weight=rec).node("w_out", "Linear", weight=np.ones((8, 64), f))
     .node("out", "LIF", **lif(8)).node("output", "Output", shape=np.array([8]))
     .edge("input", "w_in").edge("w_in", "hid").edge("hid", "w_rec").edge("w_rec", "hid")
     .edge("hid", "w_out").edge("w_out", "out").edge("out", "output").write(str(tmp_path / "x.h5")))
    got = core.map(str(tmp_path / "x.h5"), "xylo-audio2", rates=(0.1, 0.05, 0.0))
    r = subprocess.run([ternion_bin, "map", str(tmp_path / "x.h5"), "--chip", "xylo-audio2",
                        "--rates", "0.1,0.05,0", "--json"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    cli = json.loads(r.stdout)
    cli.pop("model")
    assert got == cli
    assert abs(got["xylo"]["cycles_at_rates"] - 2275.2) < 1e-9 and got["xylo"]["cycles_worst"] == 13040


def test_map_mesh_band_equals_the_cli(core, ternion_bin, tmp_path):
    """A mesh chip through ternion.map: the CLI's placement, and the tiny model's band by hand
    (Davies et al. 2018: 23.6 pJ a synaptic op, 52 / 81 pJ an inactive / active update)."""
    f = np.float32
    (Nir().node("input", "Input", shape=np.array([4]))
     .node("w", "Linear", weight=np.ones((3, 4), f))
     .node("lif", "LIF", tau=np.full(3, 0.02, f), r=np.ones(3, f), v_leak=np.zeros(3, f),
           v_threshold=np.ones(3, f)).node("output", "Output", shape=np.array([3]))
     .edge("input", "w").edge("w", "lif").edge("lif", "output").write(str(tmp_path / "t.h5")))
    got = core.map(str(tmp_path / "t.h5"), "loihi-like", rates=(0.5, 0.25, 0.1), steps=2)
    r = subprocess.run([ternion_bin, "map", str(tmp_path / "t.h5"), "--chip", "loihi-like",
                        "--rates", "0.5,0.25,0.1", "--steps", "2", "--json"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    cli = json.loads(r.stdout)
    cli.pop("model")
    assert got == cli
    ops = 0.5 * 12 * 23.6 + 3 * (0.9 * 52 + 0.1 * 81)
    assert abs(got["band"]["step_pj"]["ops"] - ops) < 1e-9
    assert abs(got["band"]["inference_pj"]["ops"] - 2 * ops) < 1e-9
    with pytest.raises(core.Error, match=r"option --steps"):
        core.map(str(tmp_path / "t.h5"), "loihi-like", steps=0)


def test_run_on_a_chip_equals_the_cli(core, ternion_bin, lif_net):
    """run(chip=...) prices the run's own spikes on the chip as `ternion run --chip` does."""
    r = core.run(lif_net["model"], lif_net["input"], chip="loihi-like")
    p = subprocess.run([ternion_bin, "run", lif_net["model"], "--input", lif_net["input"],
                        "--chip", "loihi-like", "--json", "--no-progress"],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    cli = json.loads(p.stdout)["chip"]
    assert r.chip == cli and r.chip["measured"]
    # The LIF layer's output rate is the run's: its spikes over samples x steps x neurons.
    (layer,) = [l for l in r.chip["layers"] if "lif" in l["nodes"]]
    S, T, n = lif_net["ref"].shape
    assert abs(layer["rate_out"] - lif_net["ref"].sum() / (S * T * n)) < 1e-12
    assert core.run(lif_net["model"], lif_net["input"]).chip is None


def test_plot_mesh_of_a_map_and_of_a_run(core, lif_net, tmp_path):
    """ternion.plot_mesh draws ternion.map's placement and a Result's chip placement: one
    colour per layer placed, the packets per link summing to the report's hops."""
    pytest.importorskip("matplotlib")
    from ternion import mesh_plot

    bundled = os.path.join(os.path.dirname(__file__), "..", "..", "models", "bundled", "bsa_digits.h5")
    m = core.map(bundled, "loihi-like", rates=(0.2, 0.1, 0.1), steps=4)
    fig = core.plot_mesh(m, str(tmp_path / "mesh.png"), model="bsa_digits")
    assert open(tmp_path / "mesh.png", "rb").read(8) == b"\x89PNG\r\n\x1a\n"
    d = mesh_plot.mesh_data(m)
    assert abs(d["link_sum"] - m["routing"]["hops"]) < 1e-9 * m["routing"]["hops"]
    assert len(fig.axes[0].get_legend().get_texts()) == len(m["layers"]) + 1  # + unused cores
    assert "rates given" in fig.axes[0].get_title(loc="left")
    r = core.run(lif_net["model"], lif_net["input"], chip="generic-45nm")
    fig = core.plot_mesh(r)
    assert "rates measured by a run" in fig.axes[0].get_title(loc="left")
    assert abs(mesh_plot.mesh_data(r)["link_sum"] - r.chip["routing"]["hops"]) < 1e-9
    with pytest.raises(mesh_plot.PlotError, match="no chip placement"):
        core.plot_mesh(core.run(lif_net["model"], lif_net["input"]))


def test_node_names_that_cannot_be_trace_groups_are_refused(core, tmp_path):
    """A name becomes /nodes/<name> in a trace: '/', '', '.' and '..' are refused by name."""
    for name in ("a/b", "", ".", ".."):
        nodes = {"input": {"type": "Input", "shape": np.array([4])},
                 name: {"type": "ternion.SJLIF", "tau": 2.0}, "output": {"type": "Output"}}
        with pytest.raises(core.Error, match=r"is not a usable node name"):
            core.build(nodes, [("input", name), (name, "output")])
    nodes = {"input": {"type": "Input", "shape": np.array([4])},
             "sub.lif": {"type": "ternion.SJLIF", "tau": 2.0}, "output": {"type": "Output"}}
    m = core.build(nodes, [("input", "sub.lif"), ("sub.lif", "output")])
    core.run(m, np.ones((1, 3, 4), np.int8), trace=str(tmp_path / "t.h5"))
    with h5py.File(tmp_path / "t.h5") as f:
        assert "sub.lif" in f["nodes"]


@pytest.mark.parametrize("threads", [1, 2])
def test_ctrl_c_stops_a_long_run_promptly(request, tmp_path, threads):
    """SIGINT one second into a run of 10 000 images (several seconds) raises KeyboardInterrupt
    within about a second, writes no trace, and the session goes on."""
    script = f"""
import os, signal, sys, threading, time
sys.path.insert(0, {request.config.getoption('--package')!r})
import ternion
m = ternion.load_bundled("bsa_fmnist")
threading.Timer(1.0, lambda: os.kill(os.getpid(), signal.SIGINT)).start()
t0 = time.time()
try:
    ternion.run(m, threads={threads}, trace={str(tmp_path / 't.h5')!r}, record=["ops"])
    print("finished", time.time() - t0)
except KeyboardInterrupt:
    print("interrupted", time.time() - t0, os.path.exists({str(tmp_path / 't.h5')!r}))
print("then", ternion.run(ternion.load_bundled("bsa_digits"), threads=1).samples)
"""
    if not os.path.exists("/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz"):
        pytest.skip("dataset-fashion-mnist is not installed")
    p = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    lines = p.stdout.split("\n")
    assert p.returncode == 0 and lines[0].startswith("interrupted"), (p.stdout, p.stderr)
    _, seconds, trace = lines[0].split()
    assert float(seconds) < 2.5 and trace == "False", lines[0]
    assert lines[1] == "then 360"
