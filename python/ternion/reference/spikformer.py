"""PyTorch reference for ternion's spiking Transformer nodes (ternion.SSA, ternion.BSA).

Two halves:
  * trainable modules (surrogate gradients, BatchNorm) used by ternion.tools.train_spikformer;
  * a deploy path that works only on the folded float32 arrays written to the model file
    (`export_params` -> `write_ternion_model`, through ternion.exporter), so
    PyTorch's reported predictions and spike counts come from exactly the numbers ternion loads.

The neuron equations are the ones docs/transformer-format.md specifies:
  SpikingJelly LIF (ternion.SJLIF, decay_input=1, hard reset):  v = v + (x - (v - v_reset)) / tau;
      s = (v >= v_th); v = v_reset where s.
  Ternary spiking neuron (TSN):  u = h + x;  s = sign(u) * (|u| >= v_th);  h = 0 if s != 0 else decay*u.
  Shiftmax (docs/transformer-format.md §3.3): w_ij = 2^(x_ij - ceil(log2 sum_j 2^x_ij)).
Runs with Debian's python3-torch, numpy and h5py only.
"""
import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from ternion.exporter.digits import digits_graph, digits_params
from ternion.exporter.graph import write_model

# ----------------------------------------------------------------------------------------------
# Surrogate spike functions


class _Heaviside(torch.autograd.Function):
    """s = (x >= 0); gradient of sigmoid(alpha x) (SpikingJelly's Sigmoid surrogate, alpha 4)."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return (x >= 0).to(x.dtype)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        sg = torch.sigmoid(4.0 * x)
        return g * 4.0 * sg * (1 - sg)


class _TernarySpike(torch.autograd.Function):
    """s = sign(u) * (|u| >= v_th); surrogate gradient sigmoid' on |u| - v_th (both sides)."""

    @staticmethod
    def forward(ctx, u, vth):
        ctx.save_for_backward(u)
        ctx.vth = vth
        return torch.sign(u) * (u.abs() >= vth).to(u.dtype)

    @staticmethod
    def backward(ctx, g):
        (u,) = ctx.saved_tensors
        sg = torch.sigmoid(4.0 * (u.abs() - ctx.vth))
        return g * 4.0 * sg * (1 - sg), None


def lif_step(x, v, tau=2.0, vth=1.0, v_reset=0.0):
    """One SpikingJelly LIF step (decay_input=True, hard reset, detach_reset). Returns (s, v)."""
    v = v + (x - (v - v_reset)) / tau
    s = _Heaviside.apply(v - vth)
    v = torch.where(s.detach() > 0, torch.full_like(v, v_reset), v)
    return s, v


def tsn_step(x, h, vth=1.0, decay=0.5):
    """One ternary spiking neuron step (TSN, docs/transformer-format.md §3.3). Returns (s, h)."""
    u = h + x
    s = _TernarySpike.apply(u, vth)
    h = torch.where(s.detach() != 0, torch.zeros_like(u), decay * u)
    return s, h


def shiftmax(x):
    """Shiftmax over the last axis; integer-valued x. Gradient flows through the numerator only."""
    m = x.max(dim=-1, keepdim=True).values.detach()
    e = torch.exp2(x - m)
    gamma = torch.ceil(torch.log2(e.sum(dim=-1, keepdim=True))).detach()
    return e / torch.exp2(gamma)


def shiftmax_exponents(scores):
    """Exact integer Shiftmax exponents n_ij = gamma_i - x_ij (>= 0) for integer scores (numpy).
    Computed with Python integers, so there is no rounding at all."""
    s = np.asarray(scores, dtype=np.int64)
    d = s - s.max(axis=-1, keepdims=True)  # <= 0
    if s.size and d.min() >= -56 and s.shape[-1] <= 64:
        # 2^(56 + d) summed over at most 64 terms stays below 2^62: exact in int64
        total = (np.int64(1) << (56 + d)).sum(axis=-1, keepdims=True)
        k = np.ceil(np.log2(total.astype(np.float64))).astype(np.int64)
        # log2 in float64 may round near a power of two: correct k to the exact integer ceiling
        k += (np.int64(1) << np.minimum(k, 62)) < total
        k -= (k > 0) & ((np.int64(1) << np.maximum(k - 1, 0)) >= total)
        return (k - 56) - d
    out = np.empty_like(s)
    flat = s.reshape(-1, s.shape[-1])
    o = out.reshape(-1, s.shape[-1])
    for r in range(flat.shape[0]):
        row = flat[r]
        m = int(row.max())
        total = sum(1 << int(2 * 64 + x - m) for x in row)  # exact: scaled by 2^(128)
        # gamma - m = ceil(log2(total / 2^128))
        k = (total - 1).bit_length() - 128  # ceil(log2(total)) - 128, total >= 2^128
        o[r] = (m + k) - row
    return out


