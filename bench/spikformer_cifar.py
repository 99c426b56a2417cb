#!/usr/bin/python3
"""Benchmark: the official Spikformer CIFAR-10 architecture in ternion and in SpikingJelly, side by
side (docs/benchmarks.md).

The model is built here, with the module structure and attribute names of ZK-Zhou/spikformer
`cifar10/model.py` (SPS stem: four conv3x3 + BN + LIF stages of D/8, D/4, D/2, D channels, 3x3
stride-2 max-pools after the last two, the relative-position conv `rpe_conv` + `rpe_bn` +
`rpe_lif` added to its input; 4 blocks of SSA (12 heads) and MLP (ratio 4); D = 384, T = 4,
32x32x3 images, 64 tokens; head on the mean over tokens and time) and SpikingJelly's
`activation_based` LIFNode (tau 2, detach_reset, multi-step, torch backend). Weights are random
(seeded; Linear layers truncated-normal with std 0.02 and zero bias, as the official
`_init_weights`). Every BatchNorm is then calibrated in forward order on 16 calibration images:
its running statistics become the per-channel mean and variance of its input, and its bias
(one value a layer; for BSA's ternary Q/K neurons, which fire both ways, its weight) is set by
bisection so that the neuron after it fires at the target rate (`--rate`). With `--kinds bsa` the attention is BSA instead (ternary Q/K neurons, Shiftmax,
analog V, ternary output neuron: python/ternion/reference/spikformer.py's `tsn_seq` and `shiftmax`, the
semantics of ternion.BSA); its BatchNorms are calibrated the same way (V is only standardised).

Then for each kind:
  * `ternion.export` writes the model (the BSA model is written as its SSA twin with the same
    parameters, and its attention nodes are rewritten as ternion.BSA);
  * ternion and SpikingJelly run the 16 benchmark images: per-layer spike totals and the
    predictions of both are printed, with the number of agreeing predictions;
  * --rounds rounds alternate ternion and SpikingJelly at 1 and 2 threads:
      - ternion, 32 samples (the 16 images twice): `timing.sample_ms.median` (steady-state
        latency of one sample on one thread) and `timing.simulate_s / samples` (throughput:
        with --threads 2, two samples at a time);
      - ternion, one sample alone (`simulate_s`, first sample, so it includes allocating the
        per-sample state): with --threads 2 the sample's layers are split between the threads;
      - SpikingJelly, torch.set_num_threads(n), torch.no_grad(), reset_net before every
        forward, after a batch-1 warm-up: per-sample time of a batch-1 forward and of a
        batch-16 forward / 16, twice each round: with every Linear computed as a 1x1
        convolution through oneDNN (python/ternion/reference/spikformer.py `linear`, same parameters) and
        with nn.Linear as the official code has it (torch's BLAS; --official-rounds limits the
        rounds). Which one is faster depends on the BLAS: Debian's torch is built with
        BLAS_INFO=generic and calls whatever libblas.so.3 the system provides: the reference
        BLAS (about 12x slower than oneDNN here) unless OpenBLAS is installed
        (libopenblas0-openmp, which tools/install_deps.sh installs). The library is printed,
        and the ratios are against the faster variant ("best").
  The spike totals are compared for both Linear variants.
Medians over the rounds, the ratios and one JSON line are printed last. `--sweep R ...` also
times the SSA model calibrated to other rates (1 and 2 threads at batch 16, --sweep-rounds),
and `--node-times` adds one ternion run per kind with `--node-times` (thread seconds per node).

Models, inputs and the calibrated state are cached in --workdir (delete it to rebuild).

  PYTHONPATH=/tmp/sj14 nice /usr/bin/python3 bench/spikformer_cifar.py --ternion build/ternion \\
      [--rounds 5] [--official-rounds -1] [--kinds ssa bsa] [--rate 0.1] [--sweep 0.05 0.2] \\
      [--sweep-rounds 3] [--node-times]

SpikingJelly: tag 0.0.0.0.14 on PYTHONPATH (e.g. `git archive 0.0.0.0.14 | tar -x -C /tmp/sj14`);
torch: Debian's python3-torch (with libopenblas0-openmp for its BLAS).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import h5py
import numpy as np
import torch
import torch.nn as nn

import ternion  # noqa: E402
from ternion.reference.spikformer import linear as linear_onednn  # noqa: E402
from ternion.reference.spikformer import shiftmax, tsn_seq  # noqa: E402
from spikingjelly.activation_based import functional, neuron  # noqa: E402

ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
ap.add_argument("--ternion", default="build/ternion")
ap.add_argument("--workdir", default="/tmp/ternion-bench-cifar")
ap.add_argument("--kinds", nargs="+", default=["ssa", "bsa"], choices=["ssa", "bsa"])
ap.add_argument("--rate", type=float, default=0.1, help="calibration target of every BN+neuron")
ap.add_argument("--sweep", type=float, nargs="*", default=[], help="more targets (SSA, batch 16)")
ap.add_argument("--rounds", type=int, default=5)
ap.add_argument("--sweep-rounds", type=int, default=3)
ap.add_argument("--official-rounds", type=int, default=-1,
                help="rounds that also time SpikingJelly with nn.Linear (-1: every round)")
ap.add_argument("--official-kinds", nargs="*", default=["ssa", "bsa"])
ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
ap.add_argument("--seed", type=int, default=0)
ap.add_argument("--node-times", action="store_true")
ap.add_argument("--dim", type=int, default=384)
ap.add_argument("--heads", type=int, default=12)
ap.add_argument("--depth", type=int, default=4)
ap.add_argument("--T", type=int, default=4)
args = ap.parse_args()
os.makedirs(args.workdir, exist_ok=True)


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def best_sj(m, th, b):
    """The faster SpikingJelly variant's median (nn.Linear is timed only in some rounds)."""
    return min(m[f"sj_t{th}_b{b}"], m.get(f"sjlin_t{th}_b{b}", float("inf")))


