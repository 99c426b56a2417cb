"""Running models from Python: `load`, `run`, `profiles`, `attention`.

Every run goes through ternion's C++ run pipeline (the extension module `ternion._core`), the
same one `ternion run` uses, so spikes, counts and energy equal the command line's bit for bit.
The simulation runs with the GIL released. Errors raise `ternion.Error` (a ValueError) with the
same one-line message the command line prints.
"""

import json

import numpy as np

from . import _core

Error = _core.Error
Model = _core.Model


def load(path, dt=None, discretization=None, reset=None, from_=None, allow_unstable=False,
         ignore_unknown=False, no_weight_codebook=False):
    """Loads a model file (NIR HDF5 with ternion's Transformer nodes). `dt`,
    `discretization` ("euler" | "exact"), `reset` ("zero" | "subtract"), `from_` (the framework
    that wrote a NIR file: "snntorch", "norse", "sinabs", "spikingjelly", "nir"; see
    docs/bringing-a-model.md), `allow_unstable` and `ignore_unknown` mean what the command-line
    options --dt, --discretization, --reset, --from, --allow-unstable and
    --ignore-unknown-params mean (a parameter name no node type reads is an error naming
    nodes/<node>/<param>, with the nearest known name; `ignore_unknown=True` accepts it and
    lists it in the model's notes), `no_weight_codebook` what --no-weight-codebook means. A
    model is stored alike for any thread count: `run(threads=...)` chooses them."""
    return _core.load(str(path), _load_options(dt, discretization, reset, from_, allow_unstable,
                                               ignore_unknown, no_weight_codebook))


def _load_options(dt, discretization, reset, from_, allow_unstable, ignore_unknown,
                  no_weight_codebook=False):
    """The loading keywords by the names of the shared option table (_core.option_names)."""
    return dict(dt=dt, discretization=discretization, reset=reset, from_=from_,
                allow_unstable=allow_unstable, ignore_unknown=ignore_unknown,
                no_weight_codebook=no_weight_codebook)


def load_bundled(name="bsa_digits"):
    """A bundled model with its test set as default input: "bsa_digits" or "ssa_digits" (the
    bundled digits test set), "bsa_fmnist" or "ssa_fmnist" (Debian's Fashion-MNIST test
    images)."""
    return _core.load_bundled(name)


def build(nodes, edges, *, name="<python>", dt=None, discretization=None, reset=None,
          from_=None, allow_unstable=False, timesteps=None, encoding=None, ignore_unknown=False):
    """A model described in Python instead of a file: `nodes` maps each node's name to a dict
    with its "type" (a NIR or ternion type, as in a model file; `ternion info --types`) and its
    parameters (numpy arrays, numbers or strings, as the file's datasets would hold them), in
    graph order; `edges` lists (source, target) pairs. Nodes are built and checked as a file's
    are, and errors name `name` with nodes/<node>/<param>. `timesteps` and `encoding` are what
    a file's metadata would suggest; the other options mean what they mean for `load`."""
    spec = []
    for node, params in nodes.items():
        params = dict(params)
        if "type" not in params:
            raise Error(f"{name}: nodes/{node}/type: missing")
        kind = params.pop("type")
        spec.append((str(node), str(kind), params))
    pairs = [(str(a), str(b)) for a, b in edges]
    options = _load_options(dt, discretization, reset, from_, allow_unstable, ignore_unknown)
    return _core.build(spec, pairs, name, options, timesteps, encoding)


def _layout_of(x, layout, model_T, spikes):
    """"ST" or "TS"; None (not given) reads samples first, unless the model's suggested T
    makes the shape read both ways, which is refused as the command line refuses it."""
    if layout is None:
        if model_T and x.shape[0] == model_T and x.shape[1] != model_T:
            raise Error(f"<array>: {spikes}: shape {tuple(x.shape)} is ambiguous: samples-first "
                        f"reads {x.shape[0]} samples of {x.shape[1]} steps, time-first reads "
                        f"{x.shape[1]} samples of {x.shape[0]} steps (the model's timesteps is "
                        f"{model_T}); pass layout='ST' or layout='TS'")
        return "ST"
    return layout