# ----------------------------------------------------------------------------------------------
# Trainable model


class LinBN(nn.Module):
    """Linear -> BatchNorm1d over channels, on [B, N, C]."""

    def __init__(self, cin, cout):
        super().__init__()
        self.lin = nn.Linear(cin, cout)
        self.bn = nn.BatchNorm1d(cout)

    def forward(self, x):
        B, N, C = x.shape
        y = linear(self.lin, x.reshape(B * N, C))
        return self.bn(y).reshape(B, N, -1)


LINEAR_VIA_BLAS = False  # ternion.tools.train_spikformer --linear blas sets it (fast with OpenBLAS)


def linear(lin, x):
    """lin(x) for x [M, C], by default computed as a 1x1 convolution: with Debian's reference
    libblas (torch's BLAS_INFO=generic) oneDNN's convolution is several times faster than the
    BLAS matrix product. Same parameters, same layer. With LINEAR_VIA_BLAS it is F.linear
    (OpenBLAS, libopenblas0-openmp, is then the faster one)."""
    if LINEAR_VIA_BLAS:
        return F.linear(x, lin.weight, lin.bias)
    return F.conv2d(x[:, :, None, None], lin.weight[:, :, None, None], lin.bias)[:, :, 0, 0]


def lif_seq(x, tau=2.0, vth=1.0):
    """lif_step over the first axis (time) of x [T, ...] from v = 0: the spikes [T, ...]."""
    v, out = torch.zeros_like(x[0]), []
    for xt in x.unbind(0):
        s, v = lif_step(xt, v, tau, vth)
        out.append(s)
    return torch.stack(out)


def tsn_seq(x, vth=1.0, decay=0.5):
    """tsn_step over the first axis (time) of x [T, ...] from h = 0: the spikes [T, ...]."""
    h, out = torch.zeros_like(x[0]), []
    for xt in x.unbind(0):
        s, h = tsn_step(xt, h, vth, decay)
        out.append(s)
    return torch.stack(out)


