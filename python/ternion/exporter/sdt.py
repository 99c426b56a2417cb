"""The official Spike-driven Transformer v1 (BICLab/Spike-Driven-Transformer, model/spikeformer.py,
module/sps.py, module/ms_conv.py), recognised by attribute names like the Spikformer converters.

What the official forward computes (x: [T, B, C, H, W], the image repeated T times):
  MS_SPS      three stages conv3x3 + BN -> LIF (-> max-pool 3/2/1 where pooling_stat has a 1);
              a fourth conv3x3 + BN (-> max-pool) is x_feat, not spiked; then
              rpe_bn(rpe_conv(LIF(x_feat))) + x_feat. The result is a membrane-level stream.
  MS_SSA_Conv s = shortcut_lif(x); Q, K, V = LIF(BN(conv1x1(s))); per channel
              m = talking_heads_lif(sum over tokens of K*V) (threshold 0.5); y = Q*m;
              out = proj_bn(proj_conv(y)) + x. (attn_lif, talking_heads and scale are unused.)
  MS_MLP_Conv h = fc1_bn(fc1_conv(fc1_lif(x))) (+ x when hidden == in, which becomes the
              identity); out = fc2_bn(fc2_conv(fc2_lif(h))) + identity.
  head        head(head_lif(mean over tokens of the stream)), averaged over time.

In ternion: the SPS stages stay [C, H, W] (Conv2d, ternion.SJLIF, MaxPool2d, ternion.Identity for
the x_feat join), ternion.Tokens turns the stream into [N, C] tokens, the 1x1 convolutions become
Affine on tokens, the attention is ternion.SDSA with form "kv", and every membrane shortcut is a
ternion.Identity whose sum feeds the next branch's LIF."""
import numpy as np

from . import converters as cv
from .graph import ExportError, f32, fold_bn

STAGES = ("", "1", "2", "3")


def is_sdt(m):
    return all(hasattr(m, a) for a in ("patch_embed", "block", "head", "head_lif", "T"))


def is_ms_sps(m):
    return all(hasattr(m, a) for a in ("pooling_stat", "rpe_conv", "rpe_bn")) and \
        all(hasattr(m, f"proj_conv{s}") for s in STAGES)


def is_ms_block(m):
    from .bsa import is_bsa

    if not (hasattr(m, "attn") and hasattr(m, "mlp")):
        return False
    return is_ms_attention(m.attn) or (is_bsa(m.attn) and m.attn.backbone == "sdt")


def is_ms_attention(m):
    return all(hasattr(m, a) for a in ("shortcut_lif", "q_conv", "k_conv", "v_conv",
                                        "talking_heads_lif", "proj_conv", "proj_bn", "num_heads"))


def is_ms_mlp(m):
    return all(hasattr(m, a) for a in ("fc1_lif", "fc1_conv", "fc1_bn", "fc2_lif", "fc2_conv",
                                        "fc2_bn"))


def join(ex, name, inputs):
    """A membrane shortcut: the sum of two pre-activations, fed to the next LIF."""
    return ex.g.add(ex.name(name), "ternion.Identity", {}, inputs, ex.g.shapes[inputs[0]],
                    origin=name)


def pointwise(ex, conv, bn, path):
    """A 1x1 convolution (Conv2d, or a kernel-1 Conv1d as QKFormer's) + BatchNorm as
    (weight (out, in), bias, None) with the BatchNorm folded, or with fold_bn=False (weight, bias
    or None, the BatchNorm's datasets): on tokens [N, C] it is an Affine over channels."""
    dims = 2 if cv.is_conv(conv, 2) else 1 if cv.is_conv(conv, 1) else 0
    if not dims:
        raise ExportError(f"{cv.describe(conv, path)}: expected a 1x1 Conv2d (or kernel-1 Conv1d)")
    one = (1,) * dims
    ok = (tuple(conv.kernel_size) == one and tuple(conv.stride) == one and
          conv.padding in (0, (0,) * dims, "valid") and tuple(conv.dilation) == one and
          conv.groups == 1)
    if not ok:
        raise ExportError(f"{cv.describe(conv, path)}: only 1x1 convolutions with stride 1, no "
                          "padding and one group act on tokens")
    if not cv.is_bn(bn):
        raise ExportError(f"{cv.describe(bn, path)}: expected the BatchNorm after {path}")
    out_c, in_c = conv.weight.shape[:2]
    w = conv.weight.detach().reshape(out_c, in_c)
    if ex.fold_bn:
        return (*fold_bn(w, conv.bias, bn), None)
    return f32(w), (f32(conv.bias) if conv.bias is not None else None), cv.bn_params(bn)


