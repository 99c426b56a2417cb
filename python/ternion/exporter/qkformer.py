"""The official QKFormer (Zhou et al., NeurIPS 2024; github.com/zhouchenlin2096/QKFormer,
cifar10/model.py: PatchEmbedInit, PatchEmbeddingStage, Token_QK_Attention,
Spiking_Self_Attention, MLP, TokenSpikingTransformer, SpikingTransformer, spiking_transformer),
recognised by attribute names like the Spikformer and SDT converters.

What the official forward computes (x: [T, B, C, H, W], the image repeated T times; every LIF a
SpikingJelly MultiStepLIFNode, tau 2, hard reset to 0):
  PatchEmbedInit      s = LIF(BN(conv3x3(x))); out = LIF(BN(proj1_conv3x3(s)))
                      + LIF(BN(proj_res_conv1x1(s)))                   (a sum of spikes, 0..2)
  PatchEmbeddingStage s = LIF(BN(proj3_conv3x3(x))); out = LIF(maxpool3/2/1(BN(proj4_conv3x3(s))))
                      + LIF(BN(proj_res_conv1x1 stride 2(x)))  (SPEDS: the shortcut downsamples)
  Token_QK_Attention  Q, K = LIF(BN(conv1d 1x1(x))) on the H*W tokens; per head and token
                      m = LIF_0.5(sum of Q over the head's channels); y = m * K;
                      out = proj_lif(proj_bn(proj_conv(y)))
  Spiking_Self_Attention  Q, K, V = LIF(BN(conv1d 1x1(x))); y = attn_lif((Q (K^T V)) * 0.125)
                      per head; out = proj_lif(proj_bn(proj_conv(y)))      (qkv_mp is unused)
  MLP                 LIF(BN(conv1x1(LIF(BN(conv1x1(x))))))
  blocks              x = x + attn(x); x = x + mlp(x)         (residual sums of spikes)
  head                head(mean over time of the mean over tokens)
Spiking_Self_Attention's proj_lif runs on [T*B, C, N], so in PyTorch its membrane carries from
sample to sample of a batch; ternion runs each sample on its own: the official forward at
batch size 1.

In ternion: the patch embeddings stay [C, H, W] (Conv2d with the BatchNorm folded or a
ternion.BatchNorm node, MaxPool2d, ternion.SJLIF, a ternion.Identity for the shortcut sum);
ternion.Tokens turns the stream into [N, C] tokens for the blocks, where the 1x1 convolutions
are Affine over channels, Token_QK_Attention is ternion.QKAttention (form "token"),
Spiking_Self_Attention ternion.SSA (association "kv"), the projections Affine + ternion.SJLIF,
the residuals ternion.Identity sums. Before the next patch embedding the tokens go back to
[C, H, W] without arithmetic: ternion.Identity reshapes to [N, 1, C], ternion.Tokens transposes
that to [C, N], a ternion.Identity reshapes to [C, H, W]."""
import numpy as np

from . import converters as cv
from .graph import ExportError
from .sdt import affine, join
from .sdt import projections as sdt_projections

INIT = ("proj_conv", "proj_bn", "proj_lif", "proj1_conv", "proj1_bn", "proj1_lif",
        "proj_res_conv", "proj_res_bn", "proj_res_lif")
STAGE = ("proj3_conv", "proj3_bn", "proj3_lif", "proj4_conv", "proj4_bn", "proj4_maxpool",
         "proj4_lif", "proj_res_conv", "proj_res_bn", "proj_res_lif")
ATTN = ("q_conv", "q_bn", "q_lif", "k_conv", "k_bn", "k_lif", "attn_lif", "proj_conv",
        "proj_bn", "proj_lif", "num_heads")
MLP = ("mlp1_conv", "mlp1_bn", "mlp1_lif", "mlp2_conv", "mlp2_bn", "mlp2_lif")


def _has(m, names):
    return all(hasattr(m, a) for a in names)


def is_qkformer(m):
    return _has(m, ("patch_embed1", "stage1", "head", "T")) and not hasattr(m, "patch_embed")


def is_patch_embed_init(m):
    return _has(m, INIT) and not hasattr(m, "proj3_conv")


def is_patch_embed_stage(m):
    return _has(m, STAGE)


def is_token_qk_attention(m):
    return _has(m, ATTN) and not any(hasattr(m, a) for a in ("v_conv", "v_bn", "v_lif"))


def is_qk_ssa(m):
    return _has(m, ATTN + ("v_conv", "v_bn", "v_lif", "scale"))


def is_qk_mlp(m):
    return _has(m, MLP)


def _lif(ex, m, path, x):
    if cv.cls(m) not in cv.LIF_NAMES:
        raise ExportError(f"{cv.describe(m, path)}: expected a SpikingJelly LIF node "
                          f"(got {cv.cls(m)})")
    return ex.convert(m, path, x)