class Attention(nn.Module):
    """SSA (binary Q/K/V, (QK^T)V*s, attn LIF) or BSA (ternary Q/K, Shiftmax, V analog, TSN)."""

    def __init__(self, kind, dim, heads, scale=0.125):
        super().__init__()
        self.kind, self.heads, self.scale = kind, heads, scale
        self.q, self.k, self.v = LinBN(dim, dim), LinBN(dim, dim), LinBN(dim, dim)

    def forward(self, x, T):
        """x: [T*B, N, D] spikes, time-major; returns the attention spikes [T*B, N, D]."""
        TB, N, D = x.shape
        H, dh = self.heads, D // self.heads

        def seq(t):
            return t.reshape(T, TB // T, N, D)

        qx, kx, vx = seq(self.q(x)), seq(self.k(x)), seq(self.v(x))
        if self.kind == "ssa":
            q, k, v = lif_seq(qx), lif_seq(kx), lif_seq(vx)
        else:
            q, k, v = tsn_seq(qx, 1.0, 0.5), tsn_seq(kx, 1.0, 0.5), vx

        def hd(t):
            return t.reshape(TB, N, H, dh).transpose(1, 2)

        q, k, v = hd(q), hd(k), hd(v)
        s = q @ k.transpose(-1, -2)
        if self.kind == "ssa":
            y = (s @ v) * self.scale
        else:
            y = shiftmax(s) @ v
        y = seq(y.transpose(1, 2).reshape(TB, N, D))
        if self.kind == "ssa":
            a = lif_seq(y, vth=0.5)
        else:
            a = tsn_seq(y, 0.5, 0.5)
        return a.reshape(TB, N, D)


class Block(nn.Module):
    def __init__(self, kind, dim, heads, mlp_ratio):
        super().__init__()
        self.attn = Attention(kind, dim, heads)
        self.proj = LinBN(dim, dim)
        self.fc1 = LinBN(dim, mlp_ratio * dim)
        self.fc2 = LinBN(mlp_ratio * dim, dim)


class DigitsSpikformer(nn.Module):
    """[B,1,8,8] analog -> conv3x3+BN -> LIF -> maxpool2 -> 16 tokens x dim -> blocks -> head.

    With stem=C a first conv3x3 (1 -> C) + BN + LIF comes first, and with pool0 a 2x2 max-pool
    after it: [B,1,28,28] -> 28x28xC -> 14x14xC -> conv -> 7x7 = 49 tokens (Fashion-MNIST)."""

    def __init__(self, kind, dim=64, heads=4, depth=1, mlp_ratio=4, T=4, classes=10, stem=0,
                 image=8, pool0=False):
        super().__init__()
        self.kind, self.dim, self.heads, self.depth, self.T = kind, dim, heads, depth, T
        self.mlp_ratio, self.stem, self.image, self.pool0 = mlp_ratio, stem, image, pool0
        if stem:  # optional first conv layer (1 -> stem channels) + BN + LIF
            self.conv0 = nn.Conv2d(1, stem, 3, padding=1)
            self.bn0 = nn.BatchNorm2d(stem)
        self.conv = nn.Conv2d(stem or 1, dim, 3, padding=1)
        self.bn = nn.BatchNorm2d(dim)
        self.blocks = nn.ModuleList([Block(kind, dim, heads, mlp_ratio) for _ in range(depth)])
        self.head = nn.Linear(dim, classes)

    def forward(self, img):
        """Multi-step: every layer runs on all T steps at once (time-major [T*B, ...]), each
        neuron steps through time; BatchNorm's training statistics are over all T steps."""
        T, B = self.T, img.shape[0]
        if self.stem:
            cur0 = self.bn0(self.conv0(img))  # direct encoding: the same current every step
            s0 = lif_seq(cur0.expand(T, *cur0.shape)).flatten(0, 1)
            if self.pool0:
                s0 = F.max_pool2d(s0, 2)
            cur = self.bn(self.conv(s0))
            cur = cur.reshape(T, B, *cur.shape[1:])
        else:
            cur = self.bn(self.conv(img))
            cur = cur.expand(T, *cur.shape)
        s = F.max_pool2d(lif_seq(cur).flatten(0, 1), 2)
        x = s.flatten(2).transpose(1, 2)  # [T*B, N, D], token n = h*W + w
        for blk in self.blocks:
            TB, N, D = x.shape

            def step(t, **kw):
                return lif_seq(t.reshape(T, B, N, -1), **kw).reshape(TB, N, -1)

            a = blk.attn(x, T)
            x = x + step(blk.proj(a))
            x = x + step(blk.fc2(step(blk.fc1(x))))
        return linear(self.head, x.mean(dim=1)).reshape(T, B, -1).mean(0)


# ----------------------------------------------------------------------------------------------
# Export: the ternion package (python/ternion) folds BatchNorm and writes the model file


def export_params(model):
    """Folded float32 parameters keyed like the model file's nodes: {node: {param: array}}."""
    return digits_params(model)


def write_ternion_model(path, P, kind, dim, heads, depth, T, image=8, pool0=False):
    """Writes the NIR-layout HDF5 file described in docs/transformer-format.md."""
    nodes, edges, meta = digits_graph(P, kind, dim, heads, depth, T, image, pool0)
    meta["source"] = "ternion.tools.train_spikformer"
    write_model(path, nodes, edges, meta)


def read_params(path):
    """The folded arrays of a model file written by write_ternion_model, keyed like export_params."""
    import h5py

    P = {}
    with h5py.File(path, "r") as f:
        for name, g in f["node/nodes"].items():
            params = {k: np.asarray(v[()]) for k, v in g.items()
                      if k.endswith("weight") or k.endswith("bias")}
            if params:
                P[name] = params
    return P


def conv_ternion_order(x, w, b):
    """A 3x3, padding-1 convolution summed as ternion's Conv2d sums: from 0, the terms in
    ascending (input channel, kernel row, kernel column) order, each product rounded to float32,
    then the bias."""
    B, C, H, W = x.shape
    xp = F.pad(x, (1, 1, 1, 1))
    y = torch.zeros(B, w.shape[0], H, W)
    for c in range(C):
        for ky in range(3):
            for kx in range(3):
                y = y + xp[:, c:c + 1, ky:ky + H, kx:kx + W] * w[:, c, ky, kx].view(1, -1, 1, 1)
    return y + b.view(1, -1, 1, 1)


def _deploy_attention(A, x, kind, heads, i, st, lin, acnt, exact_order):
    """One attention node of deploy_forward at one step: Q/K/V from the folded projections
    (bias first), their neurons (SSA: LIFs; BSA: TSNs on Q and K, V analog), the product per
    head (SSA: scaled Q K^T V; BSA: Shiftmax(Q K^T) V), then the attention neurons. `st` holds
    the membranes between steps; returns the attention node's output spikes."""
    B, N, D = x.shape
    H, dh = heads, D // heads
    qx = lin(x, dict(weight=A["q_weight"], bias=A["q_bias"]), True)
    kx = lin(x, dict(weight=A["k_weight"], bias=A["k_bias"]), True)
    vx = lin(x, dict(weight=A["v_weight"], bias=A["v_bias"]), True)
    z = torch.zeros_like(qx)
    if kind == "ssa":
        q, st[(i, "q")] = lif_step(qx, st.get((i, "q"), z))
        k, st[(i, "k")] = lif_step(kx, st.get((i, "k"), z))
        v, st[(i, "v")] = lif_step(vx, st.get((i, "v"), z))
        acnt(f"b{i}_attn/v_spikes", v)
    else:
        q, st[(i, "q")] = tsn_step(qx, st.get((i, "q"), z), 1.0, 0.5)
        k, st[(i, "k")] = tsn_step(kx, st.get((i, "k"), z), 1.0, 0.5)
        v = vx
    acnt(f"b{i}_attn/q_spikes", q)
    acnt(f"b{i}_attn/k_spikes", k)
    qh = q.reshape(B, N, H, dh).transpose(1, 2)
    kh = k.reshape(B, N, H, dh).transpose(1, 2)
    vh = v.reshape(B, N, H, dh).transpose(1, 2)
    sc = qh @ kh.transpose(-1, -2)  # exact small integers
    if kind == "ssa":
        y = (sc @ vh) * 0.125  # exact integers times a power of two
    else:
        n = torch.from_numpy(shiftmax_exponents(sc.round().numpy()))
        w = torch.exp2(-n.double()).float()  # exact powers of two
        if exact_order:
            y = torch.zeros(B, H, N, dh)
            for j in range(N):
                y = y + w[..., j:j + 1] * vh[:, :, j:j + 1, :]
        else:
            y = w @ vh
    y = y.transpose(1, 2).reshape(B, N, D)
    za = torch.zeros_like(y)
    if kind == "ssa":
        a, st[(i, "a")] = lif_step(y, st.get((i, "a"), za), vth=0.5)
    else:
        a, st[(i, "a")] = tsn_step(y, st.get((i, "a"), za), 0.5, 0.5)
    return a


def deploy_forward(P, img, kind, heads, depth, T, exact_order=False, pool0=False,
                   ternion_order=False):
    """Inference on the folded float32 arrays, step by step, as ternion specifies it.

    img: float32 tensor [B,1,H,W]. Returns (logits summed over T [B,classes], spike counts
    {node: int}, aux counts {node/q_spikes...: int}). With exact_order, every Linear and
    Shiftmax.V sums its terms in ascending order starting from the bias; otherwise matmuls.
    With ternion_order (implies exact_order), every Linear and convolution sums exactly as
    ternion does: from 0, terms in ascending input order, the bias last, except the attention
    node's own Q/K/V projections, which start from the bias (ternion.SSA/BSA); the token mean is
    the sum over tokens divided by their number."""
    exact_order = exact_order or ternion_order
    t = {k: {p: torch.from_numpy(np.asarray(v)) for p, v in d.items()} for k, d in P.items()}
    B = img.shape[0]
    counts, aux = {}, {}

    def conv(x, p):
        if ternion_order:
            return conv_ternion_order(x, p["weight"], p["bias"])
        return F.conv2d(x, p["weight"], p["bias"], padding=1)

    if "conv0" in t:
        cur0 = conv(img, t["conv0"])
        vs = torch.zeros_like(cur0)
    else:
        cur = conv(img, t["conv"])

    def cnt(name, s):
        counts[name] = counts.get(name, 0) + int((s != 0).sum())

    def acnt(name, s):
        aux[name] = aux.get(name, 0) + int((s != 0).sum())

    def lin(x, p, bias_first=False):
        if not exact_order:
            return x @ p["weight"].T + p["bias"]
        w = p["weight"]
        if ternion_order and not bias_first:  # from 0, the terms in ascending order, the bias
            y = torch.zeros(*x.shape[:-1], w.shape[0])
            for i in range(x.shape[-1]):
                y = y + x[..., i:i + 1] * w[:, i]
            return y + p["bias"]
        # start from the bias, add the inputs' terms in ascending input order
        y = p["bias"].expand(*x.shape[:-1], -1).clone()
        for i in range(x.shape[-1]):
            y = y + x[..., i:i + 1] * w[:, i]
        return y

    v0 = None
    st = {}
    logits = torch.zeros(B, t["head"]["weight"].shape[0])
    with torch.no_grad():
        for step in range(T):
            if "conv0" in t:
                s0, vs = lif_step(cur0, vs)
                cnt("conv0_lif", s0)
                if pool0:
                    s0 = F.max_pool2d(s0, 2)
                    cnt("pool0", s0)
                cur = conv(s0, t["conv"])
            if v0 is None:
                v0 = torch.zeros_like(cur)
            s, v0 = lif_step(cur, v0)
            cnt("conv_lif", s)
            s = F.max_pool2d(s, 2)
            cnt("pool", s)
            x = s.flatten(2).transpose(1, 2).contiguous()
            cnt("tokens", x)
            for i in range(depth):
                a = _deploy_attention(t[f"b{i}_attn"], x, kind, heads, i, st, lin, acnt,
                                      exact_order)
                cnt(f"b{i}_attn", a)
                p = lin(a, t[f"b{i}_proj"])
                y, st[(i, "proj")] = lif_step(p, st.get((i, "proj"), torch.zeros_like(p)))
                cnt(f"b{i}_proj_lif", y)
                x = x + y
                h1 = lin(x, t[f"b{i}_fc1"])
                h, st[(i, "fc1")] = lif_step(h1, st.get((i, "fc1"), torch.zeros_like(h1)))
                cnt(f"b{i}_fc1_lif", h)
                h2 = lin(h, t[f"b{i}_fc2"])
                m, st[(i, "fc2")] = lif_step(h2, st.get((i, "fc2"), torch.zeros_like(h2)))
                cnt(f"b{i}_fc2_lif", m)
                x = x + m
            mean = x.sum(dim=1) / x.shape[1] if ternion_order else x.mean(dim=1)
            logits = logits + lin(mean, t["head"])
    return logits, counts, aux


def _selftest():
    e = shiftmax_exponents(np.array([[3, 1, 0], [2, 2, -40]]))
    assert e[0].tolist() == [1, 3, 4], e
    assert e[1].tolist() == [2, 2, 44], e  # 4+4+2^-40 is just above 8: gamma = 4
    x = torch.tensor([[3.0, 1.0, 0.0]])
    assert torch.allclose(shiftmax(x), torch.tensor([[0.5, 0.125, 0.0625]]))
    assert math.isclose(float(shiftmax(torch.full((1, 196), 2.0)).sum()), 196 / 256)


if __name__ == "__main__":
    _selftest()
    print("ok")
