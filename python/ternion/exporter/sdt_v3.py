"""The official Spike-driven Transformer V3 / E-SpikeFormer (Yao et al., "Scaling Spike-driven
Transformer with Efficient Spike Firing Approximation Training"; github.com/BICLab/
Spike-Driven-Transformer-V3, SDT_V3/Classification/Model_Base/models.py:
Spiking_vit_MetaFormer_Spike_SepConv and its parts), recognised by attribute names like the
other converters.

What the official forward computes (x: [B, C, H, W], one step: T = 1). Its neuron is MultiSpike,
s = round(clamp(x, min_value, max_value)) / Norm (max_value D = 4 and Norm = D by default,
Norm = 1 before the head), and every MultiSpike sits before the convolution it feeds, so the
residual stream carries BatchNorm outputs:
  MS_DownSampling      BN(conv(x)), with a MultiSpike first except in the first one
  SepConv_Spike        BN(pw2(MS(BN(dw(MS(BN(pw1(MS(x)))))))))   (dw: depthwise, groups = C)
  MS_ConvBlock_*       x = x + SepConv(x); x = x + BN(conv3x3(MS(BN(conv3x3(MS(x))))))
  MS_Attention_linear  s = MS(x); Q, K, V = MS(BN(conv1x1(s))) (V lamda_ratio times wider);
                       per head y = MS((Q K^T) V * 2 / sqrt(C / heads)); BN(conv1x1(y))
  MS_MLP               BN(conv1(MS(BN(conv1(MS(x))))))   (kernel-1 Conv1d on the tokens)
  MS_Block_Spike_SepConv x = x + SepConv_Spike(x); x = x + attn(x); x = x + mlp(x)
  the model            the stages in their fixed order, mean over tokens, MS(Norm 1), head

In ternion: ternion.MultiSpike emits the integer count k (not k / Norm), and the 1/Norm moves
into the weights of the layer the count feeds (exact for a power-of-two Norm: each product
k * (w / Norm) is bit for bit (k / Norm) * w), so a synaptic layer counts |k| ACs per synapse:
the k binary spikes of the D virtual steps that execute the integer spike spike-driven. The
attention is one ternion.MultiSpikeAttention node (Q/K/V projections, their MultiSpikes, the
exact integer product, the output MultiSpike, with 1/Norm^3 inside its `scale`); the stream
stays [C, H, W] (Conv2d, ternion.BatchNorm or folded, ternion.Identity sums), the attention and
the MLP run on tokens (ternion.Tokens in, back to [C, H, W] by moving values only)."""
from typing import Callable, NamedTuple

import numpy as np

from . import converters as cv
from .graph import ExportError
from .qkformer import to_image
from .sdt import join, pointwise

STAGES = ("downsample1_1", "ConvBlock1_1", "downsample1_2", "ConvBlock1_2", "downsample2",
          "ConvBlock2_1", "ConvBlock2_2", "downsample3", "block3", "downsample4", "block4")
ATTN = ("head_spike", "q_conv", "q_spike", "k_conv", "k_spike", "v_conv", "v_spike",
        "attn_spike", "proj_conv", "num_heads", "scale")


def is_multispike(m):
    return all(hasattr(m, a) for a in ("min_value", "max_value", "Norm")) and \
        hasattr(m, "spike_function")


def is_sdt_v3(m):
    return all(hasattr(m, a) for a in ("downsample1_1", "block3", "head", "spike")) and \
        is_multispike(m.spike)


def _scalar(m, path, name):
    v = getattr(m, name)
    if hasattr(v, "detach"):
        v = v.detach()
        if v.numel() != 1:
            raise ExportError(f"{cv.describe(m, path)}: {name} must be one number")
        v = v.item()
    return float(v)


