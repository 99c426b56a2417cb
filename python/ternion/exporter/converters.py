"""Converters from PyTorch modules to ternion nodes, dispatched by class name and attributes
(duck typing: SpikingJelly and the Spikformer code need not be importable).

Each converter takes the exporter, the module, its path (e.g. "block.2.attn") and the name of
the node feeding it, adds nodes to the graph and returns the name of its last node."""
import math

import numpy as np

from .graph import ExportError, f32, fold_bn

# SpikingJelly's neurons, clock_driven (0.0.0.0.12) and activation_based (0.0.0.0.14) names.
LIF_NAMES = {"LIFNode", "MultiStepLIFNode"}
PLIF_NAMES = {"ParametricLIFNode", "MultiStepParametricLIFNode"}
IF_NAMES = {"IFNode", "MultiStepIFNode"}
# Containers that apply their children in order, whatever the step mode.
SEQUENTIAL_NAMES = {"Sequential", "SeqToANNContainer", "MultiStepContainer", "StepModeContainer"}
# Modules that are the identity at inference.
IDENTITY_NAMES = {"Identity", "Dropout", "Dropout1d", "Dropout2d", "DropPath", "MultiStepDropout"}


def cls(m):
    return type(m).__name__


def describe(m, path):
    return f"{path or '<root>'} ({type(m).__module__}.{cls(m)})"


def i64(v):
    return np.asarray(v, dtype=np.int64)


def pair(v):
    return (int(v), int(v)) if isinstance(v, int) else tuple(int(a) for a in v)


def is_conv(m, dims=None):
    names = {"Conv1d", "Conv2d"} if dims is None else {f"Conv{dims}d"}
    return any(c.__name__ in names for c in type(m).__mro__) and hasattr(m, "weight")


def is_linear(m):
    return any(c.__name__ == "Linear" for c in type(m).__mro__) and hasattr(m, "weight") \
        and getattr(m, "weight").dim() == 2


def is_bn(m):
    return any(c.__name__ in ("BatchNorm1d", "BatchNorm2d") for c in type(m).__mro__) \
        and hasattr(m, "running_mean")


def mro_names(m):
    return {c.__name__ for c in type(m).__mro__}


def bn_params(bn, prefix=""):
    """An eval-mode BatchNorm's datasets, unfolded: `<prefix>running_mean`, `running_var`,
    `weight`, `bias` (float32, as torch holds them) and `eps`."""
    c = bn.num_features
    p = {prefix + "running_mean": f32(bn.running_mean) if bn.running_mean is not None
         else np.zeros(c, np.float32),
         prefix + "running_var": f32(bn.running_var) if bn.running_var is not None
         else np.ones(c, np.float32),
         prefix + "eps": np.float64(bn.eps)}
    if getattr(bn, "weight", None) is not None:
        p[prefix + "weight"] = f32(bn.weight)
    if getattr(bn, "bias", None) is not None:
        p[prefix + "bias"] = f32(bn.bias)
    return p


def bn_node(ex, bn, path, x, form, axis):
    """A ternion.BatchNorm node (the BatchNorm kept unfolded) over `axis` of x's shape. `form`
    is how PyTorch's CPU kernel rounds it where the BatchNorm sits: "fma" for a contiguous input
    (after a Conv or a Linear on [batch, features]), "normalize" for a strided one (Spikformer's
    BatchNorm1d on transposed tokens)."""
    p = bn_params(bn)
    p.update(form=form, axis=np.int64(axis))
    return ex.g.add(ex.name(path), "ternion.BatchNorm", p, [x], ex.g.shapes[x], origin=path)


# ----------------------------------------------------------------------------------------------
# neurons


