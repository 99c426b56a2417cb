#!/usr/bin/env python3
"""Break-even firing rate of an SNN against its quantised-ANN equivalent on each mesh chip.

For each model and chip, `ternion map MODEL --chip CHIP --json --rates IN,R,R --steps T` gives
the SNN's energy band per inference (T steps: ops, +memory, +routing, +static) and the ANN
equivalent's band on the same cores (one pass, and T passes for comparison; docs/chips.md).
The hidden and output rates are swept together (R from 0.5 % to 50 %); the input rate is fixed
(default 1: the bundled digits models are direct-encoded, their pixel values enter every step)
or follows R (--input-rate same). At each level, bisection finds the R where the SNN's total
equals the ANN's. This is a model computation from the chip files, not a timing: the CPU it
runs on does not matter, the chip files do, and the report names them.

    /usr/bin/python3 bench/break_even.py [--ternion build-chip/ternion] [--markdown]
        [--png docs/figures/break_even.png] [--models a.h5 b.h5]
        [--chips loihi-like generic-45nm] [--steps 4] [--input-rate 1 | same]

The question is arXiv 2409.08290's (Yan, Bai, Wong: a T-step SNN beats a matched quantised
ANN only below about 5.7-6.4 % spike rate); see docs/chips.md for what differs in the model.
"""
import argparse
import functools
import json
import math
import os
import subprocess
import sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
LEVELS = ("ops", "memory", "routing", "static")
LABELS = {"ops": "ops", "memory": "+memory", "routing": "+routing", "static": "+static"}
LO, HI = 0.005, 0.5


def find_ternion(given):
    for p in ([given] if given else []) + [f"{ROOT}/build-chip/ternion", f"{ROOT}/build/ternion"]:
        if p and os.path.exists(p):
            return p
    sys.exit("break_even.py: no ternion binary (build it, or give --ternion)")


def model_steps(model):
    """T of a bundled model from its reference file (models/bundled/*_reference.json), else 4."""
    d = os.path.dirname(os.path.abspath(model))
    for f in sorted(os.listdir(d)):
        if f.endswith("_reference.json"):
            for entry in json.load(open(os.path.join(d, f))).values():
                if isinstance(entry, dict) and entry.get("model") == os.path.basename(model):
                    return int(entry["timesteps"]), os.path.join(d, f)
    return 4, None


class Sweep:
    """One model on one chip: the SNN's and the ANN's bands at a rate, cached."""

    def __init__(self, ternion, model, chip, steps, input_rate):
        self.ternion, self.model, self.chip = ternion, model, chip
        self.steps, self.input_rate = steps, input_rate
        j = self.at(HI)
        self.chip_path = j["chip"]["path"]
        self.ann_one = j["ann"]["one_pass_pj"]
        self.ann_t = j["ann"]["t_passes_pj"]
        self.assumed = j["assumed"]

    @functools.lru_cache(maxsize=None)
    def at(self, r):
        rin = r if self.input_rate == "same" else float(self.input_rate)
        p = subprocess.run([self.ternion, "map", self.model, "--chip", self.chip, "--json",
                            "--rates", f"{rin!r},{r!r},{r!r}", "--steps", str(self.steps)],
                           capture_output=True, text=True)
        if p.returncode:
            sys.exit(f"break_even.py: {self.model} on {self.chip}: {p.stderr.strip()}")
        return json.loads(p.stdout)

    def snn(self, r, level):
        return self.at(r)["band"]["inference_pj"][level]

    def break_even(self, level, ann):
        """The rate where the SNN's inference costs the ANN's `ann` pJ at `level`: bisection on
        log(rate) (the SNN's cost grows with the rate, the ANN's does not move). None and a
        side when there is no crossing in [LO, HI]."""
        f = lambda r: self.snn(r, level) - ann
        if f(LO) >= 0:
            return None, "below"  # the SNN costs more even at the lowest rate
        if f(HI) <= 0:
            return None, "above"  # the SNN is cheaper even at the highest rate
        a, b = math.log(LO), math.log(HI)
        while b - a > 1e-4:
            m = 0.5 * (a + b)
            a, b = (m, b) if f(math.exp(m)) < 0 else (a, m)
        return math.exp(0.5 * (a + b)), None


def fmt_rate(r, side):
    if r is not None:
        return f"{100 * r:.2f} %"
    return f"< {100 * LO:g} %" if side == "below" else f"> {100 * HI:g} %"


