"""Bipolar Self-attention (BSA) as a PyTorch module that takes the place of a spiking
Transformer's own attention, so a backbone can be trained with BSA and exported to ternion.BSA.

    from ternion.reference import bsa
    bsa.swap_attention(model)            # every SSA / SDSA of the backbone becomes BSA
    ...train...
    ternion.export(model, images, "model.h5", attention="bsa")

Backbones (recognised by their module structure, as ternion.export recognises them):
  spikformer     ZK-Zhou/spikformer's SSA: tokens [T, B, N, C], Linear + BatchNorm1d projections,
                 out = proj_lif(BN(Linear(y)))
  spikingformer  zhouchenlin2096/Spikingformer's SpikingSelfAttention: [T, B, C, H, W],
                 s = proj_lif(x) first, kernel-1 Conv1d + BatchNorm1d, out = BN(conv(y))
  qkformer       zhouchenlin2096/QKFormer's Spiking_Self_Attention (the Q-K token attention
                 blocks stay as they are): out = proj_lif(BN(conv(y)))
  sdt            BICLab/Spike-Driven-Transformer's MS_SSA_Conv: [T, B, C, H, W],
                 s = shortcut_lif(x), Conv2d + BatchNorm2d, out = BN(conv(y)) + x
                 (called as the official block calls it: (out, V, hook) = attn(x, hook=hook))
The projections (and the neurons around the attention) are the original module's own
submodules, moved over with their names and weights; the attention between them is BSA
(docs/bsa.md, docs/transformer-format.md §3.3):
  Q = TSN_qk(P_q), K = TSN_qk(P_k) in {-1, 0, 1};  V = P_v, not spiked;
  per head S = Q K^T (integers), weights 2^-n with n = gamma - S (Shiftmax, no sqrt(d));
  out = TSN_out(sum_j 2^-n_ij V_j).
With exact=True the module computes what ternion computes bit for bit (exact integer Shiftmax
exponents, the value sum in ascending key order); the default is the faster differentiable
form for training (torch's sum order and a float Shiftmax, which may differ in the last bit).
"""
import numpy as np
import torch
import torch.nn as nn

from ternion.reference.spikformer import shiftmax, shiftmax_exponents, tsn_step

# Submodules moved from the backbone's attention, per backbone.
_PROJ = {
    "spikformer": ("q_linear", "q_bn", "k_linear", "k_bn", "v_linear", "v_bn", "proj_linear",
                   "proj_bn", "proj_lif"),
    "spikingformer": ("proj_lif", "q_conv", "q_bn", "k_conv", "k_bn", "v_conv", "v_bn",
                      "proj_conv", "proj_bn"),
    "qkformer": ("q_conv", "q_bn", "k_conv", "k_bn", "v_conv", "v_bn", "proj_conv", "proj_bn",
                 "proj_lif"),
    "sdt": ("shortcut_lif", "q_conv", "q_bn", "k_conv", "k_bn", "v_conv", "v_bn", "proj_conv",
            "proj_bn"),
}
BACKBONES = tuple(_PROJ)


class TSN(nn.Module):
    """Multi-step ternary spiking neuron over the first axis [T, ...] (docs/transformer-format.md
    §3.3): u = h + x; s = sign(u) (|u| >= v_th); h = 0 after a spike, else decay u. The state
    starts at 0 on every call: the backbones call their attention once per forward, all T steps
    at once."""

    def __init__(self, v_threshold=1.0, decay=0.5):
        super().__init__()
        self.v_threshold, self.decay = float(v_threshold), float(decay)

    def forward(self, x_seq):
        h = torch.zeros_like(x_seq[0])
        out = []
        for t in range(x_seq.shape[0]):
            s, h = tsn_step(x_seq[t], h, self.v_threshold, self.decay)
            out.append(s)
        return torch.stack(out)

    def extra_repr(self):
        return f"v_threshold={self.v_threshold}, decay={self.decay}"