def neuron_params(m, path):
    """ternion.SJLIF / ternion.PLIF / IF parameters of a SpikingJelly neuron module."""
    name = cls(m)
    vth = getattr(m, "v_threshold", 1.0)
    if hasattr(vth, "detach"):
        raise ExportError(f"{describe(m, path)}: a tensor v_threshold is not supported")
    v_reset = getattr(m, "v_reset", 0.0)
    p = dict(v_threshold=np.float64(vth))
    if v_reset is None:
        p.update(v_reset=np.float64(0.0), reset_mode="subtract")
    else:
        p.update(v_reset=np.float64(v_reset), reset_mode="zero")
    if name in IF_NAMES:
        if v_reset not in (None, 0.0):
            raise ExportError(f"{describe(m, path)}: IFNode with v_reset = {v_reset} starts its "
                              "membrane at v_reset; ternion's IF starts at 0 (use v_reset 0 or None)")
        p.update(r=np.float64(1.0), compare=">=")
        return "IF", p
    p["decay_input"] = np.int64(1 if getattr(m, "decay_input", True) else 0)
    if name in PLIF_NAMES:
        # SpikingJelly multiplies by torch's float32 sigmoid(w); ternion computes sigmoid of the
        # stored w in double and rounds. Store the logit of torch's factor so both agree.
        k = float(m.w.detach().float().sigmoid())
        p["w"] = np.float64(plif_w_for(k))
        return "ternion.PLIF", p
    tau = float(m.tau)
    p["tau"] = np.float64(tau)
    if not getattr(m, "decay_input", True):
        p["leak_form"] = lif_leak_form(m)
    return "ternion.SJLIF", p


def lif_leak_form(m):
    """How SpikingJelly's LIF leaks without decay_input, at inference: clock_driven (and
    activation_based's neuronal_charge) take v * (1 - 1/tau) + x when v_reset is 0 or None, else
    v - (v - v_reset) / tau + x; activation_based's eval path (step_mode attribute) takes the
    difference for every hard reset and the scaled form only for soft reset."""
    if m.v_reset is None:
        return "scale"
    if hasattr(m, "step_mode") or m.v_reset != 0.0:
        return "difference"
    return "scale"


def plif_w_for(k):
    """A float64 w whose sigmoid, computed in double and rounded to float32, is exactly k."""
    w = math.log(k / (1.0 - k))
    for _ in range(64):
        got = np.float32(1.0 / (1.0 + math.exp(-w)))
        if got == np.float32(k):
            return w
        w = math.nextafter(w, math.inf if got < k else -math.inf)
    raise ExportError(f"no float64 w gives sigmoid(w) = {k!r} in float32")


def convert_neuron(ex, m, path, x):
    typ, p = neuron_params(m, path)
    return ex.g.add(ex.name(path), typ, p, [x], ex.g.shapes[x], origin=path)


def lif_for_attention(m, path, prefix):
    """The lif_*/attn_* parameters of ternion.SSA/SDSA from a SpikingJelly LIF (hard reset)."""
    if cls(m) not in LIF_NAMES:
        raise ExportError(f"{describe(m, path)}: the attention's neurons must be SpikingJelly "
                          f"LIF nodes (got {cls(m)})")
    if m.v_reset is None:
        raise ExportError(f"{describe(m, path)}: soft reset (v_reset None) inside an attention "
                          "node is not supported by ternion.SSA/SDSA")
    tau = float(m.tau)
    p = {prefix + "tau": np.float64(tau),
         prefix + "decay_input": np.int64(1 if m.decay_input else 0),
         prefix + "v_threshold": np.float64(m.v_threshold),
         prefix + "v_reset": np.float64(m.v_reset)}
    if not m.decay_input:
        # Which of SpikingJelly's two leaks this module takes (the attention nodes' neurons are
        # the rule of a ternion.SJLIF, which honours it).
        p[prefix + "leak_form"] = lif_leak_form(m)
    return p


# ----------------------------------------------------------------------------------------------
# synaptic layers


def conv_node(ex, m, path, x, bn=None, name=None, bn_path=None):
    import torch
    import torch.nn.functional as F

    dims = 2 if is_conv(m, 2) else 1
    if getattr(m, "padding_mode", "zeros") != "zeros":
        raise ExportError(f"{describe(m, path)}: padding_mode {m.padding_mode!r} (only 'zeros')")
    shape = ex.g.shapes[x]
    if len(shape) != dims + 1:
        raise ExportError(f"{describe(m, path)}: input shape {shape} is not [C, ...] of "
                          f"{dims} spatial dims")
    if bn is not None and ex.fold_bn:
        w, b = fold_bn(m.weight, m.bias, bn)
    else:
        w = f32(m.weight)
        b = f32(m.bias) if m.bias is not None else np.zeros(w.shape[0], np.float32)
    pad = m.padding
    p = dict(weight=w, bias=b, groups=np.int64(m.groups))
    if dims == 2:
        p.update(stride=i64(pair(m.stride)), dilation=i64(pair(m.dilation)),
                 input_shape=i64(shape[1:]))
        p["padding"] = pad if isinstance(pad, str) else i64(pair(pad))
        fn = F.conv2d
    else:
        p.update(stride=i64(m.stride[0]), dilation=i64(m.dilation[0]), input_shape=i64(shape[1]))
        p["padding"] = pad if isinstance(pad, str) else i64(pad[0])
        fn = F.conv1d
    with torch.no_grad():
        out = fn(torch.zeros(1, *shape), m.weight.detach().float().cpu(), None, m.stride,
                 m.padding, m.dilation, m.groups).shape[1:]
    y = ex.g.add(name or ex.name(path), f"Conv{dims}d", p, [x], out, origin=path)
    if bn is None or ex.fold_bn:
        return y
    return bn_node(ex, bn, bn_path or f"{path}.bn", y, "fma", 0)


