"""ternion against the official Spike-driven Transformer V3 code (github.com/BICLab/
Spike-Driven-Transformer-V3, SDT_V3/Classification/Model_Base/models.py): the official
Spiking_vit_MetaFormer_Spike_SepConv with random weights and calibrated BatchNorms, run by
PyTorch (T = 1, integer MultiSpike neurons, D = 4), exported by ternion.export and run by
`ternion run`; prints, per MultiSpike layer, PyTorch's integer spikes (the sum of the counts k)
and how many elements differ, the Q/K/V totals inside each ternion.MultiSpikeAttention, the
predictions and (with the compiled extension) the logits.

Needs a checkout of the repository (or the file models.py under the same relative path).
timm, einops and torchinfo are replaced by stubs of the few helpers models.py imports
(to_2tuple, trunc_normal_, DropPath, register_model, _cfg, create_model, Rearrange); none of
them changes what the forward computes at inference. Not part of ctest: CI has no official
code. Run from the repository root:
  PYTHONPATH=python /usr/bin/python3 -m ternion.tools.check_sdt_v3 --official PATH/V3-checkout \\
      [--image 32 --dims 16,32,64,64 --heads 2] [build/ternion]
"""
import argparse
import importlib.util
import os
import sys
import types

import numpy as np
import torch

from ternion.tools._peers import randomize_bn, ternion_binary
from ternion.tools.check_spikingformer import exported_runs, stub_timm_einops

MODEL = os.path.join("SDT_V3", "Classification", "Model_Base", "models.py")
INNER = ("q_spike", "k_spike", "v_spike")


def load_official(official):
    stub_timm_einops()
    sys.modules.setdefault("torchinfo", types.ModuleType("torchinfo"))
    path = official if official.endswith(".py") else os.path.join(official, MODEL)
    spec = importlib.util.spec_from_file_location("sdt_v3_models", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def build(mod, a):
    torch.manual_seed(a.seed)
    net = mod.Spiking_vit_MetaFormer_Spike_SepConv(
        img_size_h=a.image, img_size_w=a.image, patch_size=16, embed_dim=a.dims,
        num_heads=a.heads, mlp_ratios=4, in_channels=3, num_classes=a.classes, qkv_bias=False,
        depths=8, sr_ratios=1)
    gen = torch.Generator().manual_seed(a.seed)
    randomize_bn(net, gen)
    with torch.no_grad():  # the class then follows the features, not the random bias
        net.head.bias.zero_()

    def data(b):
        return torch.rand(b, 3, a.image, a.image, generator=gen)

    net.train()
    with torch.no_grad():
        for _ in range(3):
            net(data(16))
    net.eval()
    return net, data(a.samples)


def torch_run(net, x):
    """Logits and {module path: integer counts [B, 1, n] int8} of every MultiSpike (its output
    times its Norm)."""
    rec, hooks = {}, []
    for name, m in net.named_modules():
        if type(m).__name__ == "MultiSpike":
            def hook(mod, inp, out, name=name):
                k = (out * mod.Norm).detach()
                if not torch.equal(k, torch.round(k)):
                    sys.exit(f"{name}: output times Norm is not an integer")
                rec[name] = k.reshape(k.shape[0], 1, -1).to(torch.int8).numpy()
            hooks.append(m.register_forward_hook(hook))
    with torch.no_grad():
        out = net(x)
    for h in hooks:
        h.remove()
    return out, rec


def token_major(s, channels):
    B, T, n = s.shape
    return np.ascontiguousarray(s.reshape(B, T, channels, n // channels).transpose(0, 1, 3, 2)
                                ).reshape(B, T, n)


# What the per-layer comparison reads in V3's modules (check_sdt_v2 passes V2's): the neurons
# inside the attention node (compared as totals), the attention's output neuron and the MLP's
# second neuron (tokens in ternion, [C, N] in PyTorch) with their channel counts.
V3_NAMES = dict(inner=INNER, attn="attn_spike", attn_channels=lambda m: m.v_conv[0].out_channels,
                fc2="fc2_spike", fc2_channels=lambda m: m.fc1_conv.out_channels,
                what="integer spikes", column="torch sum k")


def compare(net, rec, out, js, tern, nodes, outputs, names=None):
    """Prints the per-layer table; returns (spikes, differing elements, predictions equal)."""
    n = names or V3_NAMES
    mods = dict(net.named_modules())
    total = differ = 0
    layers = {L["name"]: L for L in js["layers"]}
    print(f"{'layer':<40} {n['column']:>12} {'differ':>8}")
    for path, s in rec.items():
        head, _, leaf = path.rpartition(".")
        k = int(s.astype(np.int64).sum())
        if leaf in n["inner"]:
            got = layers[nodes[head]]["attention"][f"{leaf[0]}_spikes"]
            print(f"{path + ' (total)':<40} {k:>12} {abs(got - k):>8}")
            differ += got != k
            continue
        node = nodes[head] if leaf == n["attn"] else nodes[path]
        if leaf == n["attn"]:  # the attention node's output, tokens [N, C]
            s = token_major(s, n["attn_channels"](mods[head]))
        elif leaf == n["fc2"]:  # on tokens in ternion, on [C, N] in PyTorch
            s = token_major(s, n["fc2_channels"](mods[head]))
        t = tern[node].reshape(s.shape)
        d = int((t != s).sum())
        total, differ = total + k, differ + d
        print(f"{path:<40} {k:>12} {d:>8}")
    pred = out.argmax(1).tolist()
    print(f"{differ} elements of {total} {n['what']} differ; predictions "
          f"{'equal' if js['predictions'] == pred else 'DIFFER'} "
          f"({sum(p == q for p, q in zip(js['predictions'], pred))}/{len(pred)})")
    if outputs is not None:
        lg = out.double().numpy()
        print(f"logits: max |ternion - PyTorch| = {np.abs(outputs - lg).max():.3g} "
              f"(largest logit {np.abs(lg).max():.3g})")
    return total, differ, js["predictions"] == pred


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--official", required=True,
                    help="checkout of BICLab/Spike-Driven-Transformer-V3 (or its models.py)")
    ap.add_argument("--image", type=int, default=32)
    ap.add_argument("--dims", default="16,32,64,64", help="embed_dim, four values")
    ap.add_argument("--heads", type=int, default=2)
    ap.add_argument("--classes", type=int, default=10)
    ap.add_argument("--samples", type=int, default=16)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--fold-bn", choices=("yes", "no", "both"), default="both")
    ap.add_argument("ternion", nargs="?", default="build/ternion")
    a = ap.parse_args(argv)
    a.dims = [int(d) for d in a.dims.split(",")]
    binary = ternion_binary(a.ternion)
    torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))
    mod = load_official(a.official)
    net, x = build(mod, a)
    out, rec = torch_run(net, x)
    print(f"SDT V3 (Spiking_vit_MetaFormer_Spike_SepConv): image {a.image}, embed_dim {a.dims}, "
          f"heads {a.heads}, {a.samples} samples, seed {a.seed}")
    bad = 0
    for js, tern, outputs, nodes in exported_runs(binary, net, x, a.fold_bn):
        _, differ, same = compare(net, rec, out, js, tern, nodes, outputs)
        bad += differ > 0 or not same
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
