"""ternion against the official Spike-driven Transformer V2 / Meta-SpikeFormer code
(github.com/BICLab/Spike-Driven-Transformer-V2, classification/models.py): the official
Spiking_vit_MetaFormer with random weights and calibrated BatchNorms, run by PyTorch with
SpikingJelly 0.0.0.0.12's clock_driven MultiStepLIFNode (torch backend), exported by
ternion.export and run by `ternion run`; prints, per LIF layer, PyTorch's spikes and how many
differ, the Q/K/V totals inside each ternion.SSA, and the predictions.

Needs a checkout of the repository (or its classification/models.py) and a directory holding
SpikingJelly 0.0.0.0.12's spikingjelly/ package (clock_driven). timm, einops and torchinfo are
replaced by stubs of the few helpers models.py imports (to_2tuple, trunc_normal_, DropPath,
register_model, _cfg, create_model, Rearrange); none of them changes what the forward computes
at inference. The official constructors ask for backend='cupy': spikingjelly's `cupy` is set to
a placeholder so that they build, then every neuron is switched to 'torch'. The model's stage 3
has 6 blocks and stage 4 has 2 whatever the arguments (models.py builds them in fixed loops); T
and kd are set as main_finetune.py sets them (model.T = args.time_steps). Not part of ctest: CI
has no official code. Run from the repository root:
  PYTHONPATH=python /usr/bin/python3 -m ternion.tools.check_sdt_v2 --official PATH/V2-checkout \\
      --spikingjelly PATH/sj-0.0.0.0.12 [--image 32 --dims 16,32,64,64 --heads 2 --T 2] \\
      [build/ternion]
"""
import argparse
import importlib.util
import os
import sys
import types

import torch
import torch.nn as nn

from ternion.tools._peers import import_checkout, randomize_bn, ternion_binary
from ternion.tools.check_sdt_v3 import compare
from ternion.tools.check_spikingformer import exported_runs, stub_timm_einops

MODEL = os.path.join("classification", "models.py")
INNER = ("q_lif", "k_lif", "v_lif")


def load_official(official, spikingjelly):
    import_checkout("spikingjelly", spikingjelly)
    import spikingjelly.clock_driven.neuron as sjn

    if sjn.cupy is None:
        sjn.cupy = object()  # lets backend='cupy' build; every neuron runs 'torch' below
    stub_timm_einops()
    sys.modules.setdefault("torchinfo", types.ModuleType("torchinfo"))
    path = official if official.endswith(".py") else os.path.join(official, MODEL)
    spec = importlib.util.spec_from_file_location("sdt_v2_models", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod, sjn


def build(mod, sjn, a):
    torch.manual_seed(a.seed)
    net = mod.Spiking_vit_MetaFormer(
        img_size_h=a.image, img_size_w=a.image, patch_size=16, embed_dim=a.dims,
        num_heads=a.heads, mlp_ratios=4, in_channels=3, num_classes=a.classes, qkv_bias=False,
        depths=8, sr_ratios=1, kd=a.kd)
    net.T = a.T
    for m in net.modules():
        if isinstance(m, sjn.MultiStepLIFNode):
            m.backend = "torch"
    gen = torch.Generator().manual_seed(a.seed)
    randomize_bn(net, gen)
    for m in net.modules():
        if isinstance(m, nn.Linear):  # the class then follows the features, not a random bias
            with torch.no_grad():
                m.bias.zero_()

    def data(b):
        return torch.rand(b, 3, a.image, a.image, generator=gen)

    net.train()
    with torch.no_grad():
        for _ in range(3):
            reset(net)
            net(data(16))
    net.eval()
    return net, data(a.samples)


def reset(net):
    for m in net.modules():
        if hasattr(m, "reset") and callable(m.reset) and hasattr(m, "v"):
            m.reset()


def torch_run(net, sjn, x):
    """Logits and {module path: spikes [B, T, n] int8} of every MultiStepLIFNode."""
    rec, hooks = {}, []
    for name, m in net.named_modules():
        if isinstance(m, sjn.MultiStepLIFNode):
            def hook(mod, inp, out, name=name):
                T, B = out.shape[:2]
                rec[name] = out.detach().reshape(T, B, -1).transpose(0, 1).to(torch.int8).numpy()
            hooks.append(m.register_forward_hook(hook))
    reset(net)
    with torch.no_grad():
        out = net(x)
    for h in hooks:
        h.remove()
    reset(net)
    return out, rec


V2_NAMES = dict(inner=INNER, attn="attn_lif", attn_channels=lambda m: m.dim, fc2="fc2_lif",
                fc2_channels=lambda m: m.c_hidden, what="spikes", column="torch spikes")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--official", required=True,
                    help="checkout of BICLab/Spike-Driven-Transformer-V2 (or its models.py)")
    ap.add_argument("--spikingjelly", required=True,
                    help="directory holding SpikingJelly 0.0.0.0.12's spikingjelly/ package")
    ap.add_argument("--image", type=int, default=32)
    ap.add_argument("--dims", default="16,32,64,64", help="embed_dim, four values")
    ap.add_argument("--heads", type=int, default=2)
    ap.add_argument("--T", type=int, default=2, help="time steps (model.T)")
    ap.add_argument("--kd", action="store_true", help="the distillation head too")
    ap.add_argument("--classes", type=int, default=10)
    ap.add_argument("--samples", type=int, default=16)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--fold-bn", choices=("yes", "no", "both"), default="both")
    ap.add_argument("ternion", nargs="?", default="build/ternion")
    a = ap.parse_args(argv)
    a.dims = [int(d) for d in a.dims.split(",")]
    binary = ternion_binary(a.ternion)
    torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))
    mod, sjn = load_official(a.official, a.spikingjelly)
    net, x = build(mod, sjn, a)
    out, rec = torch_run(net, sjn, x)
    print(f"SDT V2 (Spiking_vit_MetaFormer): image {a.image}, embed_dim {a.dims}, heads "
          f"{a.heads}, T {a.T}, kd {a.kd}, {a.samples} samples, seed {a.seed}")
    bad = 0
    for js, tern, outputs, nodes in exported_runs(binary, net, x, a.fold_bn):
        _, differ, same = compare(net, rec, out, js, tern, nodes, None, V2_NAMES)
        bad += differ > 0 or not same
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
