"""Stand-ins for the official QKFormer (Zhou et al., NeurIPS 2024), CIFAR layout, written here from
the equations its model code computes (module names and attributes as in
zhouchenlin2096/QKFormer's cifar10/model.py: PatchEmbedInit, PatchEmbeddingStage,
Token_QK_Attention, Spiking_Self_Attention, MLP, TokenSpikingTransformer, SpikingTransformer,
spiking_transformer), with the neurons of sj_standins.py. Tensors are [T, B, C, H, W]; every
convolution and BatchNorm acts on the T*B frames; the attentions' 1x1 convolutions are Conv1d
on [T*B, C, N] (N = H*W tokens), the MLP's Conv2d.

  first embedding  s = LIF(BN(conv3x3(x)));  out = LIF(BN(conv3x3(s))) + LIF(BN(conv1x1(s)))
  later embedding  s = LIF(BN(conv3x3(x)));  out = LIF(maxpool_3/2/1(BN(conv3x3(s))))
                                                   + LIF(BN(conv1x1 stride 2(x)))
  Q-K token attn   Q, K = LIF(BN(conv1d(x)));  m[h, n] = LIF_0.5(sum_{c in head h} Q[c, n]);
                   y[c, n] = m[h(c), n] K[c, n];  out = LIF(BN(conv1d(y) + bias))
  self-attention   Q, K, V as above; per head y = LIF_0.5((Q (K^T V)) / 8);  out as above
  MLP              LIF(BN(conv1x1(LIF(BN(conv1x1(x))))))
  block            x = x + attn(x);  x = x + mlp(x)
  model            stage i: embedding i, then its blocks (Q-K token attention in all stages but
                   the last, which uses self-attention); head(mean_t mean_tokens x)

The unused max-pool of the self-attention (qkv_mp) is present, so the exporter must ignore it.
The official self-attention runs proj_lif over [T*B, C, N] (its membrane crosses a batch's
samples); these stand-ins run it per sample, which is the official forward at batch size 1."""
import torch
import torch.nn as nn

from sj_standins import MultiStepLIFNode


def lif(v_threshold=1.0):
    return MultiStepLIFNode(tau=2.0, v_threshold=v_threshold, detach_reset=True)


def frames(mods, x):
    """Applies stateless modules in turn to each of the T*B frames of x [T, B, ...]."""
    y = x.flatten(0, 1)
    for m in mods:
        y = m(y)
    return y.reshape(x.shape[0], x.shape[1], *y.shape[1:])


class PatchEmbedInit(nn.Module):
    def __init__(self, in_channels, embed_dims):
        super().__init__()
        half = embed_dims // 2
        self.proj_conv = nn.Conv2d(in_channels, half, 3, 1, 1, bias=False)
        self.proj_bn = nn.BatchNorm2d(half)
        self.proj_lif = lif()
        self.proj1_conv = nn.Conv2d(half, embed_dims, 3, 1, 1, bias=False)
        self.proj1_bn = nn.BatchNorm2d(embed_dims)
        self.proj1_lif = lif()
        self.proj_res_conv = nn.Conv2d(half, embed_dims, 1, 1, 0, bias=False)
        self.proj_res_bn = nn.BatchNorm2d(embed_dims)
        self.proj_res_lif = lif()

    def forward(self, x):
        s = self.proj_lif(frames((self.proj_conv, self.proj_bn), x))
        main = self.proj1_lif(frames((self.proj1_conv, self.proj1_bn), s))
        return main + self.proj_res_lif(frames((self.proj_res_conv, self.proj_res_bn), s))