def spike_levels(m, path):
    """(min_value, max_value, Norm) of a MultiSpike, checked: integer levels with 0 among them,
    at most 16 (the event-cost rule's small integers), Norm a power of two."""
    if not is_multispike(m):
        raise ExportError(f"{cv.describe(m, path)}: expected SDT V3's MultiSpike neuron "
                          "(min_value, max_value, Norm)")
    lo, hi, norm = (_scalar(m, path, a) for a in ("min_value", "max_value", "Norm"))
    if lo != int(lo) or hi != int(hi) or not -16 <= lo <= 0 < hi <= 16:
        raise ExportError(f"{cv.describe(m, path)}: levels {lo}..{hi} must be integers with "
                          "min_value <= 0 < max_value <= 16")
    if norm <= 0 or np.log2(norm) != int(np.log2(norm)):
        raise ExportError(f"{cv.describe(m, path)}: Norm {norm} is not a power of two (the "
                          "1/Norm moved into the next weights is exact only for those)")
    return int(lo), int(hi), norm


def multispike(ex, m, path, x):
    """A ternion.MultiSpike node; returns (node, 1/Norm): the factor the consumer's weights take."""
    lo, hi, norm = spike_levels(m, path)
    y = ex.g.add(ex.name(path), "ternion.MultiSpike",
                 dict(min_value=np.float64(lo), max_value=np.float64(hi)), [x], ex.g.shapes[x],
                 origin=path)
    return y, 1.0 / norm


class Neurons(NamedTuple):
    """Which neurons a MetaFormer-style model (SDT V3, and V2 in sdt_v2.py) puts before its
    convolutions: the stem of their attribute names (V3's spike1, encode_spike, fc1_spike; V2's
    lif1, encode_lif, fc1_lif) and fire(ex, module, path, x) -> (node, the factor the weights
    of the layer it feeds take)."""
    tag: str
    fire: Callable


MULTISPIKE = Neurons("spike", multispike)


def _scale_weights(ex, node, scale):
    if scale != 1.0:
        p = ex.g.nodes[node][1]
        p["weight"] = (p["weight"].astype(np.float64) * scale).astype(np.float32)


def conv(ex, c, bn, path, x, scale, bn_path):
    """Conv2d (+ BatchNorm folded, or a ternion.BatchNorm) whose input is scaled by `scale`."""
    if not cv.is_conv(c, 2):
        raise ExportError(f"{cv.describe(c, path)}: expected a Conv2d")
    if bn is not None and not cv.is_bn(bn):
        raise ExportError(f"{cv.describe(bn, bn_path)}: expected a BatchNorm2d after {path}")
    y = cv.conv_node(ex, c, path, x, bn=bn, bn_path=bn_path)
    node = y if ex.g.nodes[y][0] == "Conv2d" else next(s for s, t in ex.g.edges if t == y)
    _scale_weights(ex, node, scale)
    return y


def conv_bn(ex, seq, path, x, scale):
    """nn.Sequential(Conv2d, BatchNorm2d), as SepConv_Spike and the attention hold them."""
    if len(seq) != 2:
        raise ExportError(f"{cv.describe(seq, path)}: expected Sequential(Conv2d, BatchNorm2d)")
    return conv(ex, seq[0], seq[1], f"{path}.0", x, scale, f"{path}.1")


def affine(ex, c, bn, path, x, scale):
    """A 1x1 convolution + BatchNorm on tokens [N, C]: an Affine over channels (the BatchNorm
    folded or a ternion.BatchNorm of PyTorch's contiguous "fma" form)."""
    w, b, unfolded = pointwise(ex, c, bn, path)
    n, d = ex.g.shapes[x]
    if d != w.shape[1]:
        raise ExportError(f"{cv.describe(c, path)}: expects {w.shape[1]} channels, gets {d}")
    p = dict(weight=w) if b is None else dict(weight=w, bias=b)
    y = ex.g.add(ex.name(path), "Linear" if b is None else "Affine", p, [x], (n, w.shape[0]),
                 origin=path)
    _scale_weights(ex, y, scale)
    if unfolded is None:
        return y
    return cv.bn_node(ex, bn, path.rsplit("_conv", 1)[0] + "_bn", y, "fma", -1)


