"""Converters for the neurons of snnTorch, Norse and Sinabs (matched by class name and
attributes, so none of the packages has to be importable). Each writes NIR's node types with the
per-node datasets that carry what NIR's equations leave out (reset_mode, reset_delay, compare,
initial, input_gain) and sets the file's metadata/from, dt and discretization, so that
`ternion run` reproduces the framework's own simulation with no flag. The mapping and the
framework source lines are in docs/bringing-a-model.md ("--from")."""
import warnings

import numpy as np

from . import converters as cv
from .graph import ExportError, f32

SNNTORCH_NAMES = {"Leaky", "Synaptic", "RLeaky", "RSynaptic"}
NORSE_NAMES = {"LIFBoxCell", "LIFCell", "LIBoxCell", "IAFCell"}
SINABS_NAMES = {"IAF", "IAFSqueeze", "LIF", "LIFSqueeze", "ExpLeak", "ExpLeakSqueeze"}
SNNTORCH_DT = 1e-4  # the dt snnTorch's own exporter writes tau for (snntorch/export_nir.py)


def _describe(m, path):
    return f"{path or '<root>'} ({type(m).__module__}.{type(m).__name__})"


def framework_of(m):
    """'snntorch', 'norse', 'sinabs' or None, from the class name and its attributes."""
    name = type(m).__name__
    if name in SNNTORCH_NAMES and hasattr(m, "beta") and hasattr(m, "threshold"):
        return "snntorch"
    if name in NORSE_NAMES and hasattr(m, "p"):
        return "norse"
    if name in SINABS_NAMES and (hasattr(m, "tau_mem") or hasattr(m, "spike_threshold")):
        return "sinabs"
    return None


def _per_neuron(v, shape, what, m, path):
    a = f32(v).reshape(-1)
    n = int(np.prod(shape))
    if a.size == 1:
        return np.full(shape, a[0], np.float32)
    if a.size != n:
        raise ExportError(f"{_describe(m, path)}: {what} has {a.size} values, the layer {n}")
    return a.reshape(shape)


def _claim(ex, framework, meta, m, path):
    """All neurons of one file come from one framework; its conventions go into the metadata."""
    have = getattr(ex, "framework", None)
    if have is not None and have != framework:
        raise ExportError(f"{_describe(m, path)}: a {framework} neuron in a network whose other "
                          f"neurons are {have}'s; one file carries one framework's conventions")
    ex.framework = framework
    old = getattr(ex, "meta", {})
    for k, v in meta.items():
        if k in old and old[k] != v:
            raise ExportError(f"{_describe(m, path)}: {k} = {v}, other neurons have {old[k]}")
    ex.meta = {**old, **meta}


def _decay_tau(factor, dt, m, path, what):
    """float32 tau such that ternion's Euler decay float32(1 - dt/tau) is exactly `factor`
    (snnTorch's beta or alpha, clamped to [0, 1] as snnTorch does) and tau/dt its unit gain."""
    factor = np.clip(factor, 0, 1).astype(np.float32)
    if (factor >= 1).any():
        raise ExportError(f"{_describe(m, path)}: {what} = 1 (no leak) is not supported")
    tau = (dt / (1 - factor.astype(np.float64))).astype(np.float32)
    flat, want = tau.reshape(-1), factor.reshape(-1)
    for k in range(flat.size):
        t = flat[k]
        for _ in range(64):
            got = np.float32(1.0 - dt / np.float64(t))
            if got == want[k]:
                break
            t = np.nextafter(t, np.float32(np.inf) if got < want[k] else np.float32(0))
        else:
            raise ExportError(f"{_describe(m, path)}: no float32 tau gives {what} = {want[k]!r}")
        flat[k] = t
    return flat.reshape(tau.shape)


def _snntorch_reset(m, path):
    mech = getattr(m, "reset_mechanism", "subtract")
    if mech not in ("subtract", "zero"):
        raise ExportError(f"{_describe(m, path)}: reset_mechanism '{mech}' is not supported "
                          "(subtract or zero)")
    for attr, ok in (("inhibition", False), ("state_quant", False)):
        if bool(getattr(m, attr, ok)) != ok:
            raise ExportError(f"{_describe(m, path)}: {attr} is not supported")
    g = getattr(m, "graded_spikes_factor", 1.0)
    if float(f32(g).reshape(-1)[0]) != 1.0:
        raise ExportError(f"{_describe(m, path)}: graded_spikes_factor must be 1")
    return dict(reset_mode=mech, reset_delay=np.int64(1 if getattr(m, "reset_delay", True) else 0))


