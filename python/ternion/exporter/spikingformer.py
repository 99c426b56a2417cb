"""The official Spikingformer (Zhou et al. 2023, "Spikingformer: Spike-driven Residual Learning for
Transformer-based Spiking Neural Network"; github.com/zhouchenlin2096/Spikingformer,
cifar10/model.py and its copies for cifar100, imagenet, cifar10-dvs and dvs128-gesture:
SpikingTokenizer, SpikingSelfAttention, MLP, SpikingTransformer, vit_snn), recognised by
attribute names like the Spikformer and QKFormer converters.

What the official forward computes (x: [T, B, C, H, W]; every LIF a SpikingJelly
MultiStepLIFNode, hard reset to 0, tau 2, or 1.5 in the DVS files). Every neuron sits *before*
the convolution it feeds (pre-activation), so the residual stream carries BatchNorm outputs,
not spikes:
  SpikingTokenizer     x = BN(conv3x3(x)) (block0_conv / proj_conv); then per stage i = 1..4
                       x = BN(conv3x3(maxpool3/2/1(LIF(x)))) (block{i}_* / proj{i}_*; the
                       CIFAR files pool only in stages 3 and 4, the others in all four)
  SpikingSelfAttention s = proj_lif(x); Q, K, V = LIF(BN(conv1d 1x1(s))); per head
                       y = attn_lif(Q K^T V * 0.125) (threshold 0.5); out = proj_bn(proj_conv(y))
  MLP                  BN(conv1x1(mlp2_lif(BN(conv1x1(mlp1_lif(x))))))
  SpikingTransformer   x = x + attn(x); x = x + mlp(x)        (sums of BatchNorm outputs)
  vit_snn              images repeated T times (the DVS files: frames [B, T, C, H, W],
                       permuted); head(mean over time of the mean over tokens)
No neuron runs on a [T*B, ...] tensor, so a batch's samples stay independent.

In ternion: the tokenizer stays [C, H, W] (Conv2d with the BatchNorm folded or a
ternion.BatchNorm node, ternion.SJLIF, MaxPool2d), ternion.Tokens turns its output into [N, C]
tokens, each attention is ternion.SJLIF (proj_lif) -> ternion.SSA -> Affine (proj_conv +
proj_bn), the MLP ternion.SJLIF -> Affine -> ternion.SJLIF -> Affine, and the residuals
ternion.Identity sums feeding the next branch's LIF."""
import numpy as np

from . import bsa
from . import converters as cv
from .graph import ExportError
from .qkformer import _lif, projections
from .sdt import affine, join

ATTN = ("proj_lif", "q_conv", "q_bn", "q_lif", "k_conv", "k_bn", "k_lif", "v_conv", "v_bn",
        "v_lif", "attn_lif", "proj_conv", "proj_bn", "num_heads")
MLP = ("mlp1_lif", "mlp1_conv", "mlp1_bn", "mlp2_lif", "mlp2_conv", "mlp2_bn")
# (first conv, first BN, per stage i: LIF, max-pool, conv, BN) of the two tokenizer layouts
STEMS = (("block0_conv", "block0_bn", "block{}_lif", "block{}_mp", "block{}_conv", "block{}_bn"),
         ("proj_conv", "proj_bn", "proj{}_lif", "maxpool{}", "proj{}_conv", "proj{}_bn"))


def _stem_names(m):
    for names in STEMS:
        if hasattr(m, names[0]) and hasattr(m, names[2].format(1)) and \
                hasattr(m, names[4].format(1)):
            return names
    return None


def is_tokenizer(m):
    return _stem_names(m) is not None and not hasattr(m, "rpe_conv")  # rpe_conv: Spikformer SPS


def is_spikingformer(m):
    return all(hasattr(m, a) for a in ("patch_embed", "block", "head", "T")) and \
        is_tokenizer(m.patch_embed)


def convert_tokenizer(ex, m, path, x):
    """BN(conv(x)), then per stage BN(conv(maxpool(LIF(x)))) (the pool where the module has one),
    then tokens [H*W, C]."""
    conv0, bn0, lif, pool, conv, bn = _stem_names(m)
    x = cv.conv_node(ex, getattr(m, conv0), f"{path}.{conv0}", x, bn=getattr(m, bn0),
                     bn_path=f"{path}.{bn0}")
    i = 1
    while hasattr(m, conv.format(i)):
        names = [n.format(i) for n in (lif, pool, conv, bn)]
        if not all(hasattr(m, n) for n in (names[0], names[2], names[3])):
            raise ExportError(f"{cv.describe(m, path)}: stage {i} needs {names[0]}, {names[2]} "
                              f"and {names[3]}")
        x = _lif(ex, getattr(m, names[0]), f"{path}.{names[0]}", x)
        if hasattr(m, names[1]):
            mp = getattr(m, names[1])
            if "MaxPool2d" not in cv.mro_names(mp):
                raise ExportError(f"{cv.describe(mp, f'{path}.{names[1]}')}: expected a MaxPool2d")
            x = cv.pool_node(ex, mp, f"{path}.{names[1]}", x)
        c = getattr(m, names[2])
        if not cv.is_conv(c, 2) or not cv.is_bn(getattr(m, names[3])):
            raise ExportError(f"{cv.describe(c, f'{path}.{names[2]}')}: expected a Conv2d and "
                              f"a BatchNorm2d {names[3]}")
        x = cv.conv_node(ex, c, f"{path}.{names[2]}", x, bn=getattr(m, names[3]),
                         bn_path=f"{path}.{names[3]}")
        i += 1
    c, h, w = ex.g.shapes[x]
    return ex.g.add(ex.name(f"{path}.tokens"), "ternion.Tokens", {}, [x], (h * w, c),
                    origin=path)