def plot(sweeps, png, rates):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    models = sorted({s.model for s in sweeps})
    chips = list(dict.fromkeys(s.chip for s in sweeps))
    fig, axes = plt.subplots(len(chips), len(models), figsize=(6 * len(models), 4.2 * len(chips)),
                             squeeze=False)
    colours = dict(zip(LEVELS, ("tab:blue", "tab:orange", "tab:green", "tab:red")))
    for s in sweeps:
        ax = axes[chips.index(s.chip)][models.index(s.model)]
        for lv in LEVELS:
            c = colours[lv]
            ax.plot([100 * r for r in rates], [s.snn(r, lv) / 1e6 for r in rates], color=c,
                    label=f"SNN {LABELS[lv]}")
            ax.axhline(s.ann_one[lv] / 1e6, color=c, ls="--", lw=1,
                       label=f"ANN 1 pass {LABELS[lv]}")
            ax.axhline(s.ann_t[lv] / 1e6, color=c, ls=":", lw=1)
            r, _ = s.break_even(lv, s.ann_one[lv])
            if r is not None:
                ax.plot([100 * r], [s.ann_one[lv] / 1e6], "o", color=c, ms=5)
        ax.axvspan(5.7, 6.4, color="grey", alpha=0.2, lw=0)
        ax.set_xscale("log"), ax.set_yscale("log")
        ax.set_xlabel("hidden and output firing rate (%)")
        ax.set_ylabel("energy per inference (µJ)")
        ax.set_title(f"{os.path.basename(s.model)} on {s.chip} (T = {s.steps})", fontsize=10)
        ax.grid(True, which="both", alpha=0.3)
    axes[0][0].legend(fontsize=7, loc="upper left", ncol=2)
    fig.suptitle("SNN (solid) against its ANN equivalent on the same chip: one pass (dashed), "
                 "T passes (dotted); grey: arXiv 2409.08290's 5.7-6.4 %", fontsize=10)
    fig.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(png)), exist_ok=True)
    fig.savefig(png, dpi=110)
    print(f"wrote {png}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ternion")
    ap.add_argument("--models", nargs="+", default=[f"{ROOT}/models/bundled/bsa_digits.h5",
                                                    f"{ROOT}/models/bundled/ssa_digits.h5"])
    ap.add_argument("--chips", nargs="+", default=["loihi-like", "generic-45nm"])
    ap.add_argument("--steps", type=int, help="T (default: the model's, from its reference file)")
    ap.add_argument("--input-rate", default="1",
                    help="the input's rate: a number (default 1, direct encoding) or 'same'")
    ap.add_argument("--png", help="write the figure here (matplotlib)")
    ap.add_argument("--markdown", action="store_true", help="print the table as Markdown")
    a = ap.parse_args()
    ternion = find_ternion(a.ternion)
    sweeps = []
    for m in a.models:
        steps, ref = (a.steps, None) if a.steps else model_steps(m)
        for c in a.chips:
            sweeps.append(Sweep(ternion, m, c, steps, a.input_rate))
        print(f"model {m}: T = {steps}" + (f" ({ref})" if ref else " (--steps)"))
    inp = "= the hidden rate" if a.input_rate == "same" else f"fixed at {float(a.input_rate):g}"
    print(f"hidden and output rates swept {100 * LO:g}-{100 * HI:g} %, input {inp}; a model "
          "computation from the chip files (the CPU does not matter):")
    for s in sweeps:
        if s.chip not in [x.chip for x in sweeps[:sweeps.index(s)]]:
            print(f"  {s.chip}: {s.chip_path}; assumed: {', '.join(s.assumed)}")
    rows = []
    for s in sweeps:
        for lv in LEVELS:
            one = fmt_rate(*s.break_even(lv, s.ann_one[lv]))
            tp = fmt_rate(*s.break_even(lv, s.ann_t[lv]))
            rows.append((os.path.basename(s.model), s.chip, LABELS[lv], one, tp,
                         s.ann_one[lv] / 1e6, s.snn(LO, lv) / 1e6, s.snn(HI, lv) / 1e6))
    head = ("model", "chip", "level", "vs ANN, 1 pass", "vs ANN, T passes", "ANN 1 pass µJ",
            f"SNN {100 * LO:g} % µJ", f"SNN {100 * HI:g} % µJ")
    if a.markdown:
        print("\n| " + " | ".join(head) + " |\n|" + "---|" * len(head))
        for r in rows:
            print("| " + " | ".join(r[:5]) + " | " + " | ".join(f"{v:.4g}" for v in r[5:]) + " |")
    else:
        print("\n%-15s %-13s %-9s %15s %17s %14s %13s %13s" % head)
        for r in rows:
            print("%-15s %-13s %-9s %15s %17s %14.4g %13.4g %13.4g" % r)
    if a.png:
        rates = [LO * (HI / LO) ** (i / 24) for i in range(25)]
        plot(sweeps, a.png, rates)


if __name__ == "__main__":
    main()
