"""Stand-ins for the neuron modules of snnTorch, Norse and Sinabs, written here from each
framework's documented update equations (the tests never import the real packages). They carry
the attributes the exporter reads and step one time step per call, keeping their state, for a
batch [B, n]. float32 throughout, in each framework's order of operations:

snnTorch Leaky (reset signal r from the previous membrane, threshold compare `mem - thr > 0`):
    subtract: mem = beta*mem + x - r*thr;  zero: mem = beta*((1 - r)*mem) + x
    spk = mem > thr;  without reset_delay: mem -= (spk - r)*thr  (zero: (spk - r)*mem)
snnTorch Synaptic: syn = alpha*syn + x; mem = beta*mem + syn, then as Leaky (zero: mem = 0).
snnTorch RLeaky: base = (beta*mem + x) + recurrent(spk); subtract: mem = base - r*thr, zero:
    mem = base - r*base; then as Leaky. RSynaptic: syn = (alpha*syn + x) + recurrent(spk),
    base = beta*mem + syn, reset as RLeaky, and no immediate reset (reset_delay is ignored).
    recurrent: nn.Linear(n, n) or nn.Conv2d(c, c, k, padding=k//2) (all_to_all), else V * spk.
Norse (dt = 1e-3, k = dt*tau_inv in float32):
    LIFBoxCell  v = v + k((x + v_leak) - v); z = v - v_th > 0; v = v_reset where z; v0 = v_leak
    LIFCell     i = i + x; v = v + k_m((v_leak - v) + i); i = i + (-k_s) i; v0 = v_leak
    LIBoxCell   v = v + k((v_leak - v) + x); v0 = v_leak
    IAFCell     v = v + x; z = v - v_th > 0; v = v_reset where z; v0 = v_reset
Sinabs (alpha = exp(-1/tau_mem) in float32):
    LIF   v = alpha v + (1 - alpha) x (norm_input) or alpha v + x; s = v - thr >= 0; v -= s thr
    IAF   v = v + x, then as LIF;  ExpLeak  v = alpha v + x (no spikes, outputs v)
"""
import torch
import torch.nn as nn

f32 = torch.float32


def _t(v):
    return torch.as_tensor(v, dtype=f32)


# ------------------------------------------------------------------ snnTorch


class Leaky(nn.Module):
    def __init__(self, beta, threshold=1.0, reset_mechanism="subtract", reset_delay=True):
        super().__init__()
        self.beta, self.threshold = _t(beta), _t(threshold)
        self.reset_mechanism, self.reset_delay = reset_mechanism, reset_delay
        self.graded_spikes_factor, self.inhibition, self.state_quant = 1.0, False, False
        self.mem = None

    def reset(self):
        self.mem = None

    def _after(self, mem, reset):
        spk = (mem - self.threshold > 0).to(f32)
        if not self.reset_delay:
            d = spk - reset
            mem = mem - d * self.threshold if self.reset_mechanism == "subtract" else mem - d * mem
        return spk, mem

    def forward(self, x):
        if self.mem is None:
            self.mem = torch.zeros_like(x)
        reset = (self.mem - self.threshold > 0).to(f32)
        b = self.beta.clamp(0, 1)
        if self.reset_mechanism == "subtract":
            mem = (b * self.mem + x) - reset * self.threshold
        else:
            mem = b * ((1 - reset) * self.mem) + x
        spk, self.mem = self._after(mem, reset)
        return spk


class Synaptic(Leaky):
    def __init__(self, alpha, beta, threshold=1.0, reset_mechanism="subtract", reset_delay=True):
        super().__init__(beta, threshold, reset_mechanism, reset_delay)
        self.alpha = _t(alpha)
        self.syn = None

    def reset(self):
        self.mem = self.syn = None

    def forward(self, x):
        if self.mem is None:
            self.mem, self.syn = torch.zeros_like(x), torch.zeros_like(x)
        reset = (self.mem - self.threshold > 0).to(f32)
        self.syn = self.alpha.clamp(0, 1) * self.syn + x
        mem = self.beta.clamp(0, 1) * self.mem + self.syn
        if self.reset_mechanism == "subtract":
            mem = mem - reset * self.threshold
        else:
            mem = mem - mem * reset
        spk, self.mem = self._after(mem, reset)
        return spk


class RecurrentOneToOne(nn.Module):
    def __init__(self, V):
        super().__init__()
        self.V = _t(V)

    def forward(self, x):
        return x * self.V


