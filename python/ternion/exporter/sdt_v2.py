"""The official Spike-driven Transformer V2 / Meta-SpikeFormer (Yao et al., ICLR 2024;
github.com/BICLab/Spike-Driven-Transformer-V2, classification/models.py: Spiking_vit_MetaFormer
and its parts), recognised by attribute names like the other converters.

What the official forward computes (x: [T, B, C, H, W], the image repeated T times; every neuron
a SpikingJelly MultiStepLIFNode, binary spikes, hard reset; each sits before the convolution it
feeds, so the residual stream carries BatchNorm outputs: membrane shortcuts):
  MS_DownSampling  BN(conv(x)), with a LIF first except in the first one
  SepConv          BN(pw2(dw(LIF(BN(pw1(LIF(x)))))))   (dw: 7x7 depthwise, no BatchNorm)
  MS_ConvBlock     x = x + SepConv(x); x = x + BN(conv3x3(LIF(BN(conv3x3(LIF(x))))))
  RepConv          BN(pw(dw3x3(pad(BN'(conv1x1(x)))))), where pad surrounds the map with BN''s
                   output for a zero input, beta - mean * gamma / sqrt(var + eps), not with 0
  MS_Attention_RepConv_qkv_id
                   s = LIF(x); Q, K, V = LIF(BN(RepConv(s))); per head
                   y = LIF_0.5(Q (K^T V) * scale) (scale 0.125); out = BN(RepConv(y))
  MS_MLP           BN(conv(LIF(BN(conv(LIF(x))))))   (kernel-1 Conv1d with bias, on tokens)
  MS_Block         x = x + attn(x); x = x + mlp(x)
  the model        the stages in forward_features' order, mean over tokens, LIF, head (plus
                   head_kd, averaged with it, when kd), mean over time

In ternion: the stream stays [C, H, W]. The downsamplings, SepConv, MS_ConvBlock and MS_MLP are
SDT V3's converters (sdt_v3.py) with LIFs (ternion.SJLIF) for its MultiSpikes. A RepConv is
Conv2d 1x1, its BatchNorm (folded or a ternion.BatchNorm), ternion.Pad with the official pad
values, the depthwise Conv2d (padding 0) and the 1x1 Conv2d with the BatchNorms after it. The
attention's three RepConvs run side by side as one stack over 3C channels (1x1 weights
concatenated; the depthwise convolution per channel; the last 1x1 as three groups), so that
ternion.SSA without projections reads Q | K | V's membrane input as [N, 3C] tokens and applies
q_lif/k_lif/v_lif, the exact integer Q (K^T V) and attn_lif itself."""
import numpy as np

from . import converters as cv
from .graph import ExportError, f32
from .qkformer import to_image
from .sdt import join
from .sdt_v3 import STAGES, Neurons, convert_conv_block, convert_downsampling, convert_mlp, \
    tokens

ATTN = ("head_lif", "q_conv", "k_conv", "v_conv", "q_lif", "k_lif", "v_lif", "attn_lif",
        "proj_conv", "num_heads", "scale")


def lif(ex, m, path, x):
    if cv.cls(m) not in cv.LIF_NAMES:
        raise ExportError(f"{cv.describe(m, path)}: SDT V2's neurons must be SpikingJelly LIF "
                          f"nodes (got {cv.cls(m)})")
    return ex.convert(m, path, x), 1.0


LIF = Neurons("lif", lif)


def is_sdt_v2(m):
    return all(hasattr(m, a) for a in ("downsample1_1", "block3", "head", "lif")) and \
        cv.cls(m.lif) in cv.LIF_NAMES


def _f64(t):
    return t.detach().double().cpu().numpy() if hasattr(t, "detach") else np.asarray(t, float)


def pad_values(bn):
    """What the official BNAndPadLayer writes around the map: the BatchNorm's eval output for a
    zero input, in float32 with the official order of operations (product, quotient, difference),
    not BatchNorm's own kernel's."""
    import torch  # torch only where a module is exported: importing ternion does not need it

    with torch.no_grad():
        den = torch.sqrt(bn.running_var + bn.eps)
        if bn.affine:
            v = bn.bias - bn.running_mean * bn.weight / den
        else:
            v = -bn.running_mean / den
    return f32(v)


