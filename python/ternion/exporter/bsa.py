"""Bipolar Self-attention in place of a backbone's attention: ternion.reference.bsa's
BipolarSelfAttention, trained inside Spikformer, Spikingformer, QKFormer or the Spike-driven
Transformer (v1), becomes one ternion.BSA node between the backbone's own surrounding nodes:

  spikformer     BSA -> proj_linear + proj_bn (Affine) -> proj_lif
  spikingformer  proj_lif -> BSA -> proj_conv + proj_bn (Affine)
  qkformer       BSA -> proj_conv + proj_bn (Affine) -> proj_lif
  sdt            shortcut_lif -> BSA -> proj_conv + proj_bn (Affine) -> + the block's input

The Q/K/V projections are converted as the backbone's own attention converter converts them."""
import numpy as np

from . import converters as cv
from . import qkformer, sdt
from .graph import ExportError


def is_bsa(m):
    return cv.cls(m) == "BipolarSelfAttention" and \
        all(hasattr(m, a) for a in ("q_tsn", "k_tsn", "attn_tsn", "backbone", "num_heads"))


def _tsn(m, path):
    for a in ("v_threshold", "decay"):
        v = getattr(m, a, None)
        if not isinstance(v, (int, float)) or not np.isfinite(v):
            raise ExportError(f"{cv.describe(m, path)}: {a} must be a finite number, got {v!r}")
    if m.v_threshold <= 0 or not 0 <= m.decay <= 1:
        raise ExportError(f"{cv.describe(m, path)}: needs v_threshold > 0 and decay in [0, 1] "
                          f"(got {m.v_threshold}, {m.decay})")
    return float(m.v_threshold), float(m.decay)


def neurons(m, path):
    """The TSN parameters of ternion.BSA: one set for Q and K, one for the output."""
    q, k = _tsn(m.q_tsn, f"{path}.q_tsn"), _tsn(m.k_tsn, f"{path}.k_tsn")
    if q != k:
        raise ExportError(f"{cv.describe(m, path)}: q_tsn {q} and k_tsn {k} differ; ternion.BSA "
                          "has one set of Q/K neuron parameters")
    out = _tsn(m.attn_tsn, f"{path}.attn_tsn")
    return dict(qk_v_threshold=np.float64(q[0]), qk_decay=np.float64(q[1]),
                out_v_threshold=np.float64(out[0]), out_decay=np.float64(out[1]))


def _node(ex, m, path, x, proj):
    shape = ex.g.shapes[x]
    p = {"heads": np.int64(m.num_heads), **proj, **neurons(m, path)}
    d = p["q_weight"].shape[0]
    if p["q_weight"].shape[1] != shape[1] or d % int(m.num_heads):
        raise ExportError(f"{cv.describe(m, path)}: dim {d}, heads {m.num_heads}, input {shape}")
    return ex.g.add(ex.name(path), "ternion.BSA", p, [x], (shape[0], d), origin=path)


def _spikformer(ex, m, path, x):
    a = _node(ex, m, path, x, cv.ssa_projections(ex, m))
    y = cv.linbn(ex, m.proj_linear, m.proj_bn, f"{path}.proj_linear", a, f"{path}.proj_linear")
    return ex.convert(m.proj_lif, f"{path}.proj_lif", y)


def _spikingformer(ex, m, path, x):
    s = qkformer._lif(ex, m.proj_lif, f"{path}.proj_lif", x)
    a = _node(ex, m, path, s, sdt.projections(ex, m, path, "qkv"))
    return sdt.affine(ex, m.proj_conv, m.proj_bn, f"{path}.proj_conv", a)


def _qkformer(ex, m, path, x):
    a = _node(ex, m, path, x, sdt.projections(ex, m, path, "qkv"))
    y = sdt.affine(ex, m.proj_conv, m.proj_bn, f"{path}.proj_conv", a)
    return qkformer._lif(ex, m.proj_lif, f"{path}.proj_lif", y)


def _sdt(ex, m, path, x):
    s = ex.convert(m.shortcut_lif, f"{path}.shortcut_lif", x)
    a = _node(ex, m, path, s, sdt.projections(ex, m, path, "qkv"))
    y = sdt.affine(ex, m.proj_conv, m.proj_bn, f"{path}.proj_conv", a)
    return sdt.join(ex, f"{path}.residual", [y, x])


LAYOUTS = {"spikformer": _spikformer, "spikingformer": _spikingformer, "qkformer": _qkformer,
           "sdt": _sdt}


def convert(ex, m, path, x, backbone):
    """The BSA module `m` found where `backbone` has its attention; x: tokens [N, D]."""
    if m.backbone != backbone:
        raise ExportError(f"{cv.describe(m, path)}: built for {m.backbone!r} but sits in a "
                          f"{backbone} model (rebuild it with swap_attention on this model)")
    if len(ex.g.shapes[x]) != 2:
        raise ExportError(f"{cv.describe(m, path)}: needs tokens [N, D], got {ex.g.shapes[x]}")
    return LAYOUTS[backbone](ex, m, path, x)
