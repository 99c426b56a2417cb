"""Stand-ins for the official Spike-driven Transformer V3 classifier (BICLab/Spike-Driven-
Transformer-V3, SDT_V3/Classification/Model_Base/models.py: Spiking_vit_MetaFormer_Spike_SepConv),
written here from its equations (docs/bringing-a-model.md, python/ternion/exporter/sdt_v3.py):
the same attribute names, so that ternion.export recognises them, and the same order of
operations, so that PyTorch's rounding is the official forward's. No official code is copied.

  MultiSpike       s = round(clamp(x, min_value, max_value)) / Norm   (torch.round: half to even)
  DownSampling     BN(conv(x)), MultiSpike first unless it is the first one
  SepConvSpike     three (MultiSpike, conv, BN) stages: 1x1 expand, depthwise k x k, 1x1 back
  ConvBlock        x + SepConvSpike(x); then x + BN(conv3x3(MS(BN(conv3x3(MS(x))))))
  LinearAttention  s = MS(x); Q, K, V = MS(BN(conv1x1(s))); per head MS((Q K^T) V * 2/sqrt(d));
                   BN(conv1x1(.))
  MLP              BN(conv1(MS(BN(conv1(MS(x))))))   on [B, C, N]
  Block            x + SepConvSpike(x), x + attn(x), x + mlp(x)
  Model            downsamples and blocks, mean over tokens, MS(Norm 1), Linear head"""
import torch
import torch.nn as nn


class MultiSpike(nn.Module):
    def __init__(self, min_value=0, max_value=4, Norm=None):
        super().__init__()
        self.min_value, self.max_value = min_value, max_value
        self.Norm = max_value if Norm is None else Norm

    @staticmethod
    def spike_function(x, lo, hi):
        return torch.round(torch.clamp(x, min=lo, max=hi))

    def forward(self, x):
        return self.spike_function(x, self.min_value, self.max_value) / self.Norm


def conv_bn(cin, cout, k=1, pad=0, groups=1):
    return nn.Sequential(nn.Conv2d(cin, cout, k, 1, pad, groups=groups, bias=False),
                         nn.BatchNorm2d(cout))


class DownSampling(nn.Module):
    def __init__(self, cin, cout, k, stride, pad, first):
        super().__init__()
        self.encode_conv = nn.Conv2d(cin, cout, k, stride, pad)
        self.encode_bn = nn.BatchNorm2d(cout)
        if not first:
            self.encode_spike = MultiSpike()

    def forward(self, x):
        if hasattr(self, "encode_spike"):
            x = self.encode_spike(x)
        return self.encode_bn(self.encode_conv(x))


class SepConvSpike(nn.Module):
    def __init__(self, dim, ratio=2, k=7, pad=3):
        super().__init__()
        mid = int(ratio * dim)
        self.spike1, self.spike2, self.spike3 = MultiSpike(), MultiSpike(), MultiSpike()
        self.pwconv1 = conv_bn(dim, mid)
        self.dwconv = conv_bn(mid, mid, k, pad, groups=mid)
        self.pwconv2 = conv_bn(mid, dim)

    def forward(self, x):
        x = self.pwconv1(self.spike1(x))
        x = self.dwconv(self.spike2(x))
        return self.pwconv2(self.spike3(x))