def tokens(ex, path, x):
    c, h, w = ex.g.shapes[x]
    return ex.g.add(ex.name(f"{path}.tokens"), "ternion.Tokens", {}, [x], (h * w, c),
                    origin=f"{path}.tokens")


def convert_downsampling(ex, m, path, x, nk=MULTISPIKE):
    if not (hasattr(m, "encode_conv") and hasattr(m, "encode_bn")):
        raise ExportError(f"{cv.describe(m, path)}: not an MS_DownSampling (encode_conv, "
                          "encode_bn)")
    scale = 1.0
    sp = f"encode_{nk.tag}"
    if hasattr(m, sp):
        x, scale = nk.fire(ex, getattr(m, sp), f"{path}.{sp}", x)
    return conv(ex, m.encode_conv, m.encode_bn, f"{path}.encode_conv", x, scale,
                f"{path}.encode_bn")


def convert_sepconv(ex, m, path, x, nk=MULTISPIKE):
    """SepConv_Spike (a MultiSpike before each of its three conv+BN pairs) or SepConv (neurons
    before pwconv1 and the depthwise conv; the depthwise conv has no BatchNorm and feeds pwconv2
    directly: V3's with MultiSpikes spike1/spike2, V2's with LIFs lif1/lif2)."""
    n1, n2 = f"{nk.tag}1", f"{nk.tag}2"
    if not all(hasattr(m, a) for a in (n1, "pwconv1", n2, "dwconv", "pwconv2")):
        raise ExportError(f"{cv.describe(m, path)}: not a SepConv ({n1}, pwconv1, {n2}, dwconv, "
                          "pwconv2)")
    s, sc = nk.fire(ex, getattr(m, n1), f"{path}.{n1}", x)
    if nk is MULTISPIKE and hasattr(m, "spike3"):
        y = conv_bn(ex, m.pwconv1, f"{path}.pwconv1", s, sc)
        s, sc = multispike(ex, m.spike2, f"{path}.spike2", y)
        y = conv_bn(ex, m.dwconv, f"{path}.dwconv", s, sc)
        s, sc = multispike(ex, m.spike3, f"{path}.spike3", y)
        return conv_bn(ex, m.pwconv2, f"{path}.pwconv2", s, sc)
    if not all(hasattr(m, a) for a in ("bn1", "bn2")):
        raise ExportError(f"{cv.describe(m, path)}: not a SepConv or SepConv_Spike")
    y = conv(ex, m.pwconv1, m.bn1, f"{path}.pwconv1", s, sc, f"{path}.bn1")
    s, sc = nk.fire(ex, getattr(m, n2), f"{path}.{n2}", y)
    y = conv(ex, m.dwconv, None, f"{path}.dwconv", s, sc, None)
    return conv(ex, m.pwconv2, m.bn2, f"{path}.pwconv2", y, 1.0, f"{path}.bn2")


def convert_conv_block(ex, m, path, x, nk=MULTISPIKE):
    """MS_ConvBlock / MS_ConvBlock_spike_SepConv: x + Conv(x), then + the two 3x3 conv+BN."""
    n1, n2 = f"{nk.tag}1", f"{nk.tag}2"
    if not all(hasattr(m, a) for a in ("Conv", n1, "conv1", "bn1", n2, "conv2", "bn2")):
        raise ExportError(f"{cv.describe(m, path)}: not an MS_ConvBlock (Conv, {n1}, conv1, "
                          f"bn1, {n2}, conv2, bn2)")
    x = join(ex, f"{path}.res1", [x, convert_sepconv(ex, m.Conv, f"{path}.Conv", x, nk)])
    s, sc = nk.fire(ex, getattr(m, n1), f"{path}.{n1}", x)
    y = conv(ex, m.conv1, m.bn1, f"{path}.conv1", s, sc, f"{path}.bn1")
    s, sc = nk.fire(ex, getattr(m, n2), f"{path}.{n2}", y)
    y = conv(ex, m.conv2, m.bn2, f"{path}.conv2", s, sc, f"{path}.bn2")
    return join(ex, f"{path}.res2", [x, y])


