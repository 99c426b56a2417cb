#!/usr/bin/python3
"""Train the bundled spiking Transformers on sklearn's digits and export them for ternion.

Trains the same small architecture twice, with Bipolar Self-attention (BSA) and with Spikformer's
SSA (see tools/spikformer_ref.py), on sklearn's load_digits (1797 8x8 images, 10 classes) with a
fixed stratified train/test split (test 20 %, random_state 0) and fixed seeds. Then for each:
  * folds BatchNorm into the weights and writes models/bundled/{bsa,ssa}_digits.h5;
  * evaluates the folded float32 arrays in PyTorch (the deploy path), step by step;
  * writes models/bundled/digits_test.h5 (/data float32 [360,1,8,8] in [0,1], /labels int64);
  * writes models/bundled/digits_reference.json: test accuracy, per-sample predictions and
    per-layer spike counts (summed over the test set and T steps) for both models.

Usage: /usr/bin/python3 tools/train_spikformer.py [--epochs 40] [--threads 2] [--out models/bundled]
"""
import argparse
import json
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

ap = argparse.ArgumentParser()
ap.add_argument("--epochs", type=int, default=60)
ap.add_argument("--threads", type=int, default=1, help="1 reproduces the bundled files")
ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "..", "models", "bundled"))
ap.add_argument("--kinds", default="bsa,ssa")
ap.add_argument("--dim", type=int, default=64)
ap.add_argument("--heads", type=int, default=4)
ap.add_argument("--depth", type=int, default=1)
ap.add_argument("--mlp_ratio", type=int, default=4)
ap.add_argument("--T", type=int, default=4)
ap.add_argument("--stem", type=int, default=0, help="channels of an extra first conv (0: none)")
ap.add_argument("--lr", type=float, default=5e-3)
ap.add_argument("--shift_aug", type=int, default=0, help="random 1-pixel rolls")
ap.add_argument("--seed", type=int, default=0)
ap.add_argument("--reference-only", action="store_true",
                help="skip training: recompute PyTorch's reference from the existing model files")
args = ap.parse_args()

import h5py  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from sklearn.datasets import load_digits  # noqa: E402
from sklearn.model_selection import train_test_split  # noqa: E402

import spikformer_ref as ref  # noqa: E402

torch.set_num_threads(args.threads)


def load():
    d = load_digits()
    x = (d.data.astype(np.float32) / 16.0).reshape(-1, 1, 8, 8)
    y = d.target.astype(np.int64)
    return train_test_split(x, y, test_size=0.2, random_state=0, stratify=y)


def train(kind, xtr, ytr, xte, yte):
    torch.manual_seed(args.seed)
    np.random.seed(args.seed)
    model = ref.DigitsSpikformer(kind, args.dim, args.heads, args.depth, args.mlp_ratio, args.T,
                                 stem=args.stem)
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=1e-2)
    steps = args.epochs * ((len(xtr) + 63) // 64)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=args.lr, total_steps=steps)
    Xtr, Ytr = torch.from_numpy(xtr), torch.from_numpy(ytr)
    g = torch.Generator().manual_seed(args.seed)
    t0 = time.time()
    for ep in range(args.epochs):
        model.train()
        perm = torch.randperm(len(Xtr), generator=g)
        tot = 0.0
        for b in range(0, len(perm), 64):
            idx = perm[b:b + 64]
            xb = Xtr[idx]
            # light augmentation: random shift by up to one pixel
            if args.shift_aug:
                dx, dy = torch.randint(-1, 2, (2,), generator=g).tolist()
                xb = torch.roll(xb, shifts=(dy, dx), dims=(2, 3))
            loss = F.cross_entropy(model(xb), Ytr[idx], label_smoothing=0.05)
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
            tot += float(loss) * len(idx)
        if ep % 5 == 4 or ep == args.epochs - 1:
            model.eval()
            with torch.no_grad():
                acc = float((model(torch.from_numpy(xte)).argmax(1).numpy() == yte).mean())
            print(f"[{kind}] epoch {ep + 1} loss {tot / len(Xtr):.4f} test acc {acc:.4f} "
                  f"({time.time() - t0:.0f} s)", flush=True)
    model.eval()
    return model


def main():
    xtr, xte, ytr, yte = load()
    os.makedirs(args.out, exist_ok=True)
    with h5py.File(os.path.join(args.out, "digits_test.h5"), "w") as f:
        f.create_dataset("data", data=xte.astype(np.float32))
        f.create_dataset("labels", data=yte.astype(np.int64))
        f.attrs["source"] = ("sklearn load_digits / 16, train_test_split(test_size=0.2, "
                             "random_state=0, stratify=labels): the held-out test set")
    refpath = os.path.join(args.out, "digits_reference.json")
    report = json.load(open(refpath)) if os.path.exists(refpath) else {}
    for kind in args.kinds.split(","):
        path = os.path.join(args.out, f"{kind}_digits.h5")
        if args.reference_only:
            P = ref.read_params(path)
            train_mode_acc = report.get(kind, {}).get("torch_test_accuracy_unfolded_bn")
        else:
            model = train(kind, xtr, ytr, xte, yte)
            with torch.no_grad():
                train_mode_acc = float(
                    (model(torch.from_numpy(xte)).argmax(1).numpy() == yte).mean())
            P = ref.export_params(model)
            ref.write_ternion_model(path, P, kind, args.dim, args.heads, args.depth, args.T)
        logits, counts, aux = ref.deploy_forward(P, torch.from_numpy(xte), kind, args.heads,
                                                 args.depth, args.T, exact_order=True)
        pred = logits.argmax(1).numpy()
        acc = float((pred == yte).mean())
        margin = torch.topk(logits, 2, dim=1).values
        report[kind] = dict(
            model=f"{kind}_digits.h5", test_set="digits_test.h5", samples=int(len(yte)),
            timesteps=args.T, encoding="direct", dim=args.dim, heads=args.heads,
            depth=args.depth, mlp_ratio=args.mlp_ratio, stem=args.stem, epochs=args.epochs,
            seed=args.seed, lr=args.lr, shift_aug=args.shift_aug,
            torch_test_accuracy=acc, torch_test_accuracy_unfolded_bn=train_mode_acc,
            predictions=pred.tolist(),
            min_top2_margin=float((margin[:, 0] - margin[:, 1]).min()),
            spikes=counts, aux=aux,
            note="spikes: non-zero outputs per node summed over the test set and all steps; "
                 "deploy path on the folded float32 arrays stored in the model file")
        print(f"[{kind}] deploy test accuracy {acc:.4f}; spikes {counts}", flush=True)
        json.dump(report, open(refpath, "w"), indent=1)
        if not args.reference_only:
            print(f"wrote {path} ({os.path.getsize(path)} bytes)")


if __name__ == "__main__":
    main()