def convert_snntorch(ex, m, path, x):
    """snnTorch Leaky -> LIF, Synaptic -> CubaLIF, as snnTorch's exporter writes them (dt 1e-4,
    tau = dt/(1-beta), r = tau/dt, w_in = tau_syn/dt), plus reset_mode and reset_delay. RLeaky
    and RSynaptic the same, with their recurrent map as a node fed by the neuron and feeding it
    back: the edge that closes a cycle, which the snntorch conventions add after the decayed
    state and the feed-forward input, as rleaky.py 394-400 and rsynaptic.py 418-425 do."""
    shape = ex.g.shapes[x]
    dt = SNNTORCH_DT
    kind = type(m).__name__
    _claim(ex, "snntorch", {"from": "snntorch", "dt": np.float64(dt),
                            "discretization": "euler"}, m, path)
    th = _per_neuron(m.threshold, shape, "threshold", m, path)
    p = dict(v_threshold=th, v_leak=np.zeros(shape, np.float32), v_reset=np.zeros(shape, np.float32))
    p.update(_snntorch_reset(m, path))
    if kind == "RSynaptic" and not p["reset_delay"]:
        # rsynaptic.py 366-374 computes the immediate reset into local variables and keeps the
        # delayed one: the file says what snnTorch computes.
        warnings.warn(f"{_describe(m, path)}: snnTorch's RSynaptic resets one step later even "
                      "with reset_delay=False; exported with reset_delay=1, as it runs")
        p["reset_delay"] = np.int64(1)
    beta = _per_neuron(m.beta, shape, "beta", m, path)
    tau_m = _decay_tau(beta, dt, m, path, "beta")
    if kind in ("Leaky", "RLeaky"):
        p.update(tau=tau_m, r=(tau_m / np.float32(dt)).astype(np.float32))
        node = ex.g.add(ex.name(path), "LIF", p, [x], shape, origin=path)
    else:
        alpha = _per_neuron(m.alpha, shape, "alpha", m, path)
        tau_s = _decay_tau(alpha, dt, m, path, "alpha")
        p.update(tau_mem=tau_m, tau_syn=tau_s, r=(tau_m / np.float32(dt)).astype(np.float32),
                 w_in=(tau_s / np.float32(dt)).astype(np.float32))
        node = ex.g.add(ex.name(path), "CubaLIF", p, [x], shape, origin=path)
    if kind.startswith("R"):
        _snntorch_recurrent(ex, m, path, node, shape)
    return node


def _snntorch_recurrent(ex, m, path, node, shape):
    """RLeaky/RSynaptic's `recurrent`: nn.Linear or nn.Conv2d (all_to_all) or V * spk
    (RecurrentOneToOne), from the neuron's spikes back into it."""
    rec = getattr(m, "recurrent", None)
    rpath = f"{path}.recurrent" if path else "recurrent"
    if rec is None:
        raise ExportError(f"{_describe(m, path)}: no `recurrent` module")
    if getattr(m, "all_to_all", True):
        if cv.is_linear(rec):
            out = cv.linear_node(ex, rec, rpath, node)
        elif cv.is_conv(rec, 2):
            out = cv.conv_node(ex, rec, rpath, node)
        else:
            raise ExportError(f"{_describe(rec, rpath)}: a recurrent map of this type is not "
                              "supported (nn.Linear, nn.Conv2d or one-to-one V)")
    else:
        v = f32(rec.V).reshape(-1)
        if v.size != 1 and len(shape) != 1:
            raise ExportError(f"{_describe(m, path)}: a per-neuron V needs a flat layer, this "
                              f"one is {shape}")
        scale = v if v.size == 1 else _per_neuron(v, shape, "V", m, path)
        out = ex.g.add(ex.name(rpath), "Scale", dict(scale=scale), [node], shape, origin=rpath)
    if ex.g.shapes[out] != tuple(shape):
        raise ExportError(f"{_describe(rec, rpath)}: maps the layer's {shape} spikes to "
                          f"{ex.g.shapes[out]}, not back onto the layer")
    ex.g.edges.append((out, node))


def _norse_tau(inv, m, path, what):
    """float32 tau = 1/tau_inv, as Norse's exporter writes it (ternion's Norse dialect takes the
    roundest float32 tau_inv whose reciprocal is tau)."""
    return (np.float32(1) / inv.astype(np.float32)).astype(np.float32)