def _projection(ex, m, path, name, scale, p):
    seq = getattr(m, f"{name}_conv")
    if len(seq) != 2:
        raise ExportError(f"{cv.describe(seq, f'{path}.{name}_conv')}: expected "
                          "Sequential(Conv2d 1x1, BatchNorm2d)")
    w, b, unfolded = pointwise(ex, seq[0], seq[1], f"{path}.{name}_conv.0")
    p[f"{name}_weight"] = (w.astype(np.float64) * scale).astype(np.float32)
    if b is not None:
        p[f"{name}_bias"] = b
    if unfolded is not None:
        p.update({f"{name}_bn_{k}": v for k, v in unfolded.items()}, **{f"{name}_bn_form": "fma"})


def convert_attention(ex, m, path, x):
    """MS_Attention_linear -> head_spike (ternion.MultiSpike), ternion.Tokens,
    ternion.MultiSpikeAttention, the projection (Affine + BatchNorm) and back to [C, H, W]."""
    if not all(hasattr(m, a) for a in ATTN):
        if all(hasattr(m, a) for a in ("q_conv", "k_conv", "v_conv")) and \
                type(m.q_conv[0]).__name__ == "RepConv":
            raise ExportError(f"{cv.describe(m, path)}: the RepConv attention "
                              "(MS_Attention_RepConv_qkv_id, BNAndPadLayer) is not supported")
        raise ExportError(f"{cv.describe(m, path)}: not an MS_Attention_linear (needs "
                          f"{', '.join(ATTN)})")
    c, h, w = ex.g.shapes[x]
    s, sc = multispike(ex, m.head_spike, f"{path}.head_spike", x)
    t = tokens(ex, path, s)
    p = {"heads": np.int64(m.num_heads)}
    for nm in ("q", "k", "v"):
        _projection(ex, m, path, nm, sc, p)
    levels = [spike_levels(getattr(m, f"{nm}_spike"), f"{path}.{nm}_spike")
              for nm in ("q", "k", "v", "attn")]
    if any(lv[:2] != levels[0][:2] for lv in levels):
        raise ExportError(f"{cv.describe(m, path)}: q_spike, k_spike, v_spike and attn_spike "
                          "must have the same levels (one set in ternion.MultiSpikeAttention)")
    lo, hi = levels[0][:2]
    nq, nk, nv = (lv[2] for lv in levels[:3])
    # PyTorch multiplies the exact (Q/nq K^T/nk V/nv) by float32(scale * 2): one rounding, the
    # same as float32(Q K^T V) times float32(scale * 2) / (nq nk nv), a power of two apart.
    factor = float(np.float32(float(m.scale) * 2)) / (nq * nk * nv)
    p.update(min_value=np.float64(lo), max_value=np.float64(hi), scale=np.float64(factor),
             association="auto")
    d, dv = p["q_weight"].shape[0], p["v_weight"].shape[0]
    heads = int(m.num_heads)
    if p["q_weight"].shape[1] != c or d % heads or dv % heads or p["k_weight"].shape[0] != d:
        raise ExportError(f"{cv.describe(m, path)}: dims q {d}, v {dv}, heads {heads}, input {c}")
    a = ex.g.add(ex.name(path), "ternion.MultiSpikeAttention", p, [t], (h * w, dv), origin=path)
    proj = m.proj_conv
    if len(proj) != 2:
        raise ExportError(f"{cv.describe(proj, f'{path}.proj_conv')}: expected "
                          "Sequential(Conv2d 1x1, BatchNorm2d)")
    y = affine(ex, proj[0], proj[1], f"{path}.proj_conv.0", a, 1.0 / levels[3][2])
    return to_image(ex, f"{path}.out", y, (h, w))