def _as_input(x, layout, kind, node=None, model_T=None):
    """The caller's array as C-contiguous int8 spikes [samples, T, ...] or float32 data
    [samples, ...]; `layout` "TS" (time first, as snnTorch, SpikingJelly and Norse produce)
    is transposed to samples first. `node`: the Input node it feeds, when x was a dict; errors
    then name /inputs/<node>/spikes or /data, as in an input file. uint8 analog data are 8-bit
    images, read as value / 255 as IDX files and uint8 /data datasets are."""
    spikes = "/spikes" if node is None else f"/inputs/{node}/spikes"
    data = "x" if node is None else f"/inputs/{node}/data"
    x = np.asarray(x)
    if kind == "auto":
        kind = "spikes" if (x.dtype == np.bool_ or np.issubdtype(x.dtype, np.integer)) else "analog"
        if x.dtype == np.uint8 and x.size and x.max() > 1:
            raise Error(f"<array>: {spikes}: uint8 values above 1 are not spikes: pass "
                        "kind='analog' for 8-bit images (read as value / 255)")
    if kind not in ("spikes", "analog", "frames"):
        raise Error(f"option --kind: must be auto, spikes, analog or frames (got {kind!r})")
    if layout not in (None, "ST", "TS"):
        raise Error(f"option --layout: must be ST (samples first) or TS (time first), got {layout!r}")
    if kind == "analog":
        if layout == "TS" and node is None:  # in a dict, layout is the spike arrays'
            raise Error("option --layout: analog data has no time axis; use layout='ST'")
        if not np.issubdtype(x.dtype, np.number) or np.iscomplexobj(x):
            raise Error(f"<array>: {data}: expected real numbers, got {x.dtype}")
        if x.dtype == np.uint8:
            return np.ascontiguousarray(x, dtype=np.float32) / np.float32(255)
        return np.ascontiguousarray(x, dtype=np.float32)
    if kind == "frames":
        spikes = "/frames" if node is None else f"/inputs/{node}/frames"
    if x.ndim < 3:
        raise Error(f"<array>: {spikes}: expected [samples, T, ...shape], got {x.ndim} dimensions")
    if _layout_of(x, layout, model_T, spikes) == "TS":
        x = np.swapaxes(x, 0, 1)
    if kind == "frames":
        # Frames (event-camera counts, ternion.frames) replay one per step as analog values;
        # the tuple tells the extension so.
        if not (x.dtype == np.bool_ or np.issubdtype(x.dtype, np.number)) or np.iscomplexobj(x):
            raise Error(f"<array>: {spikes}: expected real numbers, got {x.dtype}")
        return ("frames", np.ascontiguousarray(x, dtype=np.float32))
    if x.dtype != np.int8:
        if not (x.dtype == np.bool_ or np.issubdtype(x.dtype, np.number)):
            raise Error(f"<array>: {spikes}: expected spikes, got {x.dtype}")
        bad = (x != 0) & (x != 1) & (x != -1)
        if bad.any():
            where = np.argwhere(bad)[0]
            raise Error(f"<array>: {spikes}: value {x[tuple(where)]} at sample {where[0]}, step "
                        f"{where[1]} is not -1, 0 or 1")
    return np.ascontiguousarray(x, dtype=np.int8)