class PatchEmbeddingStage(nn.Module):
    def __init__(self, embed_dims):
        super().__init__()
        self.proj3_conv = nn.Conv2d(embed_dims // 2, embed_dims, 3, 1, 1, bias=False)
        self.proj3_bn = nn.BatchNorm2d(embed_dims)
        self.proj3_lif = lif()
        self.proj4_conv = nn.Conv2d(embed_dims, embed_dims, 3, 1, 1, bias=False)
        self.proj4_bn = nn.BatchNorm2d(embed_dims)
        self.proj4_maxpool = nn.MaxPool2d(3, 2, 1)
        self.proj4_lif = lif()
        self.proj_res_conv = nn.Conv2d(embed_dims // 2, embed_dims, 1, 2, 0, bias=False)
        self.proj_res_bn = nn.BatchNorm2d(embed_dims)
        self.proj_res_lif = lif()

    def forward(self, x):
        s = self.proj3_lif(frames((self.proj3_conv, self.proj3_bn), x))
        main = self.proj4_lif(frames((self.proj4_conv, self.proj4_bn, self.proj4_maxpool), s))
        return main + self.proj_res_lif(frames((self.proj_res_conv, self.proj_res_bn), x))


class _Attention(nn.Module):
    """The projections shared by both attentions: {q,k(,v)}_conv (Conv1d, kernel 1, no bias) +
    BatchNorm1d + LIF, the mask/attention LIF at 0.5, proj_conv (with bias) + BN + LIF."""

    def __init__(self, dim, num_heads, parts):
        super().__init__()
        self.dim, self.num_heads = dim, num_heads
        for nm in parts:
            setattr(self, f"{nm}_conv", nn.Conv1d(dim, dim, 1, 1, bias=False))
            setattr(self, f"{nm}_bn", nn.BatchNorm1d(dim))
            setattr(self, f"{nm}_lif", lif())
        self.attn_lif = lif(0.5)
        self.proj_conv = nn.Conv1d(dim, dim, 1, 1)
        self.proj_bn = nn.BatchNorm1d(dim)
        self.proj_lif = lif()

    def spikes(self, nm, x):  # x [T, B, C, N] -> LIF(BN(conv(x))) [T, B, C, N]
        conv, bn = getattr(self, f"{nm}_conv"), getattr(self, f"{nm}_bn")
        return getattr(self, f"{nm}_lif")(frames((conv, bn), x))

    def project(self, y, shape):  # y [T, B, C, N]
        return self.proj_lif(frames((self.proj_conv, self.proj_bn), y).reshape(shape))


class Token_QK_Attention(_Attention):
    def __init__(self, dim, num_heads):
        super().__init__(dim, num_heads, ("q", "k"))

    def forward(self, x):
        T, B, C, H, W = x.shape
        t = x.flatten(3)
        heads = (T, B, self.num_heads, C // self.num_heads, H * W)
        q = self.spikes("q", t).reshape(heads)
        k = self.spikes("k", t).reshape(heads)
        mask = self.attn_lif(q.sum(dim=3, keepdim=True))  # [T, B, heads, 1, N]
        return self.project((mask * k).reshape(T, B, C, H * W), x.shape)


class Spiking_Self_Attention(_Attention):
    def __init__(self, dim, num_heads):
        super().__init__(dim, num_heads, ("q", "k", "v"))
        self.scale = 0.125
        self.qkv_mp = nn.MaxPool1d(4)  # built, never called

    def forward(self, x):
        T, B, C, H, W = x.shape
        t = x.flatten(3)

        def split(nm):  # [T, B, C, N] -> [T, B, heads, N, C / heads]
            s = self.spikes(nm, t)
            return s.reshape(T, B, self.num_heads, C // self.num_heads, H * W).transpose(3, 4)

        q, k, v = split("q"), split("k"), split("v")
        y = torch.matmul(q, torch.matmul(k.transpose(3, 4), v)) * self.scale
        y = self.attn_lif(y.transpose(3, 4).reshape(T, B, C, H * W))
        return self.project(y, x.shape)


class MLP(nn.Module):
    def __init__(self, in_features, hidden_features):
        super().__init__()
        self.mlp1_conv = nn.Conv2d(in_features, hidden_features, 1, 1)
        self.mlp1_bn = nn.BatchNorm2d(hidden_features)
        self.mlp1_lif = lif()
        self.mlp2_conv = nn.Conv2d(hidden_features, in_features, 1, 1)
        self.mlp2_bn = nn.BatchNorm2d(in_features)
        self.mlp2_lif = lif()

    def forward(self, x):
        h = self.mlp1_lif(frames((self.mlp1_conv, self.mlp1_bn), x))
        return self.mlp2_lif(frames((self.mlp2_conv, self.mlp2_bn), h))


class TokenSpikingTransformer(nn.Module):
    def __init__(self, dim, num_heads, mlp_ratio):
        super().__init__()
        self.tssa = Token_QK_Attention(dim, num_heads)
        self.mlp = MLP(dim, int(dim * mlp_ratio))

    def forward(self, x):
        x = x + self.tssa(x)
        return x + self.mlp(x)


class SpikingTransformer(nn.Module):
    def __init__(self, dim, num_heads, mlp_ratio):
        super().__init__()
        self.ssa = Spiking_Self_Attention(dim, num_heads)
        self.mlp = MLP(dim, int(dim * mlp_ratio))

    def forward(self, x):
        x = x + self.ssa(x)
        return x + self.mlp(x)


class spiking_transformer(nn.Module):
    """stages: the number of (embedding, blocks) stages; embed_dims is the last stage's width,
    stage i of s has embed_dims / 2^(s - i) channels; depths blocks in the last stage, one in
    each other (the official CIFAR layout is stages=3, depths - 2 blocks)."""

    def __init__(self, in_channels=3, num_classes=10, embed_dims=32, num_heads=2, mlp_ratios=4,
                 depths=1, T=4, stages=3):
        super().__init__()
        self.T, self.num_classes = T, num_classes
        for i in range(1, stages + 1):
            dim = embed_dims // 2 ** (stages - i)
            pe = PatchEmbedInit(in_channels, dim) if i == 1 else PatchEmbeddingStage(dim)
            last = i == stages
            block = SpikingTransformer if last else TokenSpikingTransformer
            setattr(self, f"patch_embed{i}", pe)
            setattr(self, f"stage{i}", nn.ModuleList(
                [block(dim, num_heads, mlp_ratios) for _ in range(depths if last else 1)]))
        self.stages = stages
        self.head = nn.Linear(embed_dims, num_classes)

    def forward(self, x):
        x = x.unsqueeze(0).repeat(self.T, 1, 1, 1, 1)
        for i in range(1, self.stages + 1):
            x = getattr(self, f"patch_embed{i}")(x)
            for blk in getattr(self, f"stage{i}"):
                x = blk(x)
        return self.head(x.flatten(3).mean(3).mean(0))