def convert_mlp(ex, m, path, x, nk=MULTISPIKE):
    """MS_MLP: neuron, kernel-1 conv + BN on tokens, neuron, conv + BN, back to [C, H, W]."""
    n1, n2 = f"fc1_{nk.tag}", f"fc2_{nk.tag}"
    names = (n1, "fc1_conv", "fc1_bn", n2, "fc2_conv", "fc2_bn")
    if not all(hasattr(m, a) for a in names):
        raise ExportError(f"{cv.describe(m, path)}: not an MS_MLP (needs {', '.join(names)})")
    _, h, w = ex.g.shapes[x]
    s, sc = nk.fire(ex, getattr(m, n1), f"{path}.{n1}", x)
    y = affine(ex, m.fc1_conv, m.fc1_bn, f"{path}.fc1_conv", tokens(ex, path, s), sc)
    s, sc = nk.fire(ex, getattr(m, n2), f"{path}.{n2}", y)
    y = affine(ex, m.fc2_conv, m.fc2_bn, f"{path}.fc2_conv", s, sc)
    return to_image(ex, f"{path}.out", y, (h, w))


def convert_block(ex, m, path, x):
    """MS_Block_Spike_SepConv: x + conv(x), x + attn(x), x + mlp(x)."""
    if not all(hasattr(m, a) for a in ("conv", "attn", "mlp")):
        if hasattr(m, "attn") and hasattr(m, "mlp"):
            raise ExportError(f"{cv.describe(m, path)}: MS_Block (the RepConv attention) is not "
                              "supported; MS_Block_Spike_SepConv is")
        raise ExportError(f"{cv.describe(m, path)}: not an MS_Block_Spike_SepConv (conv, attn, "
                          "mlp)")
    x = join(ex, f"{path}.res1", [x, convert_sepconv(ex, m.conv, f"{path}.conv", x)])
    x = join(ex, f"{path}.res2", [x, convert_attention(ex, m.attn, f"{path}.attn", x)])
    return join(ex, f"{path}.res3", [x, convert_mlp(ex, m.mlp, f"{path}.mlp", x)])


def convert_sdt_v3(ex, m, path, x):
    """Spiking_vit_MetaFormer_Spike_SepConv.forward at T = 1 (direct encoding, one step): the
    stages in forward_features' order (those the module has), the mean over tokens, the
    MultiSpike `spike` and the head."""
    if len(ex.g.shapes[x]) != 3:
        raise ExportError(f"{cv.describe(m, path)}: example_input must be images [B, C, H, W] "
                          f"(got input shape {ex.g.shapes[x]})")
    ex.timesteps = 1
    ex.encoding = "direct"
    pre = f"{path}." if path else ""
    for name in STAGES:
        if not hasattr(m, name):
            continue
        stage = getattr(m, name)
        if name.startswith("downsample"):
            x = convert_downsampling(ex, stage, f"{pre}{name}", x)
            continue
        for i, blk in enumerate(stage):
            p = f"{pre}{name}.{i}"
            x = convert_block(ex, blk, p, x) if hasattr(blk, "attn") else \
                convert_conv_block(ex, blk, p, x)
    known = set(STAGES) | {"head", "spike"}
    extra = [n for n, _ in m.named_children() if n not in known]
    if extra:
        raise ExportError(f"{cv.describe(m, path)}: modules outside the official forward: "
                          f"{', '.join(extra)}")
    mean = ex.g.add(ex.name(f"{pre}mean"), "ternion.TokenMean", {}, [tokens(ex, f"{pre}mean", x)],
                    ex.g.shapes[x][:1], origin=path)
    s, sc = multispike(ex, m.spike, f"{pre}spike", mean)
    if not cv.is_linear(m.head):
        raise ExportError(f"{cv.describe(m.head, f'{pre}head')}: expected an nn.Linear head")
    y = cv.linear_node(ex, m.head, f"{pre}head", s)
    _scale_weights(ex, y, sc)
    return y