def _parts(rep, path):
    """A RepConv's (conv1x1, BNAndPadLayer, depthwise conv, conv1x1, BatchNorm2d), checked."""
    body = getattr(rep, "body", None)
    ok = body is not None and len(body) == 3 and cv.is_conv(body[0], 2) and \
        hasattr(body[1], "pad_pixels") and cv.is_bn(getattr(body[1], "bn", None)) and \
        len(getattr(body[2], "_modules", ())) == 3
    if ok:
        dw, pw, bn = body[2]
        ok = cv.is_conv(dw, 2) and cv.is_conv(pw, 2) and cv.is_bn(bn)
    if not ok:
        raise ExportError(f"{cv.describe(rep, path)}: not a RepConv (body: 1x1 Conv2d, "
                          "BNAndPadLayer, Sequential(depthwise Conv2d, 1x1 Conv2d, BatchNorm2d))")
    c1, bp, (dw, pw, bn) = body[0], body[1], body[2]
    for c, p in ((c1, "body.0"), (pw, "body.2.1")):
        if tuple(c.kernel_size) != (1, 1) or tuple(c.stride) != (1, 1) or c.groups != 1 or \
                tuple(cv.pair(c.padding)) != (0, 0):
            raise ExportError(f"{cv.describe(c, f'{path}.{p}')}: expected a 1x1 convolution "
                              "(stride 1, no padding, one group)")
    if dw.groups != dw.in_channels or dw.out_channels != dw.in_channels or \
            isinstance(dw.padding, str) or getattr(dw, "padding_mode", "zeros") != "zeros":
        raise ExportError(f"{cv.describe(dw, f'{path}.body.2.0')}: expected a depthwise "
                          "convolution (groups = channels, numeric zero padding)")
    return c1, bp, dw, pw, bn


def _bias(c):
    return np.zeros(c.out_channels) if c.bias is None else _f64(c.bias)


def _fold(w, b, bns):
    """W and b with the BatchNorms after them folded in, one after the other, in float64."""
    for bn in bns:
        c = w.shape[0]
        mean = _f64(bn.running_mean) if bn.running_mean is not None else np.zeros(c)
        var = _f64(bn.running_var) if bn.running_var is not None else np.ones(c)
        gamma = _f64(bn.weight) if bn.weight is not None else np.ones(c)
        beta = _f64(bn.bias) if bn.bias is not None else np.zeros(c)
        g = gamma / np.sqrt(var + float(bn.eps))
        w = w * g.reshape(-1, 1, 1, 1)
        b = (b - mean) * g + beta
    return w.astype(np.float32), b.astype(np.float32)


class _Stacked:
    """The BatchNorms of stacked parts as one BatchNorm over all their channels (float64 copies
    of their float32 parameters)."""

    def __init__(self, bns, path):
        def cat(attr, dflt):
            return np.concatenate([_f64(getattr(bn, attr)) if getattr(bn, attr) is not None
                                   else np.full(bn.num_features, dflt) for bn in bns])
        eps = {float(bn.eps) for bn in bns}
        if len(eps) != 1:
            raise ExportError(f"{path}: the stacked BatchNorms have different eps {sorted(eps)}")
        self.eps = eps.pop()
        self.running_mean, self.running_var = cat("running_mean", 0.0), cat("running_var", 1.0)
        self.weight, self.bias = cat("weight", 1.0), cat("bias", 0.0)

    def params(self):
        """ternion.BatchNorm's datasets: PyTorch's contiguous ("fma") form over channels."""
        p = {k: getattr(self, k).astype(np.float32)
             for k in ("running_mean", "running_var", "weight", "bias")}
        return dict(p, eps=np.float64(self.eps), form="fma", axis=np.int64(0))


