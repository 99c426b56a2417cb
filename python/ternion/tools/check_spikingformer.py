"""ternion against the official Spikingformer code (github.com/zhouchenlin2096/Spikingformer): the
official model class with random weights and calibrated BatchNorms, run by PyTorch with
SpikingJelly's own MultiStepLIFNode, exported by ternion.export and run by `ternion run`;
prints, per neuron layer, PyTorch's spikes and how many differ, the Q/K/V totals inside each
ternion.SSA, the predictions and (with the compiled extension) the logits. With --attention bsa
every SpikingSelfAttention is first replaced by ternion.reference.bsa's BipolarSelfAttention
(its exact form), and the BSA outputs are compared spike for spike, the Q/K totals as totals.

Needs a checkout of the Spikingformer repository and of SpikingJelly 0.0.0.0.12 (the
`clock_driven` package the official files import; its commit 1171f524). timm and einops are
replaced by stubs of the few helpers the model files import (to_2tuple, trunc_normal_,
DropPath, register_model, _cfg, create_model, Rearrange); none of them changes what the forward
computes at inference. CuPy is not needed: the neurons are built with backend='cupy' against a
placeholder and then switched to 'torch'. Not part of ctest: CI has none of these sources.
Run from the repository root:
  PYTHONPATH=python /usr/bin/python3 -m ternion.tools.check_spikingformer \\
      --official PATH/Spikingformer --spikingjelly PATH/spikingjelly [--variant cifar10] ...
"""
import argparse
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import types

import h5py
import numpy as np
import torch
import torch.nn as nn

import ternion
from ternion.reference import bsa
from ternion.tools._peers import import_checkout, randomize_bn, ternion_binary

VARIANTS = ("cifar10", "cifar100", "imagenet", "cifar10-dvs", "dvs128-gesture")


def stub_timm_einops():
    """Stand-ins for the timm and einops names the model files import (training helpers and
    initialisers only)."""
    def to_2tuple(v):
        return tuple(v) if isinstance(v, (tuple, list)) else (v, v)

    def trunc_normal_(t, std=1.0):
        with torch.no_grad():
            return t.normal_(0, std).clamp_(-2 * std, 2 * std)

    mods = {n: types.ModuleType(n) for n in (
        "timm", "timm.models", "timm.models.layers", "timm.models.registry",
        "timm.models.vision_transformer", "einops", "einops.layers", "einops.layers.torch")}
    mods["timm.models.layers"].__dict__.update(to_2tuple=to_2tuple, trunc_normal_=trunc_normal_,
                                               DropPath=nn.Identity)
    mods["timm.models.registry"].register_model = lambda f: f
    mods["timm.models.vision_transformer"]._cfg = lambda **kw: dict(kw)
    mods["timm.models"].create_model = None
    mods["einops.layers.torch"].Rearrange = nn.Identity
    for name, m in mods.items():
        sys.modules.setdefault(name, m)