def torch_blas():
    """The BLAS library torch has loaded (Debian: the libblas.so.3 alternative, the reference
    BLAS unless OpenBLAS is installed), read from this process's memory map after a product."""
    torch.ones(64, 64) @ torch.ones(64, 64)
    with open("/proc/self/maps") as f:
        libs = {ln.split()[-1] for ln in f if "blas" in ln.lower() and ".so" in ln}
    return ", ".join(sorted(libs)) or "none found"


# ----------------------------------------------------------------------------------------------
# The model (structure and attribute names of the official cifar10/model.py)


def lif(v_threshold=1.0):
    return neuron.LIFNode(tau=2.0, v_threshold=v_threshold, detach_reset=True, step_mode="m",
                          backend="torch")


LINEAR = ["official"]  # "official": nn.Linear on [TB, N, C]; "onednn": the same as a 1x1 conv


def lin_bn(lin, bn, x):
    """x [T, B, N, C]: Linear over channels, BatchNorm1d over channels ([TB, C, N])."""
    T, B, N, C = x.shape
    if LINEAR[0] == "official":
        y = lin(x.flatten(0, 1))
    else:  # Debian's torch runs nn.Linear on a generic BLAS; oneDNN's convolution is faster
        y = linear_onednn(lin, x.reshape(T * B * N, C)).reshape(T * B, N, -1)
    return bn(y.transpose(-1, -2)).transpose(-1, -2).reshape(T, B, N, -1).contiguous()