def _conv(ex, path, x, w, b, conv, groups):
    """A Conv2d node with `conv`'s stride, padding and dilation (no bias when b is None)."""
    c, h, wd = ex.g.shapes[x]
    (sh, sw), (ph, pw), (dh, dw) = (cv.pair(conv.stride), cv.pair(conv.padding),
                                    cv.pair(conv.dilation))
    kh, kw = w.shape[2:]
    out = (w.shape[0], (h + 2 * ph - dh * (kh - 1) - 1) // sh + 1,
           (wd + 2 * pw - dw * (kw - 1) - 1) // sw + 1)
    p = dict(weight=w, groups=np.int64(groups), stride=cv.i64((sh, sw)),
             padding=cv.i64((ph, pw)), dilation=cv.i64((dh, dw)), input_shape=cv.i64((h, wd)))
    if b is not None:
        p["bias"] = b
    return ex.g.add(ex.name(path), "Conv2d", p, [x], out, origin=path)


def _stage(ex, path, x, convs, bns, groups):
    """The parts' convolutions stacked (`groups` groups) and the BatchNorm layers after them,
    `bns` = [(module path, [BatchNorm of each part])]: folded, or ternion.BatchNorm nodes."""
    w = np.concatenate([_f64(c.weight) for c in convs])
    b = np.concatenate([_bias(c) for c in convs])
    stacked = [(name, _Stacked(layer, name)) for name, layer in bns]
    if ex.fold_bn and stacked:
        w, b = _fold(w, b, [s for _, s in stacked])
        return _conv(ex, path, x, w, b, convs[0], groups)
    biased = any(c.bias is not None for c in convs)
    y = _conv(ex, path, x, w.astype(np.float32), b.astype(np.float32) if biased else None,
              convs[0], groups)
    for name, s in stacked:
        y = ex.g.add(ex.name(name), "ternion.BatchNorm", s.params(), [y], ex.g.shapes[y],
                     origin=name)
    return y


def repconv(ex, reps, outer, path, x):
    """RepConvs reading the same x, side by side over their stacked channels (one RepConv: the
    plain chain). reps: [(module, path)]; outer: (path, [BatchNorm after each RepConv]) or None;
    the nodes are named after `path` (the RepConv's own path when there is one)."""
    parts = [_parts(r, p) for r, p in reps]
    pads = {int(bp.pad_pixels) for _, bp, _, _, _ in parts}
    if len(pads) != 1:
        raise ExportError(f"{path}: the RepConvs pad by {sorted(pads)} pixels")
    y = _stage(ex, f"{path}.body.0", x, [p[0] for p in parts],
               [(f"{path}.body.1", [p[1].bn for p in parts])], 1)
    pad = pads.pop()
    if pad > 0:
        vals = np.concatenate([pad_values(p[1].bn) for p in parts])
        c, h, w = ex.g.shapes[y]
        y = ex.g.add(ex.name(f"{path}.body.1.pad"), "ternion.Pad",
                     dict(padding=cv.i64((pad, pad)), value=vals), [y],
                     (c, h + 2 * pad, w + 2 * pad), origin=f"{path}.body.1")
    y = _stage(ex, f"{path}.body.2.0", y, [p[2] for p in parts], [], ex.g.shapes[y][0])
    bns = [(f"{path}.body.2.2", [p[4] for p in parts])]
    if outer is not None:
        bns.append(outer)
    return _stage(ex, f"{path}.body.2.1", y, [p[3] for p in parts], bns, len(parts))


def _sequential_repconv(m, path, name):
    """q_conv, k_conv, v_conv, proj_conv: Sequential(RepConv, BatchNorm2d) -> (RepConv, BN)."""
    seq = getattr(m, name)
    if len(getattr(seq, "_modules", ())) != 2 or not cv.is_bn(seq[1]):
        raise ExportError(f"{cv.describe(seq, f'{path}.{name}')}: expected Sequential(RepConv, "
                          "BatchNorm2d)")
    return seq[0], seq[1]


def attention_params(m, path, dim):
    """ternion.SSA's parameters without projections: q_lif (k_lif, v_lif equal) and attn_lif."""
    lifs = [cv.lif_for_attention(getattr(m, f"{nm}_lif"), f"{path}.{nm}_lif", "lif_")
            for nm in ("q", "k", "v")]
    if not lifs[0] == lifs[1] == lifs[2]:
        raise ExportError(f"{cv.describe(m, path)}: q_lif, k_lif and v_lif differ; ternion.SSA "
                          "has one set of Q/K/V neuron parameters")
    heads = int(m.num_heads)
    if dim % heads:
        raise ExportError(f"{cv.describe(m, path)}: {heads} heads do not divide dim {dim}")
    p = dict(lifs[0], dim=np.int64(dim), heads=np.int64(heads), scale=np.float64(float(m.scale)),
             association="kv")  # the official order, q @ (k^T @ v)
    p.update(cv.lif_for_attention(m.attn_lif, f"{path}.attn_lif", "attn_"))
    return p


def convert_attention(ex, m, path, x):
    """MS_Attention_RepConv_qkv_id -> head_lif, the stacked Q|K|V RepConvs + BatchNorms,
    ternion.Tokens, ternion.SSA without projections (q/k/v_lif, Q (K^T V) * scale, attn_lif),
    back to [C, H, W], the proj_conv RepConv + BatchNorm."""
    if not all(hasattr(m, a) for a in ATTN):
        raise ExportError(f"{cv.describe(m, path)}: not an MS_Attention_RepConv_qkv_id (needs "
                          f"{', '.join(ATTN)})")
    c, h, w = ex.g.shapes[x]
    s, _ = lif(ex, m.head_lif, f"{path}.head_lif", x)
    qkv = [_sequential_repconv(m, path, f"{nm}_conv") for nm in ("q", "k", "v")]
    if any(r.body[2][1].out_channels != c for r, _ in qkv):
        raise ExportError(f"{cv.describe(m, path)}: Q, K and V must keep the {c} channels")
    y = repconv(ex, [(r, f"{path}.{nm}_conv.0") for (r, _), nm in zip(qkv, "qkv")],
                (f"{path}.qkv_conv.1", [bn for _, bn in qkv]), f"{path}.qkv_conv.0", s)
    a = ex.g.add(ex.name(path), "ternion.SSA", attention_params(m, path, c),
                 [tokens(ex, f"{path}.qkv_conv", y)], (h * w, c), origin=path)
    y = to_image(ex, f"{path}.out", a, (h, w))
    rep, bn = _sequential_repconv(m, path, "proj_conv")
    return repconv(ex, [(rep, f"{path}.proj_conv.0")], (f"{path}.proj_conv.1", [bn]),
                   f"{path}.proj_conv.0", y)


def convert_block(ex, m, path, x):
    """MS_Block: x + attn(x), then + mlp(x)."""
    if not (hasattr(m, "attn") and hasattr(m, "mlp")):
        raise ExportError(f"{cv.describe(m, path)}: not an MS_Block (attn, mlp)")
    if hasattr(m, "conv"):
        raise ExportError(f"{cv.describe(m, path)}: a block with a SepConv before its attention "
                          "(SDT V3's MS_Block_Spike_SepConv) in a V2 model is not supported")
    x = join(ex, f"{path}.res1", [x, convert_attention(ex, m.attn, f"{path}.attn", x)])
    return join(ex, f"{path}.res2", [x, convert_mlp(ex, m.mlp, f"{path}.mlp", x, LIF)])


def _head(ex, m, pre, x):
    """Mean over tokens, the LIF, the head; with kd, head_kd beside it: PyTorch averages the
    two, ternion sums them (the same argmax)."""
    mean = ex.g.add(ex.name(f"{pre}mean"), "ternion.TokenMean", {}, [tokens(ex, f"{pre}mean", x)],
                    ex.g.shapes[x][:1], origin=f"{pre}mean")
    s, _ = lif(ex, m.lif, f"{pre}lif", mean)
    heads = ["head"] + (["head_kd"] if getattr(m, "kd", False) else [])
    ys = []
    for name in heads:
        if not cv.is_linear(getattr(m, name)):
            raise ExportError(f"{cv.describe(getattr(m, name), pre + name)}: expected an "
                              "nn.Linear head")
        ys.append(cv.linear_node(ex, getattr(m, name), f"{pre}{name}", s))
    return ys[0] if len(ys) == 1 else join(ex, f"{pre}head_sum", ys)


def convert_sdt_v2(ex, m, path, x):
    """Spiking_vit_MetaFormer.forward: the image repeated T times (direct encoding), the stages
    in forward_features' order (those the module has), the mean over tokens, lif and the head;
    PyTorch averages the head over time, ternion predicts the argmax of the sum (the same)."""
    if len(ex.g.shapes[x]) != 3:
        raise ExportError(f"{cv.describe(m, path)}: example_input must be images [B, C, H, W] "
                          f"(got input shape {ex.g.shapes[x]})")
    ex.timesteps = int(getattr(m, "T", 1))
    ex.encoding = "direct"
    pre = f"{path}." if path else ""
    known = set(STAGES) | {"head", "head_kd", "lif"}
    extra = [n for n, _ in m.named_children() if n not in known]
    if extra:
        raise ExportError(f"{cv.describe(m, path)}: modules outside the official forward: "
                          f"{', '.join(extra)}")
    for name in (n for n in STAGES if hasattr(m, n)):
        stage = getattr(m, name)
        if name.startswith("downsample"):
            x = convert_downsampling(ex, stage, f"{pre}{name}", x, LIF)
            continue
        for i, blk in enumerate(stage):
            p = f"{pre}{name}.{i}"
            x = convert_block(ex, blk, p, x) if hasattr(blk, "attn") else \
                convert_conv_block(ex, blk, p, x, LIF)
    return _head(ex, m, pre, x)
