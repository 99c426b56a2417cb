"""Stand-ins for the official Spikingformer (Zhou et al. 2023), written here from the equations its
model code computes (module names and attributes as in zhouchenlin2096/Spikingformer's
cifar10/model.py and imagenet/model.py: SpikingTokenizer, SpikingSelfAttention, MLP,
SpikingTransformer, vit_snn), with the neurons of sj_standins.py. Tensors are [T, B, C, H, W];
every convolution and BatchNorm acts on the T*B frames; the attention's 1x1 convolutions are
Conv1d on [T*B, C, N] (N = H*W tokens), the MLP's Conv2d. Every LIF comes before the
convolution it feeds, so the residual stream holds BatchNorm outputs:

  tokenizer   x = BN(conv3x3(x));  per stage i = 1..4: x = BN(conv3x3(pool_i(LIF(x))))
              pool_i a max-pool 3/2/1 in stages 3 and 4 ("cifar": block{i}_*) or in all four
              ("imagenet", also the DVS files: proj{i}_*, maxpool{i})
  attention   s = LIF(x);  Q, K, V = LIF(BN(conv1d(s)));  per head
              y = LIF_0.5((Q K^T) V / 8)  ("imagenet": Q (K^T V) times self.scale);
              out = BN(conv1d(y) + bias)
  MLP         BN(conv1x1(LIF(BN(conv1x1(LIF(x))))))
  block       x = x + attn(x);  x = x + mlp(x)
  model       images repeated T times, or (frames=True, the DVS files) [B, T, C, H, W]
              permuted to time first; head(mean_t mean_tokens x)"""
import torch
import torch.nn as nn

from sj_standins import MultiStepLIFNode


def lif(v_threshold=1.0, tau=2.0):
    return MultiStepLIFNode(tau=tau, v_threshold=v_threshold, detach_reset=True)


def frames(mods, x):
    """Applies stateless modules in turn to each of the T*B frames of x [T, B, ...]."""
    y = x.flatten(0, 1)
    for m in mods:
        y = m(y)
    return y.reshape(x.shape[0], x.shape[1], *y.shape[1:])


