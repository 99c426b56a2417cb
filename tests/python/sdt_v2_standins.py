"""Stand-ins for the official Spike-driven Transformer V2 / Meta-SpikeFormer classifier
(BICLab/Spike-Driven-Transformer-V2, classification/models.py: Spiking_vit_MetaFormer), written
here from its equations (docs/bringing-a-model.md, python/ternion/exporter/sdt_v2.py): the same
class and attribute names, so that ternion.export recognises them and names the same paths, and
the same order of operations, so that PyTorch's rounding is the official forward's. No official
code is copied. Tensors are [T, B, C, H, W]; convolutions and BatchNorms act on the T*B frames;
every neuron is sj_standins' MultiStepLIFNode (tau 2, hard reset to 0).

  BNAndPadLayer    y = BN(x), then a border of pad_pixels around y holding, per channel, the
                   BatchNorm's eval output for 0: bias - (mean * weight) / sqrt(var + eps)
  RepConv          BN(conv1x1(dw3x3(BNAndPad(conv1x1(x)))))   (dw: groups = channels, no pad)
  SepConv          BN(pw2(dw7x7(LIF(BN(pw1(LIF(x)))))))        (dw padded by 3 with zeros)
  MS_ConvBlock     x + SepConv(x); then x + BN(conv3x3(LIF(BN(conv3x3(LIF(x))))))
  MS_Attention_RepConv_qkv_id
                   s = LIF(x); Q, K, V = LIF(BN(RepConv(s))) split into heads;
                   y = LIF_0.5((Q @ (K^T @ V)) * 0.125); out = BN(RepConv(y))
  MS_MLP           BN(conv1d(LIF(BN(conv1d(LIF(x))))))  on [T*B, C, N], kernel 1, with bias
  MS_Block         x + attn(x), then + mlp(x)
  model            stages, mean over tokens, LIF, Linear head (and head_kd, averaged), mean
                   over time"""
import torch
import torch.nn as nn

from sj_standins import MultiStepLIFNode


def lif(v_threshold=1.0):
    return MultiStepLIFNode(tau=2.0, v_threshold=v_threshold, detach_reset=True)


def frames(mod, x):
    """A stateless module applied to each of the T*B frames of x [T, B, ...]."""
    y = mod(x.flatten(0, 1))
    return y.reshape(x.shape[0], x.shape[1], *y.shape[1:])


class BNAndPadLayer(nn.Module):
    def __init__(self, pad_pixels, num_features):
        super().__init__()
        self.bn = nn.BatchNorm2d(num_features)
        self.pad_pixels = pad_pixels

    def forward(self, x):
        y = self.bn(x)
        p = self.pad_pixels
        if p == 0:
            return y
        bn = self.bn
        edge = bn.bias.detach() - bn.running_mean * bn.weight.detach() / \
            torch.sqrt(bn.running_var + bn.eps)
        n, c, h, w = y.shape
        out = edge.reshape(1, c, 1, 1).repeat(n, 1, h + 2 * p, w + 2 * p)
        out[:, :, p:p + h, p:p + w] = y
        return out


class RepConv(nn.Module):
    def __init__(self, cin, cout):
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(cin, cin, 1, bias=False), BNAndPadLayer(1, cin),
            nn.Sequential(nn.Conv2d(cin, cin, 3, groups=cin, bias=False),
                          nn.Conv2d(cin, cout, 1, bias=False), nn.BatchNorm2d(cout)))

    def forward(self, x):
        return self.body(x)