class MLP(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.fc1_linear, self.fc1_bn, self.fc1_lif = nn.Linear(dim, hidden), nn.BatchNorm1d(hidden), lif()
        self.fc2_linear, self.fc2_bn, self.fc2_lif = nn.Linear(hidden, dim), nn.BatchNorm1d(dim), lif()

    def forward(self, x):
        h = self.fc1_lif(lin_bn(self.fc1_linear, self.fc1_bn, x))
        return self.fc2_lif(lin_bn(self.fc2_linear, self.fc2_bn, h))


class SSA(nn.Module):
    """Spikformer's SSA: Q, K, V = LIF(BN(Linear(x))); LIF_0.5((Q Kᵀ · 0.125) V); projection."""

    def __init__(self, dim, heads):
        super().__init__()
        self.num_heads, self.scale = heads, 0.125
        for nm in ("q", "k", "v", "proj"):
            setattr(self, f"{nm}_linear", nn.Linear(dim, dim))
            setattr(self, f"{nm}_bn", nn.BatchNorm1d(dim))
            setattr(self, f"{nm}_lif", lif())
        self.attn_lif = lif(0.5)

    def split(self, s):
        T, B, N, C = s.shape
        return s.reshape(T, B, N, self.num_heads, C // self.num_heads).permute(0, 1, 3, 2, 4)

    def forward(self, x):
        T, B, N, C = x.shape
        q, k, v = (self.split(getattr(self, f"{nm}_lif")(
            lin_bn(getattr(self, f"{nm}_linear"), getattr(self, f"{nm}_bn"), x)))
            for nm in ("q", "k", "v"))
        y = ((q @ k.transpose(-2, -1)) * self.scale) @ v
        y = self.attn_lif(y.transpose(2, 3).reshape(T, B, N, C).contiguous())
        return self.proj_lif(lin_bn(self.proj_linear, self.proj_bn, y))


class BSA(SSA):
    """BSA in place of SSA (docs/bsa.md): Q, K = TSN(BN(Linear(x))) ternary (threshold 1, decay
    0.5), V = BN(Linear(x)) analog, per head Shiftmax(Q Kᵀ) V, output TSN (threshold 0.5, decay
    0.5), then the same projection. Same parameters as SSA; q/k/v/attn LIF modules unused."""

    def forward(self, x):
        T, B, N, C = x.shape
        pre = {nm: lin_bn(getattr(self, f"{nm}_linear"), getattr(self, f"{nm}_bn"), x)
               for nm in ("q", "k", "v")}
        q, k = tsn_seq(pre["q"], 1.0, 0.5), tsn_seq(pre["k"], 1.0, 0.5)
        self.counts = dict(q=int((q != 0).sum()), k=int((k != 0).sum()))
        y = shiftmax(self.split(q) @ self.split(k).transpose(-2, -1)) @ self.split(pre["v"])
        a = tsn_seq(y.transpose(2, 3).reshape(T, B, N, C).contiguous(), 0.5, 0.5)
        self.counts["out"] = int((a != 0).sum())
        return self.proj_lif(lin_bn(self.proj_linear, self.proj_bn, a))


class Block(nn.Module):
    def __init__(self, kind, dim, heads, mlp_ratio):
        super().__init__()
        self.norm1 = nn.LayerNorm(dim)  # as in the official Block: present, unused by forward
        self.attn = (SSA if kind == "ssa" else BSA)(dim, heads)
        self.norm2 = nn.LayerNorm(dim)
        self.mlp = MLP(dim, dim * mlp_ratio)

    def forward(self, x):
        x = x + self.attn(x)
        return x + self.mlp(x)


class SPS(nn.Module):
    STAGES = ("", "1", "2", "3")

    def __init__(self, in_channels, dim):
        super().__init__()
        ch = [in_channels, dim // 8, dim // 4, dim // 2, dim]
        for i, s in enumerate(self.STAGES):
            setattr(self, f"proj_conv{s}", nn.Conv2d(ch[i], ch[i + 1], 3, 1, 1, bias=False))
            setattr(self, f"proj_bn{s}", nn.BatchNorm2d(ch[i + 1]))
            setattr(self, f"proj_lif{s}", lif())
        self.maxpool2 = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
        self.maxpool3 = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
        self.rpe_conv = nn.Conv2d(dim, dim, 3, 1, 1, bias=False)
        self.rpe_bn = nn.BatchNorm2d(dim)
        self.rpe_lif = lif()

    def forward(self, x):  # [T, B, C, H, W] -> [T, B, N, D]
        T, B = x.shape[:2]
        y = x.flatten(0, 1)
        for s in self.STAGES:
            y = getattr(self, f"proj_bn{s}")(getattr(self, f"proj_conv{s}")(y))
            y = getattr(self, f"proj_lif{s}")(y.reshape(T, B, *y.shape[1:])).flatten(0, 1)
            if hasattr(self, f"maxpool{s}"):
                y = getattr(self, f"maxpool{s}")(y)
        feat = y.reshape(T, B, *y.shape[1:])
        r = self.rpe_bn(self.rpe_conv(y))
        x = self.rpe_lif(r.reshape(T, B, *r.shape[1:])) + feat
        return x.flatten(-2).transpose(-1, -2)


class Spikformer(nn.Module):
    def __init__(self, kind="ssa", dim=384, heads=12, mlp_ratio=4, depth=4, T=4, in_channels=3,
                 classes=10):
        super().__init__()
        self.T = T
        self.patch_embed = SPS(in_channels, dim)
        self.block = nn.ModuleList([Block(kind, dim, heads, mlp_ratio) for _ in range(depth)])
        self.head = nn.Linear(dim, classes)
        for m in self.modules():
            if isinstance(m, nn.Linear):
                nn.init.trunc_normal_(m.weight, std=0.02)
                nn.init.zeros_(m.bias)

    def forward(self, img):  # [B, 3, 32, 32]: the same image at every step
        x = self.patch_embed(img.unsqueeze(0).repeat(self.T, 1, 1, 1, 1))
        for blk in self.block:
            x = blk(x)
        return self.head(x.mean(2).mean(0))


# ----------------------------------------------------------------------------------------------
# BatchNorm calibration


def lif_rate(x):
    """Firing rate of SpikingJelly's LIF (tau 2, decay_input, hard reset to 0, threshold 1) on
    x [T, ...] from v = 0."""
    v, n = torch.zeros_like(x[0]), 0.0
    for xt in x:
        v = v + (xt - v) / 2.0
        s = v >= 1.0
        n += float(s.sum())
        v = torch.where(s, torch.zeros_like(v), v)
    return n / x.numel()


def tsn_rate(x):
    return float((tsn_seq(x, 1.0, 0.5) != 0).sum()) / x.numel()


class Stop(Exception):
    pass


def calibration_pairs(net, kind):
    """(BatchNorm, module path, rate function or None) in forward order."""
    P = [(getattr(net.patch_embed, f"proj_bn{s}"), f"patch_embed.proj_bn{s}", lif_rate)
         for s in SPS.STAGES]
    P.append((net.patch_embed.rpe_bn, "patch_embed.rpe_bn", lif_rate))
    for i, b in enumerate(net.block):
        qk = lif_rate if kind == "ssa" else tsn_rate
        P += [(b.attn.q_bn, f"block.{i}.attn.q_bn", qk), (b.attn.k_bn, f"block.{i}.attn.k_bn", qk),
              (b.attn.v_bn, f"block.{i}.attn.v_bn", lif_rate if kind == "ssa" else None),
              (b.attn.proj_bn, f"block.{i}.attn.proj_bn", lif_rate),
              (b.mlp.fc1_bn, f"block.{i}.mlp.fc1_bn", lif_rate),
              (b.mlp.fc2_bn, f"block.{i}.mlp.fc2_bn", lif_rate)]
    return P


def calibrate(net, kind, images, rate, T):
    """Each BatchNorm in forward order; the stem on the images, then each block on the output
    of the blocks before it (already calibrated)."""
    net.eval()
    pairs = calibration_pairs(net, kind)
    stem_in = images.unsqueeze(0).repeat(T, 1, 1, 1, 1)
    for k, (bn, path, fn) in enumerate(pairs):
        if k < 5:
            mod, x = net.patch_embed, stem_in
        else:
            i = (k - 5) // 6
            if (k - 5) % 6 == 0:  # the input of block i
                functional.reset_net(net)
                with torch.no_grad():
                    x = net.patch_embed(stem_in)
                    for b in net.block[:i]:
                        x = b(x)
            mod = net.block[i]
        got = {}

        def hook(m, inp):
            got["z"] = inp[0].detach()
            raise Stop

        h = bn.register_forward_pre_hook(hook)
        functional.reset_net(net)
        try:
            with torch.no_grad():
                mod(x)
        except Stop:
            pass
        h.remove()
        z = got["z"].double()
        dims = [d for d in range(z.dim()) if d != 1]
        mean, var = z.mean(dims), z.var(dims, unbiased=False)
        shape = [1, -1] + [1] * (z.dim() - 2)
        zhat = ((z - mean.view(shape)) / torch.sqrt(var.view(shape) + bn.eps)).float()
        zhat = zhat.reshape(T, -1)
        # LIF: bias beta (weight 1) by bisection; TSN, which fires both ways: weight gamma
        # (bias 0), since its rate grows with |input|; V of BSA (no neuron): standardised.
        gamma, beta = 1.0, 0.0
        if fn is not None:
            lo, hi = (-8.0, 8.0) if fn is lif_rate else (0.0, 4.0)
            for _ in range(24):
                mid = 0.5 * (lo + hi)
                r = fn(zhat + mid) if fn is lif_rate else fn(zhat * mid)
                lo, hi = (mid, hi) if r < rate else (lo, mid)
            if fn is lif_rate:
                beta = 0.5 * (lo + hi)
            else:
                gamma = 0.5 * (lo + hi)
        with torch.no_grad():
            bn.running_mean.copy_(mean.float())
            bn.running_var.copy_(var.float())
            bn.weight.fill_(gamma)
            bn.bias.fill_(beta)
    functional.reset_net(net)


# ----------------------------------------------------------------------------------------------
# Build, export, check


def images(n, gen):
    return torch.rand(n, 3, 32, 32, generator=gen)


def neurons(net):
    return [(p, m) for p, m in net.named_modules() if isinstance(m, neuron.LIFNode)]


def torch_forward(net, x):
    """Logits and spike totals per neuron module (and BSA's internal Q/K/out totals)."""
    counts, hooks = {}, []
    for p, m in neurons(net):
        def hook(mod, inp, out, p=p):
            counts[p] = (int(out.sum()), out.numel())
        hooks.append(m.register_forward_hook(hook))
    functional.reset_net(net)
    with torch.no_grad():
        out = net(x)
    for h in hooks:
        h.remove()
    for i, b in enumerate(net.block):
        if isinstance(b.attn, BSA):
            n = x.shape[0] * args.T * 64 * args.dim
            for k, v in b.attn.counts.items():
                counts[f"block.{i}.attn.{k}"] = (v, n)
    functional.reset_net(net)
    return out, counts


def to_bsa_file(path):
    """Rewrites every ternion.SSA node of an exported file as ternion.BSA (same Q/K/V)."""
    str_t = h5py.string_dtype("utf-8")
    with h5py.File(path, "r+") as f:
        for name, g in f["node/nodes"].items():
            if g["type"][()].decode() != "ternion.SSA":
                continue
            for k in list(g.keys()):
                if k.startswith(("lif_", "attn_")) or k in ("scale", "type", "association"):
                    del g[k]
            g.create_dataset("type", data="ternion.BSA", dtype=str_t)
            for k, v in (("qk_v_threshold", 1.0), ("qk_decay", 0.5), ("out_v_threshold", 0.5),
                         ("out_decay", 0.5)):
                g.create_dataset(k, data=np.float32(v))


def write_inputs():
    gen = torch.Generator().manual_seed(args.seed + 1)
    x = images(16, gen)
    paths = {k: f"{args.workdir}/images{k}.h5" for k in (1, 16, 32)}
    if not all(os.path.exists(p) for p in paths.values()):
        for k, p in paths.items():
            with h5py.File(p, "w") as f:
                f["data"] = np.concatenate([x.numpy()] * 2)[:k]
    with h5py.File(paths[16], "r") as f:
        return torch.from_numpy(f["data"][()]), paths


def build(kind, rate):
    """The calibrated network (cached state) and its exported model file."""
    tag = f"{kind}_r{rate}_s{args.seed}"
    state, model = f"{args.workdir}/{tag}.pt", f"{args.workdir}/{tag}.h5"
    torch.manual_seed(args.seed)
    net = Spikformer(kind, args.dim, args.heads, 4, args.depth, args.T).eval()
    if os.path.exists(state) and os.path.exists(model):
        net.load_state_dict(torch.load(state))
        return net, model, tag
    t0 = time.time()
    LINEAR[0] = "onednn"  # same parameters, much faster on Debian's torch
    calibrate(net, kind, images(16, torch.Generator().manual_seed(args.seed + 2)), rate, args.T)
    log(f"{tag}: calibrated in {time.time() - t0:.1f} s")
    twin = net
    if kind == "bsa":
        torch.manual_seed(args.seed)
        twin = Spikformer("ssa", args.dim, args.heads, 4, args.depth, args.T).eval()
        twin.load_state_dict(net.state_dict())
    ternion.export(twin, torch.zeros(1, 3, 32, 32), model + ".tmp")
    if kind == "bsa":
        to_bsa_file(model + ".tmp")
    os.replace(model + ".tmp", model)
    torch.save(net.state_dict(), state)
    return net, model, tag


def run_ternion(model, inp, threads, extra=()):
    out = subprocess.run([args.ternion, "run", model, "--input", inp, "--threads", str(threads),
                          "--json", "--no-progress", *extra], check=True, capture_output=True,
                         text=True).stdout
    return json.loads(out)


def check(kind, net, model, x, paths, linear, quiet=False):
    """Per-layer spike totals and predictions of both; returns per-layer rates (SpikingJelly)."""
    LINEAR[0] = linear
    torch.set_num_threads(2)
    out, counts = torch_forward(net, x)
    js = run_ternion(model, paths[16], 1)
    layers = {L["name"]: L for L in js["layers"]}
    rows, rates = [], {}
    for path, (n, numel) in counts.items():
        head, _, leaf = path.rpartition(".")
        if kind == "bsa" and leaf in ("q_lif", "k_lif", "v_lif", "attn_lif"):
            continue  # unused modules of the BSA attention
        node = path  # the exporter names nodes by module path
        if leaf in ("q_lif", "k_lif", "v_lif", "q", "k"):
            t = layers[head]["attention"].get(f"{leaf[0]}_spikes")
        elif leaf in ("attn_lif", "out"):
            t = layers[head]["spikes"]
        else:
            t = layers[node]["spikes"] if node in layers else None
        rows.append((path, n, t))
        rates[path] = n / numel
    pred_t = out.argmax(1).tolist()
    agree = sum(a == b for a, b in zip(pred_t, js["predictions"]))
    diff = max(abs(t - n) / max(n, 1) for _, n, t in rows if t is not None)
    total = [sum(n for _, n, _ in rows), sum(t or 0 for _, _, t in rows)]
    if not quiet:
        log(f"\n{kind} (model {os.path.basename(model)}): spike totals on {x.shape[0]} images, "
            f"T = {args.T}; SpikingJelly with {linear} Linear")
        log(f"{'layer':32} {'SpikingJelly':>12} {'ternion':>12} {'diff %':>7} {'rate':>6}")
        for path, n, t in rows:
            d = "" if t is None or n == 0 else f"{100.0 * (t - n) / n:7.2f}"
            log(f"{path:32} {n:12d} {str(t):>12} {d:>7} {rates[path]:6.3f}")
    log(f"{kind} {os.path.basename(model)}, SpikingJelly with {linear} Linear: predictions agree on "
        f"{agree}/{len(pred_t)} images; largest layer difference {100 * diff:.3f} %; all spikes "
        f"{total[0]} vs {total[1]}")
    return dict(rows=rows, rates=rates, agree=agree, n=len(pred_t), pred_torch=pred_t,
                pred_ternion=js["predictions"], max_layer_diff=diff, total=total)


def sj_time(net, x, threads, reps, linear):
    """Median per-sample ms of `reps` forwards of the batch x, after one batch-1 warm-up."""
    torch.set_num_threads(threads)
    LINEAR[0] = linear
    ts = []
    with torch.no_grad():
        for r in range(reps + 1):
            functional.reset_net(net)
            b = x[:1] if r == 0 else x
            t0 = time.perf_counter()
            net(b)
            ts.append((time.perf_counter() - t0) / b.shape[0])
    functional.reset_net(net)
    return 1e3 * statistics.median(ts[1:])


def time_kind(net, model, x, paths, rounds, configs, official_rounds=0):
    """configs: list of (threads, batch). SpikingJelly with the Linear layers through oneDNN
    every round, with nn.Linear (the official code) in the first `official_rounds` rounds.
    Returns the medians and {key: [per-round ms]}."""
    res = {}

    def add(k, v):
        res.setdefault(k, []).append(v)

    for rnd in range(rounds):
        for th in sorted({t for t, _ in configs}):
            j = run_ternion(model, paths[32], th)
            add(f"ternion_t{th}_latency", j["timing"]["sample_ms"]["median"])
            add(f"ternion_t{th}_throughput", 1e3 * j["timing"]["simulate_s"] / j["samples"])
            if (th, 1) in configs:
                j = run_ternion(model, paths[1], th)
                add(f"ternion_t{th}_single", 1e3 * j["timing"]["simulate_s"])
            for t2, b in configs:
                if t2 == th:
                    add(f"sj_t{th}_b{b}", sj_time(net, x[:b], th, 5 if b == 1 else 2, "onednn"))
                    if official_rounds < 0 or rnd < official_rounds:
                        add(f"sjlin_t{th}_b{b}",
                            sj_time(net, x[:b], th, 5 if b == 1 else 2, "official"))
        log(f"  round {rnd + 1}: " + ", ".join(f"{k} {v[-1]:.1f}" for k, v in res.items()))
    return {k: statistics.median(v) for k, v in res.items()}, res


# ----------------------------------------------------------------------------------------------

x, paths = write_inputs()
summary = dict(rate=args.rate, seed=args.seed, kinds={}, sweep=[], torch_blas=torch_blas())
configs = [(t, b) for t in args.threads for b in (1, 16)]
built = {}
for kind in args.kinds:
    net, model, tag = build(kind, args.rate)
    built[kind] = (net, model)
    chk = check(kind, net, model, x, paths, "official")
    chk2 = check(kind, net, model, x, paths, "onednn", quiet=True)
    summary["kinds"][kind] = dict(model=model, agree=chk["agree"], images=chk["n"],
                                  rates=chk["rates"], max_layer_diff=chk["max_layer_diff"],
                                  spikes={p: [n, t] for p, n, t in chk["rows"]},
                                  agree_onednn=chk2["agree"],
                                  max_layer_diff_onednn=chk2["max_layer_diff"])

uptime = open("/proc/loadavg").read().split()[:3]
log(f"\nload average before timing: {' '.join(uptime)}")
summary["load_before"] = uptime
for kind in args.kinds:
    net, model = built[kind]
    log(f"timing {kind}, {args.rounds} rounds")
    med, per_round = time_kind(net, model, x, paths, args.rounds, configs,
                               args.official_rounds if kind in args.official_kinds else 0)
    summary["kinds"][kind].update(medians=med, rounds=per_round)

for rate in args.sweep:
    net, model, tag = build("ssa", rate)
    chk = check("ssa", net, model, x, paths, "onednn")
    log(f"timing ssa at rate {rate}, {args.sweep_rounds} rounds")
    med, per_round = time_kind(net, model, x, paths, args.sweep_rounds,
                               [(t, 16) for t in args.threads], args.official_rounds)
    summary["sweep"].append(dict(rate=rate, medians=med, rounds=per_round, agree=chk["agree"],
                                 rates=chk["rates"]))

if args.node_times:
    for kind in args.kinds:
        j = run_ternion(built[kind][1], paths[32], 1, ["--node-times"])
        S = j["samples"]
        ops = {L["name"]: L.get("ops", {}) for L in j["layers"]}
        nodes = sorted(j["timing"].get("nodes", []), key=lambda n: -n["s"])
        summary["kinds"][kind]["node_times"] = [
            dict(name=n["name"], type=n["type"], ms_per_sample=1e3 * n["s"] / S, share=n["share"],
                 ops_per_sample={k: v / S for k, v in ops.get(n["name"], {}).items()})
            for n in nodes]
summary["load_after"] = open("/proc/loadavg").read().split()[:3]

# Tables
print(f"Spikformer CIFAR-10 (D {args.dim}, {args.heads} heads, {args.depth} blocks, T {args.T}), "
      f"calibration target {args.rate}; ms per sample, medians of {args.rounds} rounds; "
      f"load {' '.join(summary['load_before'])} -> {' '.join(summary['load_after'])}")
print("SJ: SpikingJelly with the Linear layers through oneDNN; SJ nn.Linear: as the official "
      f"code, on torch's BLAS ({summary['torch_blas']}); best: the faster of the two")
print(f"{'kind':5} {'thr':>3} {'batch':>5} {'ternion ms':>11} {'SJ ms':>9} {'SJ/ternion':>10} "
      f"{'SJ nn.Linear ms':>15} {'ratio':>7} {'best ratio':>10}")
for kind in args.kinds:
    m = summary["kinds"][kind]["medians"]
    for th in args.threads:
        for b in (1, 16):
            tern = m[f"ternion_t{th}_latency"] if (b == 1 and th == 1) else \
                m[f"ternion_t{th}_single"] if b == 1 else m[f"ternion_t{th}_throughput"]
            sj = m[f"sj_t{th}_b{b}"]
            sl = m.get(f"sjlin_t{th}_b{b}")
            tail = f" {sl:>15.1f} {sl / tern:>7.2f} {best_sj(m, th, b) / tern:>10.2f}" if sl else ""
            print(f"{kind:5} {th:>3} {b:>5} {tern:>11.2f} {sj:>9.2f} {sj / tern:>10.2f}{tail}")
    ta, tb = m["ternion_t1_throughput"], m.get("ternion_t2_throughput")
    if tb:
        print(f"{kind}: ternion 2 threads / 1 thread (batch 16 throughput): {ta / tb:.2f}x; "
              f"single sample: {m['ternion_t1_single'] / m['ternion_t2_single']:.2f}x; "
              f"1-thread latency median {m['ternion_t1_latency']:.2f} ms, single-sample run "
              f"{m['ternion_t1_single']:.2f} ms")
    r = summary["kinds"][kind]
    print(f"{kind}: predictions agree on {r['agree']}/{r['images']} images")
for s in summary["sweep"]:
    m = s["medians"]
    mean = statistics.mean(s["rates"].values())
    line = f"sweep rate {s['rate']}: mean layer rate {mean:.3f};"
    for th in args.threads:
        sj = best_sj(m, th, 16)
        line += (f" {th}t ternion {m[f'ternion_t{th}_throughput']:.2f} ms, best SJ b16 "
                 f"{sj:.2f} ms ({sj / m[f'ternion_t{th}_throughput']:.2f}x);")
    print(line + f" predictions agree {s['agree']}/16")
for kind in args.kinds:
    for n in summary["kinds"][kind].get("node_times", [])[:8]:
        ac = n["ops_per_sample"]
        print(f"{kind} node {n['name']:28} {n['type']:16} {n['ms_per_sample']:8.2f} ms "
              f"{100 * n['share']:5.1f} %  ops/sample {json.dumps({k: round(v) for k, v in ac.items() if v})}")
print(json.dumps(summary, default=float))