def projections(ex, m, path, names):
    """An attention's {q,k,v}_conv + {q,k,v}_bn as ternion attention parameters: weights,
    biases and, with fold_bn=False, the unfolded BatchNorms (the convolutions' outputs are
    contiguous: PyTorch's "fma" form)."""
    p = {}
    for nm in names:
        w, b, unfolded = pointwise(ex, getattr(m, f"{nm}_conv"), getattr(m, f"{nm}_bn"),
                                   f"{path}.{nm}_conv")
        p[f"{nm}_weight"] = w
        if b is not None:
            p[f"{nm}_bias"] = b
        if unfolded is not None:
            p.update({f"{nm}_bn_{k}": v for k, v in unfolded.items()}, **{f"{nm}_bn_form": "fma"})
    return p


def affine(ex, conv, bn, path, x):
    w, b, unfolded = pointwise(ex, conv, bn, path)
    n, d = ex.g.shapes[x]
    if d != w.shape[1]:
        raise ExportError(f"{cv.describe(conv, path)}: expects {w.shape[1]} channels, gets {d}")
    p = dict(weight=w) if b is None else dict(weight=w, bias=b)
    y = ex.g.add(ex.name(path), "Linear" if b is None else "Affine", p, [x], (n, w.shape[0]),
                 origin=path)
    if unfolded is None:
        return y
    # The convolution's output is contiguous: PyTorch's "fma" form, over channels.
    return cv.bn_node(ex, bn, path.rsplit("_conv", 1)[0] + "_bn", y, "fma", -1)


def convert_ms_sps(ex, m, path, x):
    stat = str(m.pooling_stat)
    if len(stat) != 4 or set(stat) - {"0", "1"}:
        raise ExportError(f"{cv.describe(m, path)}: pooling_stat {stat!r} is not four 0/1 flags")
    for i, s in enumerate(STAGES):
        x = cv.conv_node(ex, getattr(m, f"proj_conv{s}"), f"{path}.proj_conv{s}", x,
                         bn=getattr(m, f"proj_bn{s}"), bn_path=f"{path}.proj_bn{s}")
        if s != "3":  # the last stage is pooled before its LIF and kept as x_feat
            x = ex.convert(getattr(m, f"proj_lif{s}"), f"{path}.proj_lif{s}", x)
        if stat[i] == "1":
            x = ex.convert(getattr(m, f"maxpool{s}"), f"{path}.maxpool{s}", x)
    feat = x
    s = ex.convert(m.proj_lif3, f"{path}.proj_lif3", feat)
    r = cv.conv_node(ex, m.rpe_conv, f"{path}.rpe_conv", s, bn=m.rpe_bn,
                     bn_path=f"{path}.rpe_bn")
    res = join(ex, f"{path}.rpe_residual", [r, feat])  # rpe_lif is unused by forward
    c, h, w = ex.g.shapes[res]
    return ex.g.add(ex.name(f"{path}.tokens"), "ternion.Tokens", {}, [res], (h * w, c),
                    origin=path)


