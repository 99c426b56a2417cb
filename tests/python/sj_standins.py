"""Stand-ins for the SpikingJelly and Spikformer modules the exporter converts, written here from
their documented equations and structure (SpikingJelly activation_based/neuron.py, 0.0.0.0.14;
the Spikformer paper and its official model code's module layout). The tests never import the
real packages.

SpikingJelly's neurons, per step (x the input, v the membrane, float32 throughout):
  charge  LIF, decay_input:      v = v + (x - v) / tau              (v_reset None or 0)
                                 v = v + (x - (v - v_reset)) / tau
          LIF, no decay_input:   v = v * (1 - 1/tau) + x            (v_reset None or 0)
                                 v = v - (v - v_reset) / tau + x
          ParametricLIF:         as LIF with 1/tau = sigmoid(w), multiplied
          IF:                    v = v + x
  fire    s = heaviside(v - v_threshold)  (1 where v >= v_threshold)
  reset   hard: v = (1 - s) v + s v_reset;  soft (v_reset None): v = v - s v_threshold
The membrane starts at v_reset (0 for soft reset)."""
import math

import torch
import torch.nn as nn


class BaseNode(nn.Module):
    def __init__(self, v_threshold=1.0, v_reset=0.0, detach_reset=False, backend="torch"):
        super().__init__()
        self.v_threshold, self.v_reset = v_threshold, v_reset
        self.detach_reset, self.backend = detach_reset, backend
        self.reset()

    def reset(self):
        self.v = 0.0 if self.v_reset is None else self.v_reset

    def step(self, x):
        if isinstance(self.v, float):
            self.v = torch.full_like(x, self.v)
        self.charge(x)
        s = (self.v - self.v_threshold >= 0).to(x)
        if self.v_reset is None:
            self.v = self.v - s * self.v_threshold
        else:
            self.v = (1.0 - s) * self.v + s * self.v_reset
        return s

    def forward(self, x_seq):  # multi-step: [T, ...]
        return torch.stack([self.step(x) for x in x_seq])


class MultiStepLIFNode(BaseNode):
    def __init__(self, tau=2.0, decay_input=True, v_threshold=1.0, v_reset=0.0,
                 detach_reset=False, backend="torch"):
        self.tau, self.decay_input = tau, decay_input
        super().__init__(v_threshold, v_reset, detach_reset, backend)

    def charge(self, x):
        reset0 = self.v_reset is None or self.v_reset == 0.0
        if self.decay_input:
            self.v = self.v + (x - self.v) / self.tau if reset0 else \
                self.v + (x - (self.v - self.v_reset)) / self.tau
        else:
            self.v = self.v * (1.0 - 1.0 / self.tau) + x if reset0 else \
                self.v - (self.v - self.v_reset) / self.tau + x


class LIFNode(MultiStepLIFNode):
    """activation_based's LIFNode in eval mode (its TorchScript path): the hard-reset update
    without decay_input is v - (v - v_reset) / tau + x even at v_reset 0. step_mode 's' takes
    one step [B, ...] per call, 'm' a sequence [T, B, ...]."""

    def __init__(self, *args, step_mode="m", **kw):
        super().__init__(*args, **kw)
        self.step_mode = step_mode

    def forward(self, x):
        return super().forward(x) if self.step_mode == "m" else self.step(x)

    def charge(self, x):
        if not self.decay_input and self.v_reset is not None:
            self.v = self.v - (self.v - self.v_reset) / self.tau + x
        else:
            super().charge(x)


class MultiStepParametricLIFNode(BaseNode):
    def __init__(self, init_tau=2.0, decay_input=True, v_threshold=1.0, v_reset=0.0,
                 detach_reset=False, backend="torch"):
        super().__init__(v_threshold, v_reset, detach_reset, backend)
        self.decay_input = decay_input
        self.w = nn.Parameter(torch.as_tensor(-math.log(init_tau - 1.0)))

    def charge(self, x):
        k = self.w.sigmoid()
        reset0 = self.v_reset is None or self.v_reset == 0.0
        if self.decay_input:
            self.v = self.v + (x - self.v) * k if reset0 else \
                self.v + (x - (self.v - self.v_reset)) * k
        else:
            self.v = self.v * (1.0 - k) + x if reset0 else self.v - (self.v - self.v_reset) * k + x


class MultiStepIFNode(BaseNode):
    def charge(self, x):
        self.v = self.v + x


class SeqToANNContainer(nn.Sequential):
    """[T, B, ...] -> flatten T and B -> the stateless modules -> back to [T, B, ...]."""

    def forward(self, x_seq):
        y = super().forward(x_seq.flatten(0, 1))
        return y.reshape(x_seq.shape[0], x_seq.shape[1], *y.shape[1:])


def reset_net(net):
    for m in net.modules():
        if isinstance(m, BaseNode):
            m.reset()


# ----------------------------------------------------------------------------------------------
# Spikformer (Zhou et al., ICLR 2023), CIFAR layout: attribute names follow the official code.