class ConvBlock(nn.Module):
    def __init__(self, dim, ratio=4):
        super().__init__()
        self.Conv = SepConvSpike(dim)
        self.spike1, self.spike2 = MultiSpike(), MultiSpike()
        self.conv1 = nn.Conv2d(dim, dim * ratio, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(dim * ratio)
        self.conv2 = nn.Conv2d(dim * ratio, dim, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(dim)

    def forward(self, x):
        x = x + self.Conv(x)
        y = self.bn1(self.conv1(self.spike1(x)))
        return x + self.bn2(self.conv2(self.spike2(y)))


class LinearAttention(nn.Module):
    def __init__(self, dim, num_heads, ratio=4):
        super().__init__()
        self.num_heads = num_heads
        self.scale = (dim // num_heads) ** -0.5
        self.ratio = ratio
        self.head_spike = MultiSpike()
        self.q_conv, self.k_conv = conv_bn(dim, dim), conv_bn(dim, dim)
        self.v_conv = conv_bn(dim, dim * ratio)
        self.q_spike, self.k_spike, self.v_spike = MultiSpike(), MultiSpike(), MultiSpike()
        self.attn_spike = MultiSpike()
        self.proj_conv = conv_bn(dim * ratio, dim)

    def heads(self, t):
        """[B, C, H, W] -> [B, heads, N, C / heads]."""
        B, C = t.shape[:2]
        return t.flatten(2).transpose(1, 2).reshape(B, -1, self.num_heads,
                                                    C // self.num_heads).permute(0, 2, 1, 3)

    def forward(self, x):
        B, C, H, W = x.shape
        s = self.head_spike(x)
        q = self.heads(self.q_spike(self.q_conv(s)))
        k = self.heads(self.k_spike(self.k_conv(s)))
        v = self.heads(self.v_spike(self.v_conv(s)))
        y = ((q @ k.transpose(-2, -1)) @ v) * (self.scale * 2)  # scores first, as the paper
        y = self.attn_spike(y.transpose(2, 3).reshape(B, C * self.ratio, H * W))
        return self.proj_conv(y.reshape(B, C * self.ratio, H, W))


class MLP(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.fc1_spike, self.fc2_spike = MultiSpike(), MultiSpike()
        self.fc1_conv, self.fc1_bn = nn.Conv1d(dim, hidden, 1), nn.BatchNorm1d(hidden)
        self.fc2_conv, self.fc2_bn = nn.Conv1d(hidden, dim, 1), nn.BatchNorm1d(dim)

    def forward(self, x):
        B, C, H, W = x.shape
        y = self.fc1_bn(self.fc1_conv(self.fc1_spike(x.flatten(2))))
        return self.fc2_bn(self.fc2_conv(self.fc2_spike(y))).reshape(B, C, H, W)


class Block(nn.Module):
    def __init__(self, dim, num_heads, mlp_ratio=4):
        super().__init__()
        self.conv = SepConvSpike(dim, k=3, pad=1)
        self.attn = LinearAttention(dim, num_heads)
        self.mlp = MLP(dim, dim * mlp_ratio)

    def forward(self, x):
        x = x + self.conv(x)
        x = x + self.attn(x)
        return x + self.mlp(x)


class Model(nn.Module):
    """embed_dim [d0, d1, d2, d3]; depths: blocks in stages 3 and 4."""

    def __init__(self, in_channels=3, num_classes=10, embed_dim=(16, 16, 32, 32), num_heads=2,
                 depths=(1, 1)):
        super().__init__()
        d0, d1, d2, d3 = embed_dim
        self.downsample1_1 = DownSampling(in_channels, d0 // 2, 7, 2, 3, True)
        self.ConvBlock1_1 = nn.ModuleList([ConvBlock(d0 // 2)])
        self.downsample1_2 = DownSampling(d0 // 2, d0, 3, 2, 1, False)
        self.ConvBlock1_2 = nn.ModuleList([ConvBlock(d0)])
        self.downsample2 = DownSampling(d0, d1, 3, 2, 1, False)
        self.ConvBlock2_1 = nn.ModuleList([ConvBlock(d1)])
        self.ConvBlock2_2 = nn.ModuleList([ConvBlock(d1)])
        self.downsample3 = DownSampling(d1, d2, 3, 2, 1, False)
        self.block3 = nn.ModuleList([Block(d2, num_heads) for _ in range(depths[0])])
        self.downsample4 = DownSampling(d2, d3, 3, 1, 1, False)
        self.block4 = nn.ModuleList([Block(d3, num_heads) for _ in range(depths[1])])
        self.head = nn.Linear(d3, num_classes)
        self.spike = MultiSpike(Norm=1)

    def forward(self, x):
        for name in ("downsample1_1", "ConvBlock1_1", "downsample1_2", "ConvBlock1_2",
                     "downsample2", "ConvBlock2_1", "ConvBlock2_2", "downsample3", "block3",
                     "downsample4", "block4"):
            stage = getattr(self, name)
            for m in (stage if isinstance(stage, nn.ModuleList) else [stage]):
                x = m(x)
        return self.head(self.spike(x.flatten(2).mean(2)))