def _conv(ex, m, name, path, x, bn_name):
    conv = getattr(m, name)
    if not cv.is_conv(conv, 2):
        raise ExportError(f"{cv.describe(conv, f'{path}.{name}')}: expected a Conv2d")
    bn = getattr(m, bn_name)
    if not cv.is_bn(bn):
        raise ExportError(f"{cv.describe(bn, f'{path}.{bn_name}')}: expected a BatchNorm2d")
    return cv.conv_node(ex, conv, f"{path}.{name}", x, bn=bn, bn_path=f"{path}.{bn_name}")


def _shortcut(ex, m, path, main, res):
    if ex.g.shapes[main] != ex.g.shapes[res]:
        raise ExportError(f"{cv.describe(m, path)}: the shortcut's shape {ex.g.shapes[res]} "
                          f"differs from the main branch's {ex.g.shapes[main]}")
    return join(ex, f"{path}.shortcut", [main, res])


def convert_patch_embed_init(ex, m, path, x):
    """PatchEmbedInit: conv3x3+BN+LIF, then conv3x3+BN+LIF plus the 1x1 shortcut+BN+LIF."""
    s = _lif(ex, m.proj_lif, f"{path}.proj_lif", _conv(ex, m, "proj_conv", path, x, "proj_bn"))
    y = _lif(ex, m.proj1_lif, f"{path}.proj1_lif",
             _conv(ex, m, "proj1_conv", path, s, "proj1_bn"))
    r = _lif(ex, m.proj_res_lif, f"{path}.proj_res_lif",
             _conv(ex, m, "proj_res_conv", path, s, "proj_res_bn"))
    return _shortcut(ex, m, path, y, r)


def convert_patch_embed_stage(ex, m, path, x):
    """PatchEmbeddingStage: conv3x3+BN+LIF, conv3x3+BN, max-pool, LIF; the shortcut is a strided
    1x1 conv+BN+LIF on the stage's input (SPEDS)."""
    s = _lif(ex, m.proj3_lif, f"{path}.proj3_lif",
             _conv(ex, m, "proj3_conv", path, x, "proj3_bn"))
    y = _conv(ex, m, "proj4_conv", path, s, "proj4_bn")
    pool = m.proj4_maxpool
    if "MaxPool2d" not in cv.mro_names(pool):
        raise ExportError(f"{cv.describe(pool, path + '.proj4_maxpool')}: expected a MaxPool2d")
    y = cv.pool_node(ex, pool, f"{path}.proj4_maxpool", y)
    y = _lif(ex, m.proj4_lif, f"{path}.proj4_lif", y)
    r = _lif(ex, m.proj_res_lif, f"{path}.proj_res_lif",
             _conv(ex, m, "proj_res_conv", path, x, "proj_res_bn"))
    return _shortcut(ex, m, path, y, r)


def projections(ex, m, path, names, form):
    """q/k(/v) weights, biases and unfolded BatchNorms (the convolutions' outputs are contiguous
    [T*B, C, N]: PyTorch's "fma" form), and the one set of Q/K(/V) LIF parameters."""
    p = {"heads": np.int64(m.num_heads), **sdt_projections(ex, m, path, names)}
    lifs = [cv.lif_for_attention(getattr(m, f"{nm}_lif"), f"{path}.{nm}_lif", "lif_")
            for nm in names]
    if any(lif != lifs[0] for lif in lifs):
        raise ExportError(f"{cv.describe(m, path)}: {', '.join(n + '_lif' for n in names)} "
                          f"differ; {form} has one set of Q/K/V neuron parameters")
    p.update(lifs[0])
    p.update(cv.lif_for_attention(m.attn_lif, f"{path}.attn_lif", "attn_"))
    return p


def convert_attention(ex, m, path, x):
    """Token_QK_Attention -> ternion.QKAttention, Spiking_Self_Attention -> ternion.SSA; then
    the projection (Affine) and proj_lif."""
    from . import bsa

    if bsa.is_bsa(m):
        return bsa.convert(ex, m, path, x, "qkformer")
    shape = ex.g.shapes[x]
    if len(shape) != 2:
        raise ExportError(f"{cv.describe(m, path)}: needs tokens [N, D], got {shape}")
    if is_qk_ssa(m):
        typ = "ternion.SSA"
        p = projections(ex, m, path, ("q", "k", "v"), typ)
        scale = float(m.scale)
        if scale <= 0 or np.float32(scale) != scale or np.log2(scale) != int(np.log2(scale)):
            raise ExportError(f"{cv.describe(m, path)}: scale {scale} is not a power of two "
                              "(ternion.SSA is exact for those)")
        p.update(scale=np.float64(scale), association="kv")  # q @ (k^T @ v), as the code
    elif is_token_qk_attention(m):
        typ = "ternion.QKAttention"
        p = projections(ex, m, path, ("q", "k"), typ)
        p["form"] = "token"
    else:
        raise ExportError(f"{cv.describe(m, path)}: neither a Token_QK_Attention nor a "
                          f"Spiking_Self_Attention (needs {', '.join(ATTN)})")
    d = p["q_weight"].shape[0]
    if p["q_weight"].shape[1] != shape[1] or d % int(m.num_heads):
        raise ExportError(f"{cv.describe(m, path)}: dim {d}, heads {m.num_heads}, input {shape}")
    a = ex.g.add(ex.name(path), typ, p, [x], (shape[0], d), origin=path)
    y = affine(ex, m.proj_conv, m.proj_bn, f"{path}.proj_conv", a)
    return _lif(ex, m.proj_lif, f"{path}.proj_lif", y)