class SepConv(nn.Module):
    def __init__(self, dim, ratio=2, k=7, pad=3):
        super().__init__()
        mid = int(ratio * dim)
        self.lif1, self.lif2 = lif(), lif()
        self.pwconv1 = nn.Conv2d(dim, mid, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(mid)
        self.dwconv = nn.Conv2d(mid, mid, k, padding=pad, groups=mid, bias=False)
        self.pwconv2 = nn.Conv2d(mid, dim, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(dim)

    def forward(self, x):
        x = frames(nn.Sequential(self.pwconv1, self.bn1), self.lif1(x))
        return frames(nn.Sequential(self.dwconv, self.pwconv2, self.bn2), self.lif2(x))


class MS_ConvBlock(nn.Module):
    def __init__(self, dim, ratio=4):
        super().__init__()
        self.Conv = SepConv(dim)
        self.lif1, self.lif2 = lif(), lif()
        self.conv1 = nn.Conv2d(dim, dim * ratio, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(dim * ratio)
        self.conv2 = nn.Conv2d(dim * ratio, dim, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(dim)

    def forward(self, x):
        x = self.Conv(x) + x
        y = frames(nn.Sequential(self.conv1, self.bn1), self.lif1(x))
        return x + frames(nn.Sequential(self.conv2, self.bn2), self.lif2(y))


class MS_MLP(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.fc1_conv, self.fc1_bn = nn.Conv1d(dim, hidden, 1), nn.BatchNorm1d(hidden)
        self.fc2_conv, self.fc2_bn = nn.Conv1d(hidden, dim, 1), nn.BatchNorm1d(dim)
        self.fc1_lif, self.fc2_lif = lif(), lif()

    def forward(self, x):
        T, B, C, H, W = x.shape
        y = frames(nn.Sequential(self.fc1_conv, self.fc1_bn), self.fc1_lif(x.flatten(3)))
        y = frames(nn.Sequential(self.fc2_conv, self.fc2_bn), self.fc2_lif(y))
        return y.reshape(T, B, C, H, W)


class MS_Attention_RepConv_qkv_id(nn.Module):
    def __init__(self, dim, num_heads):
        super().__init__()
        self.dim, self.num_heads, self.scale = dim, num_heads, 0.125
        self.head_lif = lif()
        for nm in ("q", "k", "v"):
            setattr(self, f"{nm}_conv", nn.Sequential(RepConv(dim, dim), nn.BatchNorm2d(dim)))
            setattr(self, f"{nm}_lif", lif())
        self.attn_lif = lif(0.5)
        self.proj_conv = nn.Sequential(RepConv(dim, dim), nn.BatchNorm2d(dim))

    def forward(self, x):
        T, B, C, H, W = x.shape
        s = self.head_lif(x)

        def heads(nm):  # [T, B, C, H, W] spikes -> [T, B, heads, N, C / heads]
            y = getattr(self, f"{nm}_lif")(frames(getattr(self, f"{nm}_conv"), s))
            return y.flatten(3).reshape(T, B, self.num_heads, C // self.num_heads, H * W) \
                .transpose(3, 4)

        q, k, v = heads("q"), heads("k"), heads("v")
        y = (q @ (k.transpose(-2, -1) @ v)) * self.scale
        y = self.attn_lif(y.transpose(3, 4).reshape(T, B, C, H * W))
        return frames(self.proj_conv, y.reshape(T, B, C, H, W))


class MS_Block(nn.Module):
    def __init__(self, dim, num_heads, mlp_ratio=4):
        super().__init__()
        self.attn = MS_Attention_RepConv_qkv_id(dim, num_heads)
        self.mlp = MS_MLP(dim, dim * mlp_ratio)

    def forward(self, x):
        x = x + self.attn(x)
        return x + self.mlp(x)


class MS_DownSampling(nn.Module):
    def __init__(self, cin, cout, k, stride, pad, first):
        super().__init__()
        self.encode_conv = nn.Conv2d(cin, cout, k, stride, pad)
        self.encode_bn = nn.BatchNorm2d(cout)
        if not first:
            self.encode_lif = lif()

    def forward(self, x):
        if hasattr(self, "encode_lif"):
            x = self.encode_lif(x)
        return frames(nn.Sequential(self.encode_conv, self.encode_bn), x)


STAGES = ("downsample1_1", "ConvBlock1_1", "downsample1_2", "ConvBlock1_2", "downsample2",
          "ConvBlock2_1", "ConvBlock2_2", "downsample3", "block3", "downsample4", "block4")


class Spiking_vit_MetaFormer(nn.Module):
    """embed_dim [d0, d1, d2, d3]; depths: blocks in stages 3 and 4."""

    def __init__(self, in_channels=3, num_classes=10, embed_dim=(16, 16, 32, 32), num_heads=2,
                 depths=(1, 1), T=2, kd=False):
        super().__init__()
        d0, d1, d2, d3 = embed_dim
        self.T, self.kd = T, kd
        self.downsample1_1 = MS_DownSampling(in_channels, d0 // 2, 7, 2, 3, True)
        self.ConvBlock1_1 = nn.ModuleList([MS_ConvBlock(d0 // 2)])
        self.downsample1_2 = MS_DownSampling(d0 // 2, d0, 3, 2, 1, False)
        self.ConvBlock1_2 = nn.ModuleList([MS_ConvBlock(d0)])
        self.downsample2 = MS_DownSampling(d0, d1, 3, 2, 1, False)
        self.ConvBlock2_1 = nn.ModuleList([MS_ConvBlock(d1)])
        self.ConvBlock2_2 = nn.ModuleList([MS_ConvBlock(d1)])
        self.downsample3 = MS_DownSampling(d1, d2, 3, 2, 1, False)
        self.block3 = nn.ModuleList([MS_Block(d2, num_heads) for _ in range(depths[0])])
        self.downsample4 = MS_DownSampling(d2, d3, 3, 1, 1, False)
        self.block4 = nn.ModuleList([MS_Block(d3, num_heads) for _ in range(depths[1])])
        self.lif = lif()
        self.head = nn.Linear(d3, num_classes)
        if kd:
            self.head_kd = nn.Linear(d3, num_classes)

    def forward(self, x):
        x = x.unsqueeze(0).repeat(self.T, 1, 1, 1, 1)
        for name in STAGES:
            stage = getattr(self, name)
            for m in (stage if isinstance(stage, nn.ModuleList) else [stage]):
                x = m(x)
        s = self.lif(x.flatten(3).mean(3))
        y = self.head(s).mean(0)
        return (y + self.head_kd(s).mean(0)) / 2 if self.kd else y