def linear_node(ex, m, path, x, bn=None, name=None, bn_path=None, bn_form="fma"):
    """Linear (+ BatchNorm over its outputs, folded or, with fold_bn=False, a ternion.BatchNorm
    of `bn_form` over the last axis)."""
    shape = ex.g.shapes[x]
    out_f, in_f = m.weight.shape
    if shape[-1] != in_f and int(np.prod(shape)) != in_f:
        raise ExportError(f"{describe(m, path)}: expects {in_f} inputs, gets shape {shape}")
    out_shape = shape[:-1] + (out_f,) if shape[-1] == in_f else (out_f,)
    if bn is not None and ex.fold_bn:
        w, b = fold_bn(m.weight, m.bias, bn)
        return ex.g.add(name or ex.name(path), "Affine", dict(weight=w, bias=b), [x], out_shape,
                        origin=path)
    if m.bias is None:
        y = ex.g.add(name or ex.name(path), "Linear", dict(weight=f32(m.weight)), [x],
                     out_shape, origin=path)
    else:
        y = ex.g.add(name or ex.name(path), "Affine",
                     dict(weight=f32(m.weight), bias=f32(m.bias)), [x], out_shape, origin=path)
    if bn is None:
        return y
    return bn_node(ex, bn, bn_path or f"{path}.bn", y, bn_form, -1)


def pool_node(ex, m, path, x):
    import torch
    import torch.nn.functional as F

    names = mro_names(m)
    shape = ex.g.shapes[x]
    if len(shape) != 3:
        raise ExportError(f"{describe(m, path)}: 2-d pooling needs [C, H, W], got {shape}")
    if getattr(m, "ceil_mode", False):
        raise ExportError(f"{describe(m, path)}: ceil_mode=True is not supported")
    k = pair(m.kernel_size)
    s = pair(m.stride if m.stride is not None else m.kernel_size)
    p = pair(m.padding)
    params = dict(kernel_size=i64(k), stride=i64(s), padding=i64(p))
    with torch.no_grad():
        if "MaxPool2d" in names:
            if pair(m.dilation) != (1, 1) or m.return_indices:
                raise ExportError(f"{describe(m, path)}: dilation/return_indices not supported")
            out = F.max_pool2d(torch.zeros(1, *shape), k, s, p).shape[1:]
            typ = "MaxPool2d"
        else:
            if not m.count_include_pad or m.divisor_override is not None:
                raise ExportError(f"{describe(m, path)}: AvgPool2d needs count_include_pad=True "
                                  "and no divisor_override")
            out = F.avg_pool2d(torch.zeros(1, *shape), k, s, p).shape[1:]
            typ = "AvgPool2d"
    return ex.g.add(ex.name(path), typ, params, [x], out, origin=path)


def flatten_node(ex, m, path, x):
    shape = ex.g.shapes[x]
    start, end = m.start_dim, m.end_dim
    if start == 0 or end == 0:
        raise ExportError(f"{describe(m, path)}: flattening the batch axis is not supported")
    # torch's dims count the batch axis; ternion's do not
    s = start - 1 if start > 0 else start
    e = end - 1 if end > 0 else end
    n = len(shape)
    s2, e2 = s % n, e % n
    out = shape[:s2] + (int(np.prod(shape[s2:e2 + 1])),) + shape[e2 + 1:]
    return ex.g.add(ex.name(path), "Flatten", dict(start_dim=np.int64(s), end_dim=np.int64(e)),
                    [x], out, origin=path)


# ----------------------------------------------------------------------------------------------
# containers


