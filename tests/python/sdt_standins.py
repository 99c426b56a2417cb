"""Stand-ins for the official Spike-driven Transformer v1 (Yao et al., NeurIPS 2023), written here
from the order of operations its model code performs (module names and attributes as in
BICLab/Spike-Driven-Transformer's MS_SPS, MS_SSA_Conv, MS_MLP_Conv, MS_Block_Conv and
SpikeDrivenTransformer), with the neurons of sj_standins.py. Tensors are [T, B, C, H, W]; every
convolution and BatchNorm acts on the T*B frames.

  stem       3 stages conv3x3+BN -> LIF (-> max-pool 3/2/1 per pooling_stat), then conv3x3+BN
             (-> max-pool) = f; out = BN(rpe_conv(LIF(f))) + f          (analog, not spikes)
  attention  s = LIF(x); Q, K, V = LIF(BN(conv1x1(s))) split into heads;
             m = LIF_0.5(sum over tokens of K*V) per channel; out = BN(proj(Q*m)) + x
  MLP        h = BN(fc1(LIF(x))) (+ x if hidden == in); out = BN(fc2(LIF(h))) + identity
  head       Linear(LIF(mean over tokens)), mean over time

Modules the official code builds but never calls (attn_lif, talking_heads, rpe_lif, the unused
max-pools) are present too, so the exporter must ignore them."""
import torch.nn as nn

from sj_standins import MultiStepLIFNode


def lif(v_threshold=1.0):
    return MultiStepLIFNode(tau=2.0, v_threshold=v_threshold, detach_reset=True)


def frames(mod, x):
    """Applies a stateless module to each of the T*B frames of x [T, B, ...]."""
    y = mod(x.flatten(0, 1))
    return y.reshape(x.shape[0], x.shape[1], *y.shape[1:])


class MS_SPS(nn.Module):
    def __init__(self, in_channels=3, embed_dims=32, pooling_stat="0011"):
        super().__init__()
        self.pooling_stat = pooling_stat
        width = [in_channels] + [embed_dims // d for d in (8, 4, 2, 1)]
        for i, s in enumerate(("", "1", "2", "3")):
            setattr(self, f"proj_conv{s}", nn.Conv2d(width[i], width[i + 1], 3, 1, 1, bias=False))
            setattr(self, f"proj_bn{s}", nn.BatchNorm2d(width[i + 1]))
            setattr(self, f"proj_lif{s}", lif())
            setattr(self, f"maxpool{s}", nn.MaxPool2d(3, 2, 1))
        self.rpe_conv = nn.Conv2d(embed_dims, embed_dims, 3, 1, 1, bias=False)
        self.rpe_bn = nn.BatchNorm2d(embed_dims)
        self.rpe_lif = lif()

    def stage(self, s, x):
        return frames(nn.Sequential(getattr(self, f"proj_conv{s}"), getattr(self, f"proj_bn{s}")),
                      x)

    def forward(self, x):
        for i, s in enumerate(("", "1", "2")):
            x = getattr(self, f"proj_lif{s}")(self.stage(s, x))
            if self.pooling_stat[i] == "1":
                x = frames(getattr(self, f"maxpool{s}"), x)
        f = self.stage("3", x)
        if self.pooling_stat[3] == "1":
            f = frames(self.maxpool3, f)
        r = frames(nn.Sequential(self.rpe_conv, self.rpe_bn), self.proj_lif3(f))
        return r + f


class MS_SSA_Conv(nn.Module):
    def __init__(self, dim, num_heads):
        super().__init__()
        self.dim, self.num_heads, self.dvs, self.scale = dim, num_heads, False, 0.125
        for nm in ("q", "k", "v"):
            setattr(self, f"{nm}_conv", nn.Conv2d(dim, dim, 1, 1, bias=False))
            setattr(self, f"{nm}_bn", nn.BatchNorm2d(dim))
            setattr(self, f"{nm}_lif", lif())
        self.attn_lif = lif(0.5)
        self.talking_heads = nn.Conv1d(num_heads, num_heads, 1, 1, bias=False)
        self.talking_heads_lif = lif(0.5)
        self.proj_conv = nn.Conv2d(dim, dim, 1, 1)
        self.proj_bn = nn.BatchNorm2d(dim)
        self.shortcut_lif = lif()

    def forward(self, x, hook=None):  # as the official: (output, V's spikes, hook)
        T, B, C, H, W = x.shape
        heads = self.num_heads
        s = self.shortcut_lif(x)

        def split(nm):  # [T, B, C, H, W] spikes -> [T, B, heads, tokens, C / heads]
            y = getattr(self, f"{nm}_lif")(frames(
                nn.Sequential(getattr(self, f"{nm}_conv"), getattr(self, f"{nm}_bn")), s))
            return y.reshape(T, B, heads, C // heads, H * W).transpose(3, 4)

        q, k, v = split("q"), split("k"), split("v")
        mask = self.talking_heads_lif((k * v).sum(dim=3, keepdim=True))  # one per channel
        y = (q * mask).transpose(3, 4).reshape(T, B, C, H, W)
        return frames(nn.Sequential(self.proj_conv, self.proj_bn), y) + x, v, hook


class MS_MLP_Conv(nn.Module):
    def __init__(self, in_features, hidden_features):
        super().__init__()
        self.res = in_features == hidden_features
        self.fc1_conv = nn.Conv2d(in_features, hidden_features, 1, 1)
        self.fc1_bn = nn.BatchNorm2d(hidden_features)
        self.fc1_lif = lif()
        self.fc2_conv = nn.Conv2d(hidden_features, in_features, 1, 1)
        self.fc2_bn = nn.BatchNorm2d(in_features)
        self.fc2_lif = lif()

    def forward(self, x):
        identity = x
        h = frames(nn.Sequential(self.fc1_conv, self.fc1_bn), self.fc1_lif(x))
        if self.res:
            h = identity = h + identity
        return frames(nn.Sequential(self.fc2_conv, self.fc2_bn), self.fc2_lif(h)) + identity


class MS_Block_Conv(nn.Module):
    def __init__(self, dim, num_heads, mlp_ratio):
        super().__init__()
        self.attn = MS_SSA_Conv(dim, num_heads)
        self.mlp = MS_MLP_Conv(dim, int(dim * mlp_ratio))

    def forward(self, x):
        x_attn, _, _ = self.attn(x, hook=None)
        return self.mlp(x_attn)


class SpikeDrivenTransformer(nn.Module):
    def __init__(self, in_channels=3, num_classes=10, embed_dims=32, num_heads=2, mlp_ratios=4,
                 depths=2, T=4, pooling_stat="0011"):
        super().__init__()
        self.T, self.TET = T, False
        self.patch_embed = MS_SPS(in_channels, embed_dims, pooling_stat)
        self.block = nn.ModuleList([MS_Block_Conv(embed_dims, num_heads, mlp_ratios)
                                    for _ in range(depths)])
        self.head_lif = lif()
        self.head = nn.Linear(embed_dims, num_classes)

    def forward(self, x):
        x = self.patch_embed(x.unsqueeze(0).repeat(self.T, 1, 1, 1, 1))
        for blk in self.block:
            x = blk(x)
        x = self.head_lif(x.flatten(3).mean(3))
        return self.head(x).mean(0)