def _frames(mods, x):
    """Stateless modules applied to each of the T*B frames of x [T, B, ...]."""
    y = x.flatten(0, 1)
    for m in mods:
        y = m(y)
    return y.reshape(x.shape[0], x.shape[1], *y.shape[1:])


def _lin_bn(lin, bn, x):
    """Spikformer's projection on tokens [T, B, N, C]: Linear, BatchNorm1d over channels."""
    T, B, N, _ = x.shape
    y = lin(x.flatten(0, 1))
    return bn(y.transpose(-1, -2)).transpose(-1, -2).reshape(T, B, N, -1).contiguous()


class BipolarSelfAttention(nn.Module):
    """BSA in place of one backbone attention (see the module docstring). Build it with
    `from_attention(module, backbone)` or `swap_attention(model)`."""

    def __init__(self, backbone, num_heads, modules, qk_threshold=1.0, qk_decay=0.5,
                 out_threshold=0.5, out_decay=0.5, exact=False):
        super().__init__()
        if backbone not in _PROJ:
            raise ValueError(f"backbone must be one of {', '.join(BACKBONES)}, got {backbone!r}")
        missing = [n for n in _PROJ[backbone] if n not in modules]
        if missing:
            raise ValueError(f"a {backbone} attention needs {', '.join(missing)}")
        self.backbone, self.num_heads, self.exact = backbone, int(num_heads), bool(exact)
        for name in _PROJ[backbone]:
            setattr(self, name, modules[name])
        self.q_tsn = TSN(qk_threshold, qk_decay)
        self.k_tsn = TSN(qk_threshold, qk_decay)
        self.attn_tsn = TSN(out_threshold, out_decay)

    @classmethod
    def from_attention(cls, module, backbone, **kw):
        """The BSA twin of `module` (a backbone attention): its projections and surrounding
        neurons, with their trained weights; Q/K/V's own neurons and the attention neuron are
        replaced by BSA's TSNs."""
        if backbone not in _PROJ:
            raise ValueError(f"backbone must be one of {', '.join(BACKBONES)}, got {backbone!r}")
        missing = [n for n in (*_PROJ[backbone], "num_heads") if not hasattr(module, n)]
        if missing:
            raise ValueError(f"{type(module).__name__} is not a {backbone} attention (needs "
                             f"{', '.join(missing)})")
        mods = {n: getattr(module, n) for n in _PROJ[backbone]}
        return cls(backbone, module.num_heads, mods, **kw)

    # -- stages ------------------------------------------------------------------------------

    def _enter(self, x):
        """The spikes the projections read, and the projection as a function of a name: each
        gives [T, B, N, D]."""
        if self.backbone == "spikformer":
            return lambda nm: _lin_bn(getattr(self, f"{nm}_linear"), getattr(self, f"{nm}_bn"), x)
        if self.backbone == "sdt":
            s = self.shortcut_lif(x)
        elif self.backbone == "spikingformer":
            s = self.proj_lif(x).flatten(3)
        else:
            s = x.flatten(3)

        def project(nm):
            y = _frames((getattr(self, f"{nm}_conv"), getattr(self, f"{nm}_bn")), s)
            return y.flatten(3).transpose(2, 3)
        return project

    def _leave(self, y, x):
        """y [T, B, N, D] spikes -> the backbone's attention output."""
        if self.backbone == "spikformer":
            return self.proj_lif(_lin_bn(self.proj_linear, self.proj_bn, y))
        T, B = y.shape[:2]
        c = y.transpose(2, 3).contiguous()  # [T, B, D, N], as the backbones reshape it
        if self.backbone == "sdt":
            c = c.reshape(T, B, -1, *x.shape[3:])
        out = _frames((self.proj_conv, self.proj_bn), c)
        if self.backbone == "qkformer":
            out = self.proj_lif(out)
        out = out.reshape(T, B, -1, *x.shape[3:])
        return out + x if self.backbone == "sdt" else out

    def attention(self, pq, pk, pv):
        """BSA on projections [T, B, N, D]: ternary Q, K, Shiftmax, weights times analog V, TSN."""
        T, B, N, D = pq.shape
        H = self.num_heads

        def heads(t):
            return t.reshape(T, B, N, H, D // H).transpose(2, 3)  # [T, B, H, N, D/H]

        q, k, v = heads(self.q_tsn(pq)), heads(self.k_tsn(pk)), heads(pv)
        scores = q @ k.transpose(-1, -2)  # integers, exact in float32
        if self.exact:
            n = shiftmax_exponents(scores.detach().round().to(torch.int64).numpy())
            w = torch.from_numpy(np.ldexp(np.float32(1), -n).astype(np.float32))
            y = torch.zeros_like(v)
            for j in range(N):  # ascending key order, as ternion.BSA sums
                y = y + w[..., j:j + 1] * v[..., j:j + 1, :]
        else:
            y = shiftmax(scores) @ v
        self.last_scores = scores.detach()
        return self.attn_tsn(y.transpose(2, 3).reshape(T, B, N, D))

    def forward(self, x, hook=None):
        project = self._enter(x)
        v = project("v")
        y = self._leave(self.attention(project("q"), project("k"), v), x)
        # The Spike-driven Transformer's attention returns (output, V, hook), its block unpacks it
        return (y, v, hook) if self.backbone == "sdt" else y

    def extra_repr(self):
        return f"backbone={self.backbone!r}, num_heads={self.num_heads}, exact={self.exact}"


def detect_backbone(model):
    """The backbone `model` is, by the structure ternion.export recognises."""
    from ternion.exporter import converters as cv
    from ternion.exporter import qkformer, sdt, spikingformer

    for name, test in (("qkformer", qkformer.is_qkformer), ("sdt", sdt.is_sdt),
                       ("spikingformer", spikingformer.is_spikingformer),
                       ("spikformer", cv.is_spikformer)):
        if test(model):
            return name
    raise ValueError(f"{type(model).__name__} is not a Spikformer, Spikingformer, QKFormer or "
                     "Spike-driven Transformer (v1) model; pass backbone= for a part of one")


def _is_attention(m, backbone):
    from ternion.exporter import converters as cv
    from ternion.exporter import qkformer, sdt, spikingformer

    if backbone == "spikformer":
        return cv.is_ssa(m)
    if backbone == "spikingformer":
        return all(hasattr(m, a) for a in spikingformer.ATTN)
    if backbone == "qkformer":
        return qkformer.is_qk_ssa(m)
    return sdt.is_ms_attention(m)


def swap_attention(model, backbone=None, **kw):
    """Replaces every self-attention of the backbone in `model` by its BipolarSelfAttention twin
    (keyword arguments: qk_threshold, qk_decay, out_threshold, out_decay, exact). Returns the
    paths replaced; raises ValueError when there is none."""
    backbone = backbone or detect_backbone(model)
    if backbone not in _PROJ:
        raise ValueError(f"backbone must be one of {', '.join(BACKBONES)}, got {backbone!r}")
    found = [(p, m) for p, m in model.named_modules() if p and _is_attention(m, backbone)]
    if not found:
        raise ValueError(f"no {backbone} self-attention found in {type(model).__name__}")
    for path, m in found:
        parent, _, leaf = path.rpartition(".")
        owner = model.get_submodule(parent) if parent else model
        setattr(owner, leaf, BipolarSelfAttention.from_attention(m, backbone, **kw))
    return [p for p, _ in found]


def set_exact(model, exact=True):
    """Switches every BipolarSelfAttention in `model` to (or from) ternion's exact arithmetic."""
    for m in model.modules():
        if isinstance(m, BipolarSelfAttention):
            m.exact = bool(exact)
    return model