def convert_sequential(ex, m, path, x):
    items = list(m.named_children())
    i = 0
    while i < len(items):
        name, child = items[i]
        cpath = f"{path}.{name}" if path else name
        nxt = items[i + 1][1] if i + 1 < len(items) else None
        if (is_conv(child) or is_linear(child)) and nxt is not None and is_bn(nxt):
            if is_linear(child) and len(ex.g.shapes[x]) != 1 and \
                    ex.g.shapes[x][-1] == child.weight.shape[1] and len(ex.g.shapes[x]) > 1:
                raise ExportError(f"{describe(nxt, cpath)}: BatchNorm after a Linear on "
                                  f"tokens {ex.g.shapes[x]} normalises the wrong axis")
            fn = conv_node if is_conv(child) else linear_node
            x = fn(ex, child, cpath, x, bn=nxt, bn_path=f"{path}.{items[i + 1][0]}" if path
                   else items[i + 1][0])
            i += 2
            continue
        x = ex.convert(child, cpath, x)
        i += 1
    return x


# ----------------------------------------------------------------------------------------------
# Spikformer (official structure: ZK-Zhou/spikformer cifar10/model.py and imagenet/model.py)


def is_spikformer(m):
    return all(hasattr(m, a) for a in ("patch_embed", "block", "head", "T"))


def is_sps(m):
    return hasattr(m, "proj_conv") and hasattr(m, "rpe_conv") and hasattr(m, "rpe_lif")


def is_ssa(m):
    return all(hasattr(m, a) for a in ("q_linear", "k_linear", "v_linear", "attn_lif",
                                        "proj_linear", "num_heads"))


def is_mlp(m):
    return all(hasattr(m, a) for a in ("fc1_linear", "fc1_bn", "fc1_lif", "fc2_linear"))


def is_block(m):
    from .bsa import is_bsa

    return hasattr(m, "attn") and hasattr(m, "mlp") and (is_ssa(m.attn) or is_bsa(m.attn))


def convert_sps(ex, m, path, x):
    """SPS: stages proj_conv{s} + proj_bn{s} + proj_lif{s} (+ maxpool{s}) for s = '', 1, 2, ...,
    then the relative-position residual rpe_lif(rpe_bn(rpe_conv(x))) + x, then tokens."""
    stages = [""] + [str(k) for k in range(1, 16)]
    found = 0
    for s in stages:
        if not hasattr(m, f"proj_conv{s}"):
            if s != "":
                break
            continue
        found += 1
        x = conv_node(ex, getattr(m, f"proj_conv{s}"), f"{path}.proj_conv{s}", x,
                      bn=getattr(m, f"proj_bn{s}"), bn_path=f"{path}.proj_bn{s}")
        x = ex.convert(getattr(m, f"proj_lif{s}"), f"{path}.proj_lif{s}", x)
        if hasattr(m, f"maxpool{s}"):
            x = ex.convert(getattr(m, f"maxpool{s}"), f"{path}.maxpool{s}", x)
    if not found:
        raise ExportError(f"{describe(m, path)}: no proj_conv stage")
    feat = x
    r = conv_node(ex, m.rpe_conv, f"{path}.rpe_conv", x, bn=m.rpe_bn, bn_path=f"{path}.rpe_bn")
    r = ex.convert(m.rpe_lif, f"{path}.rpe_lif", r)
    res = ex.g.add(ex.name(f"{path}.rpe_residual"), "ternion.Identity", {}, [feat, r],
                   ex.g.shapes[feat], origin=path)
    c, h, w = ex.g.shapes[res]
    return ex.g.add(ex.name(f"{path}.tokens"), "ternion.Tokens", {}, [res], (h * w, c),
                    origin=path)


def linbn(ex, lin, bn, path, x, name):
    """Linear + BatchNorm1d over channels (Spikformer transposes tokens for the BN, so PyTorch
    normalises a strided tensor: the "normalize" form)."""
    return linear_node(ex, lin, path, x, bn=bn, name=ex.name(name),
                       bn_path=path.rsplit("_linear", 1)[0] + "_bn", bn_form="normalize")


def ssa_projections(ex, m):
    """Spikformer's {q,k,v}_linear + {q,k,v}_bn as ternion attention parameters."""
    p = {}
    for nm in ("q", "k", "v"):
        lin, bn = getattr(m, f"{nm}_linear"), getattr(m, f"{nm}_bn")
        if ex.fold_bn:
            p[f"{nm}_weight"], p[f"{nm}_bias"] = fold_bn(lin.weight, lin.bias, bn)
            continue
        p[f"{nm}_weight"] = f32(lin.weight)
        if lin.bias is not None:
            p[f"{nm}_bias"] = f32(lin.bias)
        p.update(bn_params(bn, f"{nm}_bn_"))
        p[f"{nm}_bn_form"] = "normalize"  # BatchNorm1d on transposed tokens, as linbn
    return p