def convert_attention(ex, m, path, x):
    """proj_lif, then ternion.SSA (Q/K/V, attn_lif, the scale), then proj_conv + proj_bn: the
    branch ends in the BatchNorm's output, which the block adds to its input."""
    if bsa.is_bsa(m):
        return bsa.convert(ex, m, path, x, "spikingformer")
    shape = ex.g.shapes[x]
    if not all(hasattr(m, a) for a in ATTN):
        raise ExportError(f"{cv.describe(m, path)}: not a Spikingformer SpikingSelfAttention "
                          f"(needs {', '.join(ATTN)})")
    s = _lif(ex, m.proj_lif, f"{path}.proj_lif", x)
    p = projections(ex, m, path, ("q", "k", "v"), "ternion.SSA")
    # The CIFAR and DVS files multiply by a literal 0.125 after (q @ k^T) @ v; the ImageNet file
    # by self.scale after q @ (k^T @ v). The order changes the count, not the exact result.
    scale = float(getattr(m, "scale", 0.125))
    if scale <= 0 or np.float32(scale) != scale or np.log2(scale) != int(np.log2(scale)):
        raise ExportError(f"{cv.describe(m, path)}: scale {scale} is not a power of two "
                          "(ternion.SSA is exact for those)")
    p.update(scale=np.float64(scale), association="kv" if hasattr(m, "scale") else "qk")
    d = p["q_weight"].shape[0]
    if p["q_weight"].shape[1] != shape[1] or d % int(m.num_heads):
        raise ExportError(f"{cv.describe(m, path)}: dim {d}, heads {m.num_heads}, input {shape}")
    a = ex.g.add(ex.name(path), "ternion.SSA", p, [s], (shape[0], d), origin=path)
    return affine(ex, m.proj_conv, m.proj_bn, f"{path}.proj_conv", a)


def convert_mlp(ex, m, path, x):
    if not all(hasattr(m, a) for a in MLP):
        raise ExportError(f"{cv.describe(m, path)}: not a Spikingformer MLP (needs "
                          f"{', '.join(MLP)})")
    h = _lif(ex, m.mlp1_lif, f"{path}.mlp1_lif", x)
    h = affine(ex, m.mlp1_conv, m.mlp1_bn, f"{path}.mlp1_conv", h)
    h = _lif(ex, m.mlp2_lif, f"{path}.mlp2_lif", h)
    return affine(ex, m.mlp2_conv, m.mlp2_bn, f"{path}.mlp2_conv", h)


def convert_block(ex, m, path, x):
    """SpikingTransformer: x + attn(x), then + mlp (norm1/norm2 are built, never called)."""
    if not (hasattr(m, "attn") and hasattr(m, "mlp")):
        raise ExportError(f"{cv.describe(m, path)}: not a Spikingformer block (attn and mlp)")
    a = convert_attention(ex, m.attn, f"{path}.attn", x)
    x = join(ex, f"{path}.res1", [x, a])
    y = convert_mlp(ex, m.mlp, f"{path}.mlp", x)
    return join(ex, f"{path}.res2", [x, y])


def convert_spikingformer(ex, m, path, x):
    """vit_snn.forward: images repeated T times (direct encoding), or with frames (the DVS
    files; export() set the steps from the example's [B, T, C, H, W]) each step its frame;
    tokenizer, blocks, mean over tokens, head of the mean over time (ternion: the head every
    step, the prediction the argmax of the sum, the same class)."""
    if len(ex.g.shapes[x]) != 3:
        raise ExportError(f"{cv.describe(m, path)}: example_input must be images [B, C, H, W] "
                          f"or frames [B, T, C, H, W] (got input shape {ex.g.shapes[x]})")
    if not ex.frames:
        ex.timesteps = int(m.T)
        ex.encoding = "direct"
    pre = f"{path}." if path else ""
    x = convert_tokenizer(ex, m.patch_embed, f"{pre}patch_embed", x)
    for i, blk in enumerate(m.block):
        x = convert_block(ex, blk, f"{pre}block.{i}", x)
    mean = ex.g.add(ex.name(f"{pre}mean"), "ternion.TokenMean", {}, [x], ex.g.shapes[x][1:],
                    origin=path)
    return ex.convert(m.head, f"{pre}head", mean)