class Result:
    """What one run produced.

    spikes[node]    int8 [samples, T, *shape] (recorded nodes; read-only, shares memory)
    membrane[node]  float32 [samples, T, *shape] (with record=["membrane"])
    predictions     int64 [samples]: argmax of the output summed over time
    outputs         float32 [samples, classes]: the output summed over time
    accuracy        fraction correct (None without labels)
    counts          {"layers": {name: {kind: count}}, "totals": ..., "per_inference": ...}
    energy          {"per_inference_pj", "headline" (the line to quote), "which_number",
                    "layers": {name: pJ}, "by_kind_pj", "exact_pj", "ann_pj" (T passes, one a
                    step), "ann_pj_one_pass", "ann_ratio", "ann_ratio_one_pass", ...}
    node_seconds    {node: thread seconds of its steps} (with node_times=True, else None)
    chip            with chip=...: the placement priced with this run's spikes, as `ternion map
                    --json` gives it (cores, routing, latency, "band"), else None
    report          the document `ternion run --json` prints, as a dict
    text            the report `ternion run` prints
    """

    def __init__(self, out):
        self._out = out
        self._report = None
        self.recorded_samples = np.asarray(out.recorded_samples(), dtype=np.int64)
        nodes = out.recorded_nodes()
        self.spikes = {n: a for n in nodes if (a := out.spikes(n)) is not None}
        self.membrane = {n: a for n in nodes if (a := out.membrane(n)) is not None}
        self.predictions = out.predictions()
        self.outputs = out.outputs()
        self.accuracy = out.accuracy()
        self.samples = out.samples()
        self.timesteps = out.timesteps()
        self.node_seconds = out.node_seconds()
        self.counts = out.counts()
        self.energy = out.energy()
        chip = out.chip()
        self.chip = None if chip is None else json.loads(chip)

    @property
    def report(self):
        """The document `ternion run --json` prints, as a dict (made on first use)."""
        if self._report is None:
            self._report = json.loads(self._out.json())
        return self._report

    @property
    def text(self):
        """The report `ternion run` prints."""
        return self._out.text()

    def __repr__(self):
        acc = "-" if self.accuracy is None else f"{100 * self.accuracy:.2f}%"
        return (f"<ternion.Result {self.samples} samples x {self.timesteps} steps, accuracy {acc}, "
                f"{self.energy['per_inference_pj']:.6g} pJ per inference>")


def run(model, x=None, labels=None, *, layout=None, kind="auto", timesteps=None,
        engine="event", threads=None, profile=None, count="exact", encoding=None, seed=0,
        first=0, samples=None, record=("spikes",), record_nodes=None, trace=None,
        spike_format="events", max_record_bytes=2 << 30, paper_encoding_once=False,
        node_times=False, arith="float", record_samples=None, record_steps=None,
        max_memory=None, chip=None):
    """Runs `model` (from `load`, `load_bundled`, or a path) on `x` and prices it.

    x: None (a bundled model's test set), an input file path, or an array: int8/bool spikes
       [samples, T, ...] (layout="TS" for time-first tensors; not given: samples first,
       and a shape that reads both ways under the model's suggested T is refused, as the
       command line refuses it) or float data [samples, ...] (uint8: images, value / 255)
       encoded per step (`encoding`: direct | poisson | latency), or with kind="frames" float
       frames [samples, T, ...] (event-camera counts from `frames`) replayed one per step as
       analog values (layout as for spikes). A model with several Input
       nodes takes a dict {Input node name: array}, every array with the same samples; `kind`
       may then be a dict too, and `layout` applies to the spike arrays.
    encoding: one kind for every analog input, or a dict {Input node name: kind} (the key
       None: the kind of the nodes not named), as `--encoding kind --encoding node=kind`.
    labels: class per sample, for accuracy.
    record: observables kept in memory (spikes, membrane; also ops, energy, attention for
       `trace`); record_nodes limits them to these nodes. trace: also write them to this HDF5
       file (NIR's NIRGraphData layout, as `ternion run --trace`).
    node_times: measure each node's thread seconds (Result.node_seconds).
    The other options mean what `ternion run`'s options of the same names mean (one table
    defines both: models/run_options.cpp), and are refused with the same messages:
    arith="fixed" runs the integer model (--arith), record_samples and record_steps take
    index lists (a list of ints or text such as "0,3,10-19"), max_memory a byte count (8G or
    an int), max_record_bytes is --max-trace-bytes. chip: place the model on this chip
    (`chips()`) before the run and price the run's own activity on it (Result.chip).
    """
    if isinstance(model, str):
        model = load(model)
    arr, path = None, ""
    model_T = model.info().get("timesteps")
    if x is not None and isinstance(x, (str, bytes)) or hasattr(x, "__fspath__"):
        path = str(x)
    elif isinstance(x, dict):
        kinds = kind if isinstance(kind, dict) else {}
        arr = {str(k): _as_input(v, layout, kinds.get(k, "auto" if kinds else kind), str(k),
                                 model_T) for k, v in x.items()}
    elif x is not None:
        arr = _as_input(x, layout, kind, None, model_T)
    lab = [] if labels is None else _labels(labels)
    if isinstance(encoding, dict):
        encoding = [str(v) if k is None else f"{k}={v}" for k, v in encoding.items()]
    elif encoding is not None:
        encoding = [str(encoding)]
    opts = dict(engine=engine, threads=threads, timesteps=timesteps, encoding=encoding,
                layout=layout, seed=seed, first=first, samples=samples,
                profile=profile or _core.default_profile, count=count,
                paper_encoding_once=paper_encoding_once, arith=arith, record=list(record or []),
                record_nodes=None if record_nodes is None else list(record_nodes),
                record_samples=_items(record_samples), record_steps=_items(record_steps),
                trace=None if trace is None else str(trace), spike_format=spike_format,
                max_record_bytes=max_record_bytes, max_memory=max_memory,
                node_times=bool(node_times), chip=None if chip is None else str(chip))
    return Result(_core.run(model, path, arr, lab, opts))