def convert_ssa(ex, m, path, x):
    shape = ex.g.shapes[x]
    if len(shape) != 2:
        raise ExportError(f"{describe(m, path)}: SSA needs tokens [N, D], got {shape}")
    p = {"heads": np.int64(m.num_heads), "scale": np.float64(float(m.scale)),
         **ssa_projections(ex, m)}
    lifs = [lif_for_attention(getattr(m, f"{nm}_lif"), f"{path}.{nm}_lif", "lif_")
            for nm in ("q", "k", "v")]
    if not (lifs[0] == lifs[1] == lifs[2]):
        raise ExportError(f"{describe(m, path)}: q_lif, k_lif and v_lif differ; ternion.SSA has "
                          "one set of Q/K/V neuron parameters")
    p.update(lifs[0])
    p.update(lif_for_attention(m.attn_lif, f"{path}.attn_lif", "attn_"))
    d = p["q_weight"].shape[0]
    a = ex.g.add(ex.name(path), "ternion.SSA", p, [x], (shape[0], d), origin=path)
    y = linbn(ex, m.proj_linear, m.proj_bn, f"{path}.proj_linear", a, f"{path}.proj_linear")
    return ex.convert(m.proj_lif, f"{path}.proj_lif", y)


def convert_mlp(ex, m, path, x):
    h = linbn(ex, m.fc1_linear, m.fc1_bn, f"{path}.fc1_linear", x, f"{path}.fc1_linear")
    h = ex.convert(m.fc1_lif, f"{path}.fc1_lif", h)
    y = linbn(ex, m.fc2_linear, m.fc2_bn, f"{path}.fc2_linear", h, f"{path}.fc2_linear")
    return ex.convert(m.fc2_lif, f"{path}.fc2_lif", y)


def convert_block(ex, m, path, x):
    """x = x + attn(x); x = x + mlp(x) (norm1/norm2 exist in the official code but are unused)."""
    from . import bsa

    if bsa.is_bsa(m.attn):
        a = bsa.convert(ex, m.attn, f"{path}.attn", x, "spikformer")
    else:
        a = ex.convert(m.attn, f"{path}.attn", x)
    r1 = ex.g.add(ex.name(f"{path}.res1"), "ternion.Identity", {}, [x, a], ex.g.shapes[x],
                  origin=path)
    y = ex.convert(m.mlp, f"{path}.mlp", r1)
    return ex.g.add(ex.name(f"{path}.res2"), "ternion.Identity", {}, [r1, y], ex.g.shapes[x],
                    origin=path)


def convert_spikformer(ex, m, path, x):
    """Spikformer.forward: repeat the image T times, SPS, blocks, mean over tokens, head of the
    mean over time (ternion: per step; the prediction is the argmax of the sum over steps)."""
    ex.timesteps = int(m.T)
    ex.encoding = "direct"
    x = ex.convert(m.patch_embed, f"{path}.patch_embed" if path else "patch_embed", x)
    blocks = m.block
    bpath = f"{path}.block" if path else "block"
    for i, blk in enumerate(blocks):
        x = ex.convert(blk, f"{bpath}.{i}", x)
    mean = ex.g.add(ex.name("mean"), "ternion.TokenMean", {}, [x], ex.g.shapes[x][1:],
                    origin=path)
    return ex.convert(m.head, f"{path}.head" if path else "head", mean)


# ----------------------------------------------------------------------------------------------
# this repository's DigitsSpikformer (python/ternion/reference/spikformer.py): the bundled BSA/SSA models


def is_digits_spikformer(m):
    return cls(m) == "DigitsSpikformer"


def convert_digits_spikformer(ex, m, path, x):
    from .digits import digits_graph, digits_params

    nodes, edges, meta = digits_graph(digits_params(m), m.kind, m.dim, m.heads, m.depth, m.T,
                                     getattr(m, "image", 8), getattr(m, "pool0", False))
    if ex.g.nodes.keys() - {x}:
        raise ExportError(f"{describe(m, path)}: the DigitsSpikformer must be the whole model")
    ex.g.nodes.clear()
    ex.g.shapes.clear()
    ex.g.edges.clear()
    ex.replace(nodes, edges)
    ex.timesteps = int(m.T)
    ex.encoding = "direct"
    return None  # the graph already ends in its Output node