def convert_norse(ex, m, path, x):
    """Norse LIFBoxCell -> LIF, LIFCell -> CubaLIF (input into the current with gain 1),
    LIBoxCell -> LI, IAFCell -> IF; membranes start at v_leak (IAF at v_reset)."""
    shape = ex.g.shapes[x]
    name = type(m).__name__
    p_ = m.p
    dt = float(getattr(m, "dt", 1e-3))
    _claim(ex, "norse", {"from": "norse", "dt": np.float64(dt), "discretization": "euler"},
           m, path)
    get = lambda a: _per_neuron(getattr(p_, a), shape, a, m, path)  # noqa: E731
    method = getattr(getattr(p_, "reset_method", None), "__name__", "reset_value")
    if method not in ("reset_value", "reset_subtract"):
        raise ExportError(f"{_describe(m, path)}: reset_method {method} is not supported")
    reset = "subtract" if method == "reset_subtract" else "zero"
    ones = np.ones(shape, np.float32)
    if name == "IAFCell":
        p = dict(r=ones, v_threshold=get("v_th"), v_reset=get("v_reset"), reset_mode=reset,
                 initial="rest")
        return ex.g.add(ex.name(path), "IF", p, [x], shape, origin=path)
    tau_m = _norse_tau(get("tau_mem_inv"), m, path, "tau_mem_inv")
    if name == "LIBoxCell":
        p = dict(tau=tau_m, v_leak=get("v_leak"), r=ones, initial="rest")
        return ex.g.add(ex.name(path), "LI", p, [x], shape, origin=path)
    p = dict(v_threshold=get("v_th"), v_leak=get("v_leak"), v_reset=get("v_reset"), r=ones,
             reset_mode=reset, initial="rest")
    if name == "LIFBoxCell":
        p["tau"] = tau_m
        return ex.g.add(ex.name(path), "LIF", p, [x], shape, origin=path)
    p.update(tau_mem=tau_m, tau_syn=_norse_tau(get("tau_syn_inv"), m, path, "tau_syn_inv"),
             w_in=ones, input_gain="unit")
    return ex.g.add(ex.name(path), "CubaLIF", p, [x], shape, origin=path)


def convert_sinabs(ex, m, path, x):
    """Sinabs IAF -> IF, LIF -> LIF (tau in steps, exact), ExpLeak -> LI; fires on >=, subtract
    (MembraneSubtract) or zero (MembraneReset) reset; norm_input=False -> input_gain unit."""
    shape = ex.g.shapes[x]
    name = type(m).__name__.replace("Squeeze", "")
    _claim(ex, "sinabs", {"from": "sinabs", "dt": np.float64(1.0), "discretization": "exact"},
           m, path)
    if getattr(m, "min_v_mem", None) is not None:
        raise ExportError(f"{_describe(m, path)}: min_v_mem is not supported")
    if getattr(m, "tau_syn", None) is not None:
        raise ExportError(f"{_describe(m, path)}: tau_syn (synaptic current) is not supported")
    ones = np.ones(shape, np.float32)
    gain = "nir" if getattr(m, "norm_input", name == "LIF") else "unit"
    if name == "ExpLeak":
        tau = _per_neuron(m.tau_mem, shape, "tau_mem", m, path)
        p = dict(tau=tau, v_leak=np.zeros(shape, np.float32), r=ones, input_gain=gain)
        return ex.g.add(ex.name(path), "LI", p, [x], shape, origin=path)
    spike_fn = getattr(getattr(m, "spike_fn", None), "__name__",
                       type(getattr(m, "spike_fn", None)).__name__)
    if spike_fn not in ("SingleSpike", "MultiSpike", "NoneType"):
        raise ExportError(f"{_describe(m, path)}: spike_fn {spike_fn} is not supported")
    if spike_fn == "MultiSpike":
        warnings.warn(f"{_describe(m, path)}: MultiSpike emits floor(v/threshold) spikes a step; "
                      "ternion emits at most one (the same while v stays below 2 thresholds)")
    reset_fn = getattr(m, "reset_fn", None)
    rname = type(reset_fn).__name__
    p = dict(v_threshold=_per_neuron(m.spike_threshold, shape, "spike_threshold", m, path),
             compare=">=")
    if rname == "MembraneReset":
        p.update(reset_mode="zero",
                 v_reset=np.full(shape, float(getattr(reset_fn, "reset_value", 0.0)), np.float32))
    elif rname in ("MembraneSubtract", "NoneType"):
        if getattr(reset_fn, "subtract_value", None) is not None:
            raise ExportError(f"{_describe(m, path)}: MembraneSubtract(subtract_value) is not "
                              "supported (the threshold is subtracted)")
        p.update(reset_mode="subtract", v_reset=np.zeros(shape, np.float32))
    else:
        raise ExportError(f"{_describe(m, path)}: reset_fn {rname} is not supported")
    if name == "IAF":
        p["r"] = ones
        return ex.g.add(ex.name(path), "IF", p, [x], shape, origin=path)
    p.update(tau=_per_neuron(m.tau_mem, shape, "tau_mem", m, path),
             v_leak=np.zeros(shape, np.float32), r=ones, input_gain=gain)
    return ex.g.add(ex.name(path), "LIF", p, [x], shape, origin=path)


CONVERTERS = {"snntorch": convert_snntorch, "norse": convert_norse, "sinabs": convert_sinabs}