def frames(events, frames=None, split_by="number", duration=None, size=None):
    """One event stream framed as `ternion frames` frames it: float32 [T, 2, H, W] counts,
    channel 0 for polarity 0 and 1 for any other, equal to SpikingJelly's
    integrate_events_by_fixed_frames_number(events, split_by, frames, H, W) or, with
    `duration`, integrate_events_by_fixed_duration(events, duration, H, W).
    events: a dict with arrays t, x, y, p (SpikingJelly's .npz) or a structured array with
    fields x, y, t, p (Tonic). size: (H, W). See docs/inputs.md, "Event cameras"."""
    if size is None or len(size) != 2:
        raise Error("option --size: give size=(H, W)")
    cols = []
    for k in ("t", "x", "y", "p"):
        try:
            a = np.asarray(events[k]).reshape(-1)
        except (KeyError, ValueError, IndexError) as e:
            raise Error(f"<events>: {k}: missing: events need t, x, y, p") from e
        if a.dtype.kind == "f":
            if not np.all(np.isfinite(a) & (a == np.round(a))):
                raise Error(f"<events>: {k}: values must be integers")
        elif a.dtype.kind not in "biu":
            raise Error(f"<events>: {k}: expected integers, got {a.dtype}")
        cols.append(a.astype(np.int64))
    M = _int_option("frames", frames if frames is not None else 0, 0, 100000)
    D = _int_option("duration", duration if duration is not None else 0, 0, 2 ** 63 - 1)
    H = _int_option("size", size[0], 1, 65536)
    W = _int_option("size", size[1], 1, 65536)
    if frames is not None and M < 1:
        raise Error("option --frames: must be at least 1")
    if duration is not None and D < 1:
        raise Error("option --duration: must be at least 1")
    return _core.frames(*cols, M, str(split_by), D, H, W)


def _items(v):
    """An index list as the shared option table takes it: text as it is, else a list."""
    return v if v is None or isinstance(v, str) else list(v)


def _int_option(name, value, lo, hi, required=False):
    """`value` as an int in [lo, hi] (None passes unless `required`), else ternion.Error naming
    the option."""
    if value is None:
        if required:
            raise Error(f"option --{name.replace('_', '-')}: must be an integer, got None")
        return None
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        if not (isinstance(value, (float, np.floating)) and float(value).is_integer()):
            raise Error(f"option --{name.replace('_', '-')}: must be an integer, got {value!r}")
    v = int(value)
    if not lo <= v <= hi:
        raise Error(f"option --{name.replace('_', '-')}: must be between {lo} and {hi}, got {v}")
    return v