class SpikingTokenizer(nn.Module):
    def __init__(self, in_channels, embed_dims, layout="cifar", tau=2.0):
        super().__init__()
        widths = [embed_dims // 8, embed_dims // 4, embed_dims // 2, embed_dims, embed_dims]
        self.names = []  # per stage (lif, pool or None, conv, bn)
        first = ("block0_conv", "block0_bn") if layout == "cifar" else ("proj_conv", "proj_bn")
        setattr(self, first[0], nn.Conv2d(in_channels, widths[0], 3, 1, 1, bias=False))
        setattr(self, first[1], nn.BatchNorm2d(widths[0]))
        self.first = first
        for i in range(1, 5):
            if layout == "cifar":
                n = (f"block{i}_lif", f"block{i}_mp" if i >= 3 else None, f"block{i}_conv",
                     f"block{i}_bn")
            else:
                n = (f"proj{i}_lif", f"maxpool{i}", f"proj{i}_conv", f"proj{i}_bn")
            setattr(self, n[0], lif(tau=tau))
            if n[1]:
                setattr(self, n[1], nn.MaxPool2d(3, 2, 1))
            setattr(self, n[2], nn.Conv2d(widths[i - 1], widths[i], 3, 1, 1, bias=False))
            setattr(self, n[3], nn.BatchNorm2d(widths[i]))
            self.names.append(n)

    def forward(self, x):
        x = frames([getattr(self, n) for n in self.first], x)
        for lif_n, pool_n, conv_n, bn_n in self.names:
            mods = [getattr(self, n) for n in (pool_n, conv_n, bn_n) if n]
            x = frames(mods, getattr(self, lif_n)(x))
        return x, tuple(x.shape[-2:])


class SpikingSelfAttention(nn.Module):
    def __init__(self, dim, num_heads, kv_first=False, tau=2.0):
        super().__init__()
        self.dim, self.num_heads, self.kv_first = dim, num_heads, kv_first
        if kv_first:
            self.scale = 0.125
        self.proj_lif = lif(tau=tau)
        for nm in ("q", "k", "v"):
            setattr(self, f"{nm}_conv", nn.Conv1d(dim, dim, 1, 1, bias=False))
            setattr(self, f"{nm}_bn", nn.BatchNorm1d(dim))
            setattr(self, f"{nm}_lif", lif(tau=tau))
        self.attn_lif = lif(0.5, tau)
        self.proj_conv = nn.Conv1d(dim, dim, 1, 1)
        self.proj_bn = nn.BatchNorm1d(dim)

    def forward(self, x):
        T, B, C, H, W = x.shape
        s = self.proj_lif(x).flatten(3)  # [T, B, C, N]

        def heads(nm):  # LIF(BN(conv(s))) as [T, B, heads, N, C / heads]
            conv, bn = getattr(self, f"{nm}_conv"), getattr(self, f"{nm}_bn")
            y = getattr(self, f"{nm}_lif")(frames((conv, bn), s))
            return y.transpose(2, 3).reshape(T, B, H * W, self.num_heads, C // self.num_heads) \
                .transpose(2, 3)

        q, k, v = heads("q"), heads("k"), heads("v")
        if self.kv_first:
            y = torch.matmul(q, torch.matmul(k.transpose(3, 4), v)) * self.scale
        else:
            y = torch.matmul(torch.matmul(q, k.transpose(3, 4)), v) * 0.125
        y = self.attn_lif(y.transpose(3, 4).reshape(T, B, C, H * W))
        return frames((self.proj_conv, self.proj_bn), y).reshape(T, B, C, H, W)


class MLP(nn.Module):
    def __init__(self, in_features, hidden_features, tau=2.0):
        super().__init__()
        self.mlp1_lif = lif(tau=tau)
        self.mlp1_conv = nn.Conv2d(in_features, hidden_features, 1, 1)
        self.mlp1_bn = nn.BatchNorm2d(hidden_features)
        self.mlp2_lif = lif(tau=tau)
        self.mlp2_conv = nn.Conv2d(hidden_features, in_features, 1, 1)
        self.mlp2_bn = nn.BatchNorm2d(in_features)

    def forward(self, x):
        h = frames((self.mlp1_conv, self.mlp1_bn), self.mlp1_lif(x))
        return frames((self.mlp2_conv, self.mlp2_bn), self.mlp2_lif(h))


class SpikingTransformer(nn.Module):
    def __init__(self, dim, num_heads, mlp_ratio, kv_first=False, tau=2.0):
        super().__init__()
        self.norm1 = nn.LayerNorm(dim)  # built, never called (as in the official block)
        self.attn = SpikingSelfAttention(dim, num_heads, kv_first, tau)
        self.norm2 = nn.LayerNorm(dim)
        self.mlp = MLP(dim, int(dim * mlp_ratio), tau)

    def forward(self, x):
        x = x + self.attn(x)
        return x + self.mlp(x)


class vit_snn(nn.Module):
    """layout "cifar" or "imagenet" (the tokenizer's names and pools; "imagenet" also takes
    Q (K^T V) times self.scale); frames=True: the DVS forward, inputs [B, T, C, H, W]."""

    def __init__(self, in_channels=3, num_classes=10, embed_dims=32, num_heads=2, mlp_ratios=4,
                 depths=2, T=4, layout="cifar", frames=False, tau=2.0):
        super().__init__()
        self.T, self.num_classes, self.depths, self.frames = T, num_classes, depths, frames
        self.patch_embed = SpikingTokenizer(in_channels, embed_dims, layout, tau)
        self.block = nn.ModuleList([
            SpikingTransformer(embed_dims, num_heads, mlp_ratios, layout != "cifar", tau)
            for _ in range(depths)])
        self.head = nn.Linear(embed_dims, num_classes)

    def forward(self, x):
        if self.frames:
            x = x.permute(1, 0, 2, 3, 4)
        else:
            x = x.unsqueeze(0).repeat(self.T, 1, 1, 1, 1)
        x, _ = self.patch_embed(x)
        for blk in self.block:
            x = blk(x)
        return self.head(x.flatten(3).mean(3).mean(0))