def convert_ms_attention(ex, m, path, x):
    from . import bsa

    if bsa.is_bsa(m):
        return bsa.convert(ex, m, path, x, "sdt")
    shape = ex.g.shapes[x]
    if len(shape) != 2:
        raise ExportError(f"{cv.describe(m, path)}: needs tokens [N, D], got {shape}")
    if getattr(m, "dvs", False):
        raise ExportError(f"{cv.describe(m, path)}: dvs=True (the Erode max-pool over Q, K and "
                          "K*V) is not supported by ternion.SDSA")
    s = ex.convert(m.shortcut_lif, f"{path}.shortcut_lif", x)
    p = {"heads": np.int64(m.num_heads), "form": "kv", **projections(ex, m, path, "qkv")}
    lifs = [cv.lif_for_attention(getattr(m, f"{nm}_lif"), f"{path}.{nm}_lif", "lif_")
            for nm in ("q", "k", "v")]
    if not (lifs[0] == lifs[1] == lifs[2]):
        raise ExportError(f"{cv.describe(m, path)}: q_lif, k_lif and v_lif differ; ternion.SDSA "
                          "has one set of Q/K/V neuron parameters")
    p.update(lifs[0])
    # The channel mask is talking_heads_lif; attn_lif and the talking_heads conv are built by
    # the official module but never called in its forward.
    p.update(cv.lif_for_attention(m.talking_heads_lif, f"{path}.talking_heads_lif", "attn_"))
    d = p["q_weight"].shape[0]
    if d != shape[1] or d % int(m.num_heads):
        raise ExportError(f"{cv.describe(m, path)}: dim {d}, heads {m.num_heads}, input {shape}")
    a = ex.g.add(ex.name(path), "ternion.SDSA", p, [s], (shape[0], d), origin=path)
    y = affine(ex, m.proj_conv, m.proj_bn, f"{path}.proj_conv", a)
    return join(ex, f"{path}.residual", [y, x])


def convert_ms_mlp(ex, m, path, x):
    h = ex.convert(m.fc1_lif, f"{path}.fc1_lif", x)
    h = affine(ex, m.fc1_conv, m.fc1_bn, f"{path}.fc1_conv", h)
    identity = x
    if getattr(m, "res", False):  # hidden == in: the hidden pre-activation joins the shortcut
        h = identity = join(ex, f"{path}.hidden_residual", [identity, h])
    y = ex.convert(m.fc2_lif, f"{path}.fc2_lif", h)
    y = affine(ex, m.fc2_conv, m.fc2_bn, f"{path}.fc2_conv", y)
    return join(ex, f"{path}.residual", [y, identity])


def convert_ms_block(ex, m, path, x):
    if not is_ms_mlp(m.mlp):
        raise ExportError(f"{cv.describe(m.mlp, path + '.mlp')}: not an MS_MLP_Conv")
    x = convert_ms_attention(ex, m.attn, f"{path}.attn", x)
    return convert_ms_mlp(ex, m.mlp, f"{path}.mlp", x)


def convert_sdt(ex, m, path, x):
    """SpikeDrivenTransformer.forward: the image repeated T times (direct encoding), MS_SPS,
    blocks, mean over tokens, head_lif, head, mean over time (ternion: the head every step, the
    prediction the argmax of the sum over steps, the same class)."""
    if len(ex.g.shapes[x]) != 3:
        raise ExportError(f"{cv.describe(m, path)}: example_input must be images [B, C, H, W] "
                          f"(got input shape {ex.g.shapes[x]} without the batch axis)")
    ex.timesteps = int(m.T)
    ex.encoding = "direct"
    pre = f"{path}." if path else ""
    if not is_ms_sps(m.patch_embed):
        raise ExportError(f"{cv.describe(m.patch_embed, pre + 'patch_embed')}: not an MS_SPS")
    x = convert_ms_sps(ex, m.patch_embed, f"{pre}patch_embed", x)
    for i, blk in enumerate(m.block):
        bpath = f"{pre}block.{i}"
        if not is_ms_block(blk):
            raise ExportError(f"{cv.describe(blk, bpath)}: not an MS_Block_Conv")
        x = convert_ms_block(ex, blk, bpath, x)
    mean = ex.g.add(ex.name(f"{pre}mean"), "ternion.TokenMean", {}, [x], ex.g.shapes[x][1:],
                    origin=path)
    s = ex.convert(m.head_lif, f"{pre}head_lif", mean)
    return ex.convert(m.head, f"{pre}head", s)
