"""ternion's `--count syops` against syops-counter itself, on the same network, weights and data.

A local check, not part of the test suite (syops-counter and SpikingJelly are not Debian
packages): give it source checkouts of syops-counter (github.com/iCGY96/syops-counter) and
SpikingJelly 0.0.0.0.12 (syops imports spikingjelly.clock_driven):

    PYTHONPATH=python /usr/bin/python3 -m ternion.tools.check_syops --syops ~/src/syops-counter \\
        --spikingjelly ~/src/spikingjelly-0.0.0.0.12 --ternion build/ternion

(from the repository root: --ternion defaults to build/ternion, relative to the current
directory). Without --syops / --spikingjelly the packages are imported as usual (PYTHONPATH or
installed); with them, from those checkouts (sys.path is left alone).

It builds conv-LIF-AvgPool-conv-LIF-Linear-LIF with SpikingJelly's single-step LIFNode, runs
syops' get_model_complexity_info over a data loader (the model repeats each image T times),
exports the same network with ternion.export, runs `ternion run --count syops --json` on the
same images, and prints both AC and MAC per sample with their relative difference.
"""
import argparse
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

from ternion.tools._peers import import_checkout, ternion_binary


def stub_progress():
    """syops draws a progress bar with the `progress` package; a silent stand-in."""
    bar = types.ModuleType("progress.bar")

    class Bar:
        def __init__(self, *a, **k):
            self.suffix = ""

        def next(self):
            pass

        def finish(self):
            pass

    bar.Bar = Bar
    sys.modules.setdefault("progress", types.ModuleType("progress"))
    sys.modules["progress.bar"] = bar


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python3 -m ternion.tools.check_syops",
                                 description=__doc__.split("\n")[0])
    ap.add_argument("--syops", help="source checkout of syops-counter (default: import syops)")
    ap.add_argument("--spikingjelly", help="source checkout of SpikingJelly 0.0.0.0.12 "
                                           "(default: import spikingjelly)")
    ap.add_argument("--ternion", default=os.path.join("build", "ternion"),
                    help="the ternion binary (default: build/ternion, relative to the current "
                         "directory)")
    ap.add_argument("--samples", type=int, default=8)
    ap.add_argument("--timesteps", type=int, default=4)
    ap.add_argument("--per-layer", action="store_true", help="print both tools' layer tables")
    a = ap.parse_args(argv)
    ternion_binary(a.ternion)
    stub_progress()
    import_checkout("spikingjelly", a.spikingjelly)  # before syops, which imports it
    import_checkout("syops", a.syops)
    from spikingjelly.clock_driven import functional, neuron
    from syops import get_model_complexity_info

    import ternion

    torch.manual_seed(0)
    T, S = a.timesteps, a.samples
    seq = nn.Sequential(
        nn.Conv2d(2, 4, 3, padding=1), neuron.LIFNode(tau=2.0),
        nn.AvgPool2d(2), nn.Conv2d(4, 4, 3, padding=1), neuron.LIFNode(tau=2.0),
        nn.Flatten(), nn.Linear(64, 5), neuron.LIFNode(tau=2.0)).eval()
    with torch.no_grad():
        for m in seq:
            if isinstance(m, (nn.Conv2d, nn.Linear)):
                m.weight.mul_(3.0)

    class Repeat(nn.Module):
        """Direct encoding: the same image every step, outputs averaged over T."""

        def __init__(self):
            super().__init__()
            self.seq = seq

        def forward(self, x):
            return sum(self.seq(x) for _ in range(T)) / T

    x = torch.rand(S, 2, 8, 8)
    y = torch.arange(S) % 5
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, y), batch_size=1)
    with torch.no_grad():
        counts, params = get_model_complexity_info(
            Repeat().eval(), (2, 8, 8), loader, as_strings=False, print_per_layer_stat=a.per_layer)
    functional.reset_net(seq)
    syops_total, syops_ac, syops_mac = counts[:3]

    with tempfile.TemporaryDirectory() as d:
        ternion.export(seq, x[:1], os.path.join(d, "m.h5"), timesteps=T)
        with h5py.File(os.path.join(d, "in.h5"), "w") as f:
            f["data"] = x.numpy().astype(np.float32)
            f["labels"] = y.numpy().astype(np.int64)
        r = subprocess.run([a.ternion, "run", os.path.join(d, "m.h5"), "--input",
                            os.path.join(d, "in.h5"), "--count", "syops", "--json",
                            "--no-progress"], capture_output=True, text=True)
        if r.returncode:
            sys.exit(r.stderr)
        j = json.loads(r.stdout)
    ours = j["syops"]
    if a.per_layer:
        for l in j["layers"]:
            print(l["name"], l["type"], l.get("counted_ops"), l.get("syops_rate"))
    print(f"syops-counter: {syops_ac:.4f} AC, {syops_mac:.4f} MAC per sample "
          f"(total {syops_total:.4f}, params {params})")
    print(f"ternion:       {ours['ac']:.4f} AC, {ours['mac']:.4f} MAC per sample")
    for k, theirs in (("ac", syops_ac), ("mac", syops_mac)):
        rel = abs(ours[k] - theirs) / max(1.0, abs(theirs))
        print(f"{k}: relative difference {rel:.3g}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