class MLP(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.fc1_linear, self.fc1_bn = nn.Linear(dim, hidden), nn.BatchNorm1d(hidden)
        self.fc1_lif = MultiStepLIFNode(tau=2.0, detach_reset=True)
        self.fc2_linear, self.fc2_bn = nn.Linear(hidden, dim), nn.BatchNorm1d(dim)
        self.fc2_lif = MultiStepLIFNode(tau=2.0, detach_reset=True)

    @staticmethod
    def lin_bn(lin, bn, x):  # x [T, B, N, C]: Linear, then BN over channels
        T, B, N, _ = x.shape
        y = lin(x.flatten(0, 1))
        return bn(y.transpose(-1, -2)).transpose(-1, -2).reshape(T, B, N, -1).contiguous()

    def forward(self, x):
        x = self.fc1_lif(self.lin_bn(self.fc1_linear, self.fc1_bn, x))
        return self.fc2_lif(self.lin_bn(self.fc2_linear, self.fc2_bn, x))


class SSA(nn.Module):
    def __init__(self, dim, num_heads):
        super().__init__()
        self.num_heads, self.scale = num_heads, 0.125
        for nm in ("q", "k", "v", "proj"):
            setattr(self, f"{nm}_linear", nn.Linear(dim, dim))
            setattr(self, f"{nm}_bn", nn.BatchNorm1d(dim))
            if nm != "proj":
                setattr(self, f"{nm}_lif", MultiStepLIFNode(tau=2.0, detach_reset=True))
        self.attn_lif = MultiStepLIFNode(tau=2.0, v_threshold=0.5, detach_reset=True)
        self.proj_lif = MultiStepLIFNode(tau=2.0, detach_reset=True)

    def forward(self, x):
        T, B, N, C = x.shape
        H = self.num_heads

        def heads(nm):
            s = getattr(self, f"{nm}_lif")(
                MLP.lin_bn(getattr(self, f"{nm}_linear"), getattr(self, f"{nm}_bn"), x))
            return s.reshape(T, B, N, H, C // H).permute(0, 1, 3, 2, 4)

        q, k, v = heads("q"), heads("k"), heads("v")
        y = ((q @ k.transpose(-2, -1)) * self.scale) @ v
        y = self.attn_lif(y.transpose(2, 3).reshape(T, B, N, C))
        return self.proj_lif(MLP.lin_bn(self.proj_linear, self.proj_bn, y))


class Block(nn.Module):
    def __init__(self, dim, num_heads, mlp_ratio):
        super().__init__()
        self.norm1 = nn.LayerNorm(dim)  # present in the official code, unused by forward
        self.attn = SSA(dim, num_heads)
        self.norm2 = nn.LayerNorm(dim)
        self.mlp = MLP(dim, int(dim * mlp_ratio))

    def forward(self, x):
        x = x + self.attn(x)
        return x + self.mlp(x)


class SPS(nn.Module):
    """Four conv+BN+LIF stages (channels D/8, D/4, D/2, D), max-pooling (3, 2, 1) after the last
    two; then a relative-position conv+BN+LIF whose spikes are added to its input."""

    def __init__(self, in_channels, embed_dims):
        super().__init__()
        chans = [in_channels, embed_dims // 8, embed_dims // 4, embed_dims // 2, embed_dims]
        for i, s in enumerate(["", "1", "2", "3"]):
            setattr(self, f"proj_conv{s}", nn.Conv2d(chans[i], chans[i + 1], 3, 1, 1, bias=False))
            setattr(self, f"proj_bn{s}", nn.BatchNorm2d(chans[i + 1]))
            setattr(self, f"proj_lif{s}", MultiStepLIFNode(tau=2.0, detach_reset=True))
        self.maxpool2 = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
        self.maxpool3 = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
        self.rpe_conv = nn.Conv2d(embed_dims, embed_dims, 3, 1, 1, bias=False)
        self.rpe_bn = nn.BatchNorm2d(embed_dims)
        self.rpe_lif = MultiStepLIFNode(tau=2.0, detach_reset=True)

    def forward(self, x):
        T, B = x.shape[:2]
        for s in ["", "1", "2", "3"]:
            y = getattr(self, f"proj_bn{s}")(getattr(self, f"proj_conv{s}")(x.flatten(0, 1)))
            x = getattr(self, f"proj_lif{s}")(y.reshape(T, B, *y.shape[1:]))
            if hasattr(self, f"maxpool{s}"):
                y = getattr(self, f"maxpool{s}")(x.flatten(0, 1))
                x = y.reshape(T, B, *y.shape[1:])
        feat = x
        y = self.rpe_bn(self.rpe_conv(x.flatten(0, 1)))
        x = self.rpe_lif(y.reshape(T, B, *y.shape[1:])) + feat
        return x.flatten(-2).transpose(-1, -2)  # [T, B, N, C]


class Spikformer(nn.Module):
    def __init__(self, in_channels=3, num_classes=10, embed_dims=32, num_heads=4, mlp_ratios=4,
                 depths=2, T=4):
        super().__init__()
        self.T = T
        self.patch_embed = SPS(in_channels, embed_dims)
        self.block = nn.ModuleList([Block(embed_dims, num_heads, mlp_ratios)
                                    for _ in range(depths)])
        self.head = nn.Linear(embed_dims, num_classes)

    def forward(self, x):
        x = x.unsqueeze(0).repeat(self.T, 1, 1, 1, 1)
        x = self.patch_embed(x)
        for blk in self.block:
            x = blk(x)
        return self.head(x.mean(2).mean(0))