def _recurrent(all_to_all, linear_features, conv2d_channels, kernel_size, V):
    if not all_to_all:
        return RecurrentOneToOne(V)
    if linear_features:
        return nn.Linear(linear_features, linear_features)
    return nn.Conv2d(conv2d_channels, conv2d_channels, kernel_size, padding=kernel_size // 2)


class RLeaky(Leaky):
    def __init__(self, beta, V=1.0, all_to_all=True, linear_features=None, conv2d_channels=None,
                 kernel_size=None, threshold=1.0, reset_mechanism="subtract", reset_delay=True):
        super().__init__(beta, threshold, reset_mechanism, reset_delay)
        self.all_to_all, self.linear_features = all_to_all, linear_features
        self.recurrent = _recurrent(all_to_all, linear_features, conv2d_channels, kernel_size, V)
        self.spk = None

    def reset(self):
        self.mem = self.spk = None

    def _base(self, x):
        return (self.beta.clamp(0, 1) * self.mem + x) + self.recurrent(self.spk)

    def forward(self, x):
        if self.mem is None:
            self.mem, self.spk = torch.zeros_like(x), torch.zeros_like(x)
        reset = (self.mem - self.threshold > 0).to(f32)
        base = self._base(x)
        mem = base - reset * self.threshold if self.reset_mechanism == "subtract" \
            else base - reset * base
        self.spk, self.mem = self._after(mem, reset)
        return self.spk


class RSynaptic(RLeaky):
    def __init__(self, alpha, beta, **kw):
        super().__init__(beta, **kw)
        self.alpha = _t(alpha)
        self.syn = None

    def reset(self):
        self.mem = self.spk = self.syn = None

    def _base(self, x):
        self.syn = (self.alpha.clamp(0, 1) * self.syn + x) + self.recurrent(self.spk)
        return self.beta.clamp(0, 1) * self.mem + self.syn

    def _after(self, mem, reset):
        # snnTorch's RSynaptic applies no immediate reset, whatever reset_delay says.
        return (mem - self.threshold > 0).to(f32), mem

    def forward(self, x):
        if self.syn is None:
            self.syn = torch.zeros_like(x)
        return super().forward(x)


# ------------------------------------------------------------------ Norse


class P:
    """Norse's parameter tuples (LIFParameters, LIFBoxParameters, ...): attribute access."""

    def __init__(self, **kw):
        for k, v in kw.items():
            setattr(self, k, _t(v))


class _NorseCell(nn.Module):
    def __init__(self, p, dt=0.001):
        super().__init__()
        self.p, self.dt = p, dt
        self.state = None

    def reset(self):
        self.state = None

    def _k(self, inv):
        return torch.tensor(self.dt, dtype=f32) * inv


class LIFBoxCell(_NorseCell):
    def forward(self, x):
        v = self.p.v_leak.expand_as(x).clone() if self.state is None else self.state
        v = v + self._k(self.p.tau_mem_inv) * ((x + self.p.v_leak) - v)
        z = (v - self.p.v_th > 0).to(f32)
        self.state = torch.where(z > 0, self.p.v_reset.expand_as(v), v)
        return z


class LIFCell(_NorseCell):
    def forward(self, x):
        if self.state is None:
            self.state = (self.p.v_leak.expand_as(x).clone(), torch.zeros_like(x))
        v, i = self.state
        i_new = i + x
        v = v + self._k(self.p.tau_mem_inv) * ((self.p.v_leak - v) + i_new)
        i = i_new + (-self._k(self.p.tau_syn_inv)) * i_new
        z = (v - self.p.v_th > 0).to(f32)
        self.state = (torch.where(z > 0, self.p.v_reset.expand_as(v), v), i)
        return z


class LIBoxCell(_NorseCell):
    def forward(self, x):
        v = self.p.v_leak.expand_as(x).clone() if self.state is None else self.state
        self.state = v + self._k(self.p.tau_mem_inv) * ((self.p.v_leak - v) + x)
        return self.state


class IAFCell(_NorseCell):
    def forward(self, x):
        v = self.p.v_reset.expand_as(x).clone() if self.state is None else self.state
        v = v + x
        z = (v - self.p.v_th > 0).to(f32)
        self.state = torch.where(z > 0, self.p.v_reset.expand_as(v), v)
        return z


# ------------------------------------------------------------------ Sinabs


class SingleSpike:
    pass


class MembraneSubtract:
    subtract_value = None


class _SinabsLayer(nn.Module):
    def __init__(self, tau_mem=None, spike_threshold=1.0, norm_input=True):
        super().__init__()
        self.tau_mem = None if tau_mem is None else _t(tau_mem)
        self.spike_threshold = _t(spike_threshold)
        self.norm_input = norm_input
        self.spike_fn, self.reset_fn = SingleSpike, MembraneSubtract()
        self.min_v_mem, self.tau_syn = None, None
        self.v = None

    def reset(self):
        self.v = None

    def alpha(self):
        return torch.exp(-1.0 / self.tau_mem)

    def fire(self, v):
        s = (v - self.spike_threshold >= 0).to(f32)
        self.v = v - s * self.spike_threshold
        return s


class LIF(_SinabsLayer):
    def forward(self, x):
        v = torch.zeros_like(x) if self.v is None else self.v
        a = self.alpha()
        return self.fire(a * v + ((1 - a) * x if self.norm_input else x))


class IAF(_SinabsLayer):
    def __init__(self, spike_threshold=1.0):
        super().__init__(None, spike_threshold, False)

    def forward(self, x):
        return self.fire((torch.zeros_like(x) if self.v is None else self.v) + x)


class ExpLeak(_SinabsLayer):
    def __init__(self, tau_mem, norm_input=False):
        super().__init__(tau_mem, 1.0, norm_input)
        del self.spike_threshold

    def forward(self, x):
        v = torch.zeros_like(x) if self.v is None else self.v
        self.v = self.alpha() * v + x
        return self.v


def reset_net(net):
    for m in net.modules():
        if hasattr(m, "reset") and m is not net:
            m.reset()