def _labels(labels):
    """Class labels as ints: integral values only (1.5 is not a class)."""
    a = np.asarray(labels).reshape(-1)
    if a.dtype.kind == "f" and not np.all(np.isfinite(a) & (a == np.round(a))):
        raise Error("<labels>: labels must be integers")
    if a.dtype.kind not in "iuf" and a.size:
        raise Error(f"<labels>: labels must be integers, got {a.dtype}")
    if a.size and (a.min() < 0 or a.max() > 2 ** 62):
        raise Error("<labels>: labels must be non-negative integers")
    return [int(v) for v in a]


def quantize(model, output, profile="loihi-like", *, weight_bits=None, membrane_bits=None,
             dt=None, from_=None):
    """Writes the integer model a chip would hold (`ternion quantize`): the neurons become
    ternion.FixedLIF on the profile's datapath and their layers get integer weights of
    `weight_bits` (default: the profile's) under one power-of-two scale per population.
    Returns {"nodes": [{"name", "type", "action", "exponent", "max_weight", "note"}], ...,
    "text": the report}. See docs/fixed-point.md."""
    weight_bits = _int_option("weight_bits", weight_bits, 2, 16)
    membrane_bits = _int_option("membrane_bits", membrane_bits, 2, 32)
    options = _load_options(dt, None, None, from_, False, False)
    return _core.quantize(str(model), str(output), str(profile), weight_bits, membrane_bits,
                          options)


def map(model, chip, rates=None, steps=1):
    """Places `model` (from `load`, or a path) on the cores of `chip` (a name, `chips()`, or a
    JSON file) as `ternion map --chip` does and returns the placement: {"chip", "layers": [{
    "nodes", "connection", "core", "fits_cores", "kernel_memory", "neuron_memory",
    "bias_memory", ...}], "notes", "sources"}. A Xylo chip's layers are its neuron populations,
    and "xylo" holds the counts and the cycles per step; `rates` = (p_in, p_hid, p_out) adds
    the cycles at those firing rates. A mesh chip ("loihi-like", "generic-45nm") gives each
    layer's cores, "routing", "latency" and the energy "band" (op count, + memory, + routing,
    + static) at `rates` (every rate 1 without them), per step and per inference of `steps`.
    A layer that does not fit raises ternion.Error naming the node, the limit, the need and
    the capacity. See docs/chips.md."""
    if isinstance(model, str):
        model = load(model)
    steps = _int_option("steps", steps, 1, 2 ** 40, required=True)
    return _core.map(model, str(chip), None if rates is None else [float(r) for r in rates],
                     steps)


def chips():
    """{name: one-line description} of every chip description."""
    return dict(_core.chips())


def profiles():
    """{name: one-line description} of every hardware profile."""
    return dict(_core.profiles())


def describe_profile(name):
    """Every figure of a profile with its source, as `ternion profiles show NAME` prints."""
    return _core.describe_profile(name)


def attention(kind, weights, x, t=None, heads=0, causal=None, renormalize=None, profile=None):
    """Runs an ANN reference attention (`ternion attention`'s kinds) on x [batch, N, D]
    (t [batch, N] for time kinds) with `weights` {name: array}, named after the PyTorch
    parameters. Returns {"y": [batch, N, D_out], "ops": {kind: count}, "energy": {...}}."""
    w = {k: np.ascontiguousarray(v, dtype=np.float32) for k, v in weights.items()}
    return _core.attention(kind, w, np.ascontiguousarray(x, dtype=np.float32),
                           None if t is None else np.ascontiguousarray(t, dtype=np.float32),
                           heads, causal, renormalize, profile or _core.default_profile)


def kernels():
    """Which vector kernels runs use ({'kernels': ..., 'cpu_best': ...}): the CPU's best level
    unless the environment variable TERNION_ISA (v2, v3, v4) forced a lower one at start."""
    return dict(_core.kernels())


def attention_kinds():
    return list(_core.attention_kinds())