def convert_mlp(ex, m, path, x):
    if not is_qk_mlp(m):
        raise ExportError(f"{cv.describe(m, path)}: not a QKFormer MLP (needs {', '.join(MLP)})")
    h = affine(ex, m.mlp1_conv, m.mlp1_bn, f"{path}.mlp1_conv", x)
    h = _lif(ex, m.mlp1_lif, f"{path}.mlp1_lif", h)
    y = affine(ex, m.mlp2_conv, m.mlp2_bn, f"{path}.mlp2_conv", h)
    return _lif(ex, m.mlp2_lif, f"{path}.mlp2_lif", y)


def convert_block(ex, m, path, x):
    """TokenSpikingTransformer (tssa) or SpikingTransformer (ssa): x + attn(x), then + mlp."""
    name = "tssa" if hasattr(m, "tssa") else "ssa" if hasattr(m, "ssa") else None
    if name is None or not hasattr(m, "mlp"):
        raise ExportError(f"{cv.describe(m, path)}: not a QKFormer block (tssa or ssa, and mlp)")
    a = convert_attention(ex, getattr(m, name), f"{path}.{name}", x)
    x = join(ex, f"{path}.res1", [x, a])
    y = convert_mlp(ex, m.mlp, f"{path}.mlp", x)
    return join(ex, f"{path}.res2", [x, y])


def to_tokens(ex, path, x):
    c, h, w = ex.g.shapes[x]
    return ex.g.add(ex.name(f"{path}.tokens"), "ternion.Tokens", {}, [x], (h * w, c), origin=path)


def to_image(ex, path, x, hw):
    """Tokens [N, C] back to [C, H, W], moving values only: reshape to [N, 1, C], transpose with
    ternion.Tokens (its [C', H', W'] -> [H'*W', C'] is [N, 1, C] -> [C, N]), reshape."""
    n, c = ex.g.shapes[x]
    r = ex.g.add(ex.name(f"{path}.untokens"), "ternion.Identity", {"shape": cv.i64((n, 1, c))},
                 [x], (n, 1, c), origin=path)
    t = ex.g.add(ex.name(f"{path}.untokens_t"), "ternion.Tokens", {}, [r], (c, n), origin=path)
    return ex.g.add(ex.name(f"{path}.untokens_chw"), "ternion.Identity",
                    {"shape": cv.i64((c, *hw))}, [t], (c, *hw), origin=path)


def _stages(m, pre):
    stages = []
    i = 1
    while hasattr(m, f"patch_embed{i}"):
        if not hasattr(m, f"stage{i}"):
            raise ExportError(f"{cv.describe(m, pre + f'patch_embed{i}')}: no stage{i} after it")
        stages.append(i)
        i += 1
    if hasattr(m, f"stage{i}"):
        raise ExportError(f"{cv.describe(m, pre + f'stage{i}')}: no patch_embed{i} before it")
    return stages


def convert_qkformer(ex, m, path, x):
    """spiking_transformer.forward: the image repeated T times (direct encoding); per stage i
    patch_embed{i} then the blocks of stage{i}; mean over tokens; head of the mean over time
    (ternion: the head every step, the prediction the argmax of the sum, the same class)."""
    if len(ex.g.shapes[x]) != 3:
        raise ExportError(f"{cv.describe(m, path)}: example_input must be images [B, C, H, W] "
                          f"(got input shape {ex.g.shapes[x]} without the batch axis)")
    ex.timesteps = int(m.T)
    ex.encoding = "direct"
    pre = f"{path}." if path else ""
    hw = None  # the last patch embedding's (H, W)
    for k, i in enumerate(_stages(m, pre)):
        epath, pe = f"{pre}patch_embed{i}", getattr(m, f"patch_embed{i}")
        if k > 0:
            x = to_image(ex, epath, x, hw)
        if k == 0 and is_patch_embed_init(pe):
            x = convert_patch_embed_init(ex, pe, epath, x)
        elif k > 0 and is_patch_embed_stage(pe):
            x = convert_patch_embed_stage(ex, pe, epath, x)
        else:
            want = "PatchEmbedInit" if k == 0 else "PatchEmbeddingStage"
            raise ExportError(f"{cv.describe(pe, epath)}: not a {want} (needs "
                              f"{', '.join(INIT if k == 0 else STAGE)})")
        hw = ex.g.shapes[x][1:]
        x = to_tokens(ex, epath, x)
        for j, blk in enumerate(getattr(m, f"stage{i}")):
            x = convert_block(ex, blk, f"{pre}stage{i}.{j}", x)
    mean = ex.g.add(ex.name(f"{pre}mean"), "ternion.TokenMean", {}, [x], ex.g.shapes[x][1:],
                    origin=path)
    return ex.convert(m.head, f"{pre}head", mean)