def load_official(official, spikingjelly, variant):
    import_checkout("spikingjelly", spikingjelly)
    import spikingjelly.clock_driven.neuron as sjn

    if sjn.cupy is None:
        sjn.cupy = object()  # lets backend='cupy' build; every neuron runs 'torch' below
    stub_timm_einops()
    path = os.path.join(official, variant, "model.py")
    spec = importlib.util.spec_from_file_location(f"spikingformer_{variant.replace('-', '_')}",
                                                  path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod, sjn


def build(mod, sjn, a):
    torch.manual_seed(a.seed)
    frames = "dvs" in a.variant
    kw = dict(img_size_h=a.image, img_size_w=a.image, patch_size=16 if frames else 4,
              embed_dims=a.dims, num_heads=a.heads, mlp_ratios=4, in_channels=2 if frames else 3,
              num_classes=a.classes, qkv_bias=False, depths=a.depths, sr_ratios=1, T=a.T)
    if frames:  # the DVS files' Spikingformer() fixes these itself; build vit_snn directly
        net = mod.vit_snn(**kw)
    else:
        net = mod.Spikingformer(**kw)
    for m in net.modules():
        if isinstance(m, sjn.MultiStepLIFNode):
            m.backend = "torch"
    if a.attention == "bsa":
        bsa.swap_attention(net, "spikingformer")
    gen = torch.Generator().manual_seed(a.seed)
    randomize_bn(net, gen)

    def data(b):
        if frames:
            return torch.randint(0, 3, (b, a.T, 2, a.image, a.image), generator=gen).float()
        return torch.rand(b, 3, a.image, a.image, generator=gen)

    from spikingjelly.clock_driven import functional
    net.train()
    with torch.no_grad():
        for _ in range(3):
            functional.reset_net(net)
            net(data(16))
    net.eval()
    functional.reset_net(net)
    bsa.set_exact(net)
    return net, data(a.samples), functional


def torch_run(net, sjn, functional, x, batch):
    """Logits and {module path: spikes [B, T, n] int8}, the forward run `batch` samples at a
    time."""
    rec, hooks = {}, []
    for name, m in net.named_modules():
        if isinstance(m, sjn.MultiStepLIFNode):
            def hook(mod, inp, out, name=name):
                T, B = out.shape[:2]
                rec.setdefault(name, []).append(
                    out.detach().reshape(T, B, -1).transpose(0, 1).to(torch.int8).numpy())
            hooks.append(m.register_forward_hook(hook))
        if isinstance(m, bsa.TSN):  # [T, B, N, D]: already token-major
            def tsn_hook(mod, inp, out, name=name):
                rec.setdefault(name, []).append(out.detach().transpose(0, 1).reshape(
                    out.shape[1], out.shape[0], -1).to(torch.int8).numpy())
            hooks.append(m.register_forward_hook(tsn_hook))
    outs = []
    with torch.no_grad():
        for i in range(0, len(x), batch):
            functional.reset_net(net)
            outs.append(net(x[i:i + batch]))
    for h in hooks:
        h.remove()
    return torch.cat(outs), {k: np.concatenate(v) for k, v in rec.items()}


def token_major(s, tokens):
    B, T, n = s.shape
    return np.ascontiguousarray(s.reshape(B, T, n // tokens, tokens).transpose(0, 1, 3, 2)
                                ).reshape(B, T, n)


def compare(a, rec, out, js, tern, nodes, outputs):
    """Prints the per-layer table; returns (spikes, differing spikes, predictions equal)."""
    blocks = {".".join(p.split(".")[:2]) for p in rec if p.startswith("block.")}
    tokens = rec["block.0.attn.proj_lif"].shape[2] // a.dims  # the stream is [C, N] there
    total = differ = 0
    layers = {L["name"]: L for L in js["layers"]}
    print(f"{'layer':<34} {'torch spikes':>12} {'differ':>8}")
    for path, s in rec.items():
        head, _, leaf = path.rpartition(".")
        if leaf in ("q_lif", "k_lif", "v_lif", "q_tsn", "k_tsn"):
            got, n = layers[nodes[head]]["attention"][f"{leaf[0]}_spikes"], int((s != 0).sum())
            print(f"{path + ' (total)':<34} {n:>12} {abs(got - n):>8}")
            continue
        if path.startswith("block.") and leaf != "attn_tsn":
            s = token_major(s, tokens)
        node = nodes[head] if leaf in ("attn_lif", "attn_tsn") else nodes[path]
        t = tern[node].reshape(s.shape)
        d = int((t != s).sum())
        total, differ = total + int((s != 0).sum()), differ + d
        print(f"{path:<34} {int(s.sum()):>12} {d:>8}")
    pred = out.argmax(1).tolist()
    print(f"{len(blocks)} blocks; {differ} of {total} spikes differ (element by element); "
          f"predictions {'equal' if js['predictions'] == pred else 'DIFFER'} "
          f"({sum(p == q for p, q in zip(js['predictions'], pred))}/{len(pred)})")
    if outputs is not None:
        lg = out.double().numpy()
        print(f"logits: max |ternion outputs / T - PyTorch| = "
              f"{np.abs(outputs / a.T - lg).max():.3g} (largest logit {np.abs(lg).max():.3g})")
    return total, differ, js["predictions"] == pred


def run_ternion(binary, model, x, frames, tmp):
    inp, trace = os.path.join(tmp, "in.h5"), os.path.join(tmp, "trace.h5")
    with h5py.File(inp, "w") as f:
        f.create_dataset("frames" if frames else "data", data=x.numpy().astype(np.float32))
    cmd = [binary, "run", model, "--input", inp, "--trace", trace, "--record", "spikes",
           "--spike-format", "grid", "--json", "--no-progress"]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode:
        sys.exit(f"{' '.join(cmd)} failed:\n{p.stderr}")
    with h5py.File(trace, "r") as f:
        tern = {n: g["observables/spikes/data"][()] for n, g in f["nodes"].items()
                if "observables/spikes/data" in g}
    outputs = None
    try:
        outputs = ternion.run(model, x.numpy(), kind="frames" if frames else "auto").outputs
    except (ImportError, AttributeError):
        pass  # the source tree's package has no extension: no logits
    return json.loads(p.stdout), tern, outputs


FOLDS = {"yes": [True], "no": [False], "both": [True, False]}


def exported_runs(binary, net, x, fold_bn, frames=False, **export_kw):
    """For each BatchNorm setting --fold-bn names: `net` exported and run by `ternion run`;
    yields (report JSON, trace spikes, outputs or None, {module path: node name})."""
    for fold in FOLDS[fold_bn]:
        with tempfile.TemporaryDirectory() as tmp:
            model = os.path.join(tmp, "model.h5")
            rep = ternion.export(net, x, model, fold_bn=fold, **export_kw)
            nodes = {origin: name for name, (_, origin) in rep.nodes.items()}
            js, tern, outputs = run_ternion(binary, model, x, frames, tmp)
            print(f"\nfold_bn={fold}")
            yield js, tern, outputs, nodes


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--official", required=True, help="checkout of zhouchenlin2096/Spikingformer")
    ap.add_argument("--spikingjelly", required=True,
                    help="directory holding SpikingJelly 0.0.0.0.12's spikingjelly/ package")
    ap.add_argument("--variant", default="cifar10", choices=VARIANTS)
    ap.add_argument("--image", type=int, default=32)
    ap.add_argument("--dims", type=int, default=384)
    ap.add_argument("--heads", type=int, default=12)
    ap.add_argument("--depths", type=int, default=4)
    ap.add_argument("--classes", type=int, default=10)
    ap.add_argument("-T", type=int, default=4)
    ap.add_argument("--samples", type=int, default=16)
    ap.add_argument("--batch", type=int, default=0, help="PyTorch's batch size (0: all at once)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--fold-bn", choices=("yes", "no", "both"), default="both")
    ap.add_argument("--attention", choices=("ssa", "bsa"), default="ssa",
                    help="bsa: the official model with BSA in place of its attention")
    ap.add_argument("ternion", nargs="?", default="build/ternion")
    a = ap.parse_args(argv)
    binary = ternion_binary(a.ternion)
    torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))
    mod, sjn = load_official(a.official, a.spikingjelly, a.variant)
    net, x, functional = build(mod, sjn, a)
    out, rec = torch_run(net, sjn, functional, x, a.batch or len(x))
    frames = "dvs" in a.variant
    print(f"{a.variant} ({a.attention}): image {a.image}, dims {a.dims}, heads {a.heads}, depths {a.depths}, "
          f"T {a.T}, {a.samples} samples, PyTorch batch {a.batch or a.samples}, seed {a.seed}")
    bad = 0
    for js, tern, outputs, nodes in exported_runs(
            binary, net, x, a.fold_bn, frames, attention="bsa" if a.attention == "bsa" else None):
        _, differ, same = compare(a, rec, out, js, tern, nodes, outputs)
        bad += differ > 0 or not same
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
