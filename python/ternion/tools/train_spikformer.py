"""Train the bundled spiking Transformers on sklearn's digits and export them for ternion.

Trains the same small architecture twice, with Bipolar Self-attention (BSA) and with Spikformer's
SSA (see ternion.reference.spikformer (python/ternion/reference/spikformer.py)), on sklearn's
load_digits (1797 8x8 images, 10 classes) with a fixed stratified train/test split (test 20 %,
random_state 0) and fixed seeds. Then for each, in --out (default models/bundled, relative to
the current directory: run it from the repository root):
  * folds BatchNorm into the weights and writes {bsa,ssa}_digits.h5;
  * evaluates the folded float32 arrays in PyTorch (the deploy path), step by step;
  * writes digits_test.h5 (/data float32 [360,1,8,8] in [0,1], /labels int64);
  * writes digits_reference.json: test accuracy, per-sample predictions and per-layer spike
    counts (summed over the test set and T steps) for both models.

With --data fashion-mnist it trains on Zalando's Fashion-MNIST instead (the IDX files of Debian's
dataset-fashion-mnist, /usr/share/datasets/fashion-mnist; pixels / 255 as float32, which is how
`ternion run` reads IDX images): a 28x28 image through conv0 (1 -> --stem) + LIF + 2x2 max-pool,
conv + LIF + 2x2 max-pool to 7x7 = 49 tokens, then the same blocks. It writes
{bsa,ssa}_fmnist.h5 and fmnist_reference.json with PyTorch's accuracy, predictions and spike
counts on all 10 000 test images, summed exactly as ternion sums (ascending input order, bias
last), so ternion must equal them image for image.

Training runs the model multi-step (each layer over all T steps at once, BatchNorm's statistics
over all steps) with AdamW and a one-cycle learning rate over all epochs; --threads 1 per model
lets the BSA and SSA models train side by side on two cores. The bundled Fashion-MNIST models:
  PYTHONPATH=python nice /usr/bin/python3 -m ternion.tools.train_spikformer --data fashion-mnist \\
      --kinds bsa --stem 32 --dim 96 --heads 3 --epochs 12 --threads 1 --seed 0 --linear blas
  PYTHONPATH=python nice /usr/bin/python3 -m ternion.tools.train_spikformer --data fashion-mnist \\
      --kinds ssa --stem 32 --dim 96 --heads 3 --epochs 12 --threads 2 --seed 0 --linear blas
(all 60 000 training images, 12 epochs, batch 64; fmnist_reference.json records the time and
the command). --linear blas computes the Linear layers with torch's BLAS, which is fast with
OpenBLAS (libopenblas0-openmp, installed by tools/install_deps.sh); Debian's default reference
libblas makes --linear conv, the default, the faster one (the digits models were trained that
way). --reference-only skips training and recomputes PyTorch's reference from the model files
already in --out.

Usage (from the repository root; PYTHONPATH=build/python works as well):
  PYTHONPATH=python /usr/bin/python3 -m ternion.tools.train_spikformer [--epochs 40] \\
      [--threads 2] [--out models/bundled]
  PYTHONPATH=python nice /usr/bin/python3 -m ternion.tools.train_spikformer --data fashion-mnist \\
      --stem 32 --dim 96 --heads 3 --epochs 12 --linear blas
"""
import argparse
import gzip
import json
import os
import sys
import time

import h5py
import numpy as np
import torch
import torch.nn.functional as F
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

from ternion.reference import spikformer as ref

COMMAND = "PYTHONPATH=python nice /usr/bin/python3 -m ternion.tools.train_spikformer"
SUBSET = 1000  # Fashion-MNIST: counts over the first 1000 test images too, for a quick test


def parser():
    ap = argparse.ArgumentParser(
        prog="python3 -m ternion.tools.train_spikformer", description=__doc__.split("\n")[0])
    ap.add_argument("--epochs", type=int, default=60)
    ap.add_argument("--threads", type=int, default=1, help="1 reproduces the bundled files")
    ap.add_argument("--out", default=os.path.join("models", "bundled"),
                    help="where the model files, test set and reference JSON go (default: "
                         "models/bundled, relative to the current directory)")
    ap.add_argument("--kinds", default="bsa,ssa")
    ap.add_argument("--dim", type=int, default=64)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--depth", type=int, default=1)
    ap.add_argument("--mlp_ratio", type=int, default=4)
    ap.add_argument("--T", type=int, default=4)
    ap.add_argument("--stem", type=int, default=0, help="channels of an extra first conv (0: none)")
    ap.add_argument("--lr", type=float, default=5e-3)
    ap.add_argument("--shift_aug", type=int, default=0, help="random 1-pixel rolls")
    ap.add_argument("--flip_aug", type=int, default=0,
                    help="mirror each image left-right at random")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--data", default="digits", choices=["digits", "fashion-mnist"])
    ap.add_argument("--data-dir", default="/usr/share/datasets/fashion-mnist",
                    help="directory of the Fashion-MNIST IDX files")
    ap.add_argument("--train-subset", type=int, default=0,
                    help="train on the first N training images only (0: all)")
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--linear", default="conv", choices=["conv", "blas"],
                    help="train Linear layers as oneDNN 1x1 convolutions (fast with Debian's "
                         "reference libblas) or F.linear (fast with OpenBLAS: libopenblas0-openmp)")
    ap.add_argument("--reference-only", action="store_true",
                    help="skip training: recompute PyTorch's reference from the model files "
                         "already in --out")
    return ap


class Layout:
    """What --data implies: fmnist (bool), image (side in pixels), pool0 (a max-pool after conv0)
    and tag (the file names' suffix)."""

    def __init__(self, data):
        self.fmnist = data == "fashion-mnist"
        self.image = 28 if self.fmnist else 8
        self.pool0 = self.fmnist
        self.tag = "fmnist" if self.fmnist else "digits"


def load():
    d = load_digits()
    x = (d.data.astype(np.float32) / 16.0).reshape(-1, 1, 8, 8)
    y = d.target.astype(np.int64)
    return train_test_split(x, y, test_size=0.2, random_state=0, stratify=y)


def read_idx(path):
    """An IDX file (gzip or raw) as a numpy array: magic 0x00 0x00 type ndim, big-endian dims."""
    with open(path, "rb") as f:
        raw = f.read()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    assert raw[0] == 0 and raw[1] == 0 and raw[2] == 0x08, f"{path}: not an unsigned-byte IDX file"
    nd = raw[3]
    dims = [int.from_bytes(raw[4 + 4 * i:8 + 4 * i], "big") for i in range(nd)]
    return np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * nd).reshape(dims)


def load_fmnist(data_dir, train_subset=0):
    def images(name):
        x = read_idx(os.path.join(data_dir, f"{name}-images-idx3-ubyte.gz"))
        return (x.astype(np.float32) / np.float32(255.0)).reshape(-1, 1, 28, 28)

    def labels(name):
        return read_idx(os.path.join(data_dir, f"{name}-labels-idx1-ubyte.gz")).astype(np.int64)

    xtr, ytr = images("train"), labels("train")
    if train_subset:
        xtr, ytr = xtr[:train_subset], ytr[:train_subset]
    return xtr, images("t10k"), ytr, labels("t10k")


def predict(model, x, chunk=500):
    out = []
    with torch.no_grad():
        for i in range(0, len(x), chunk):
            out.append(model(torch.from_numpy(x[i:i + chunk])).argmax(1).numpy())
    return np.concatenate(out)


def augment(args, xb, g):
    """--shift_aug: a random roll by up to one pixel; --flip_aug: a random left-right mirror per
    image (clothing looks the same mirrored; digits do not)."""
    if args.shift_aug:
        dx, dy = torch.randint(-1, 2, (2,), generator=g).tolist()
        xb = torch.roll(xb, shifts=(dy, dx), dims=(2, 3))
    if args.flip_aug:
        flip = torch.rand(len(xb), generator=g) < 0.5
        xb = torch.where(flip.view(-1, 1, 1, 1), xb.flip(3), xb)
    return xb


def train(kind, args, xtr, ytr, xte, yte):
    lay = Layout(args.data)
    torch.manual_seed(args.seed)
    np.random.seed(args.seed)
    model = ref.DigitsSpikformer(kind, args.dim, args.heads, args.depth, args.mlp_ratio, args.T,
                                 stem=args.stem, image=lay.image, pool0=lay.pool0)
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=1e-2)
    bs = args.batch
    steps = args.epochs * ((len(xtr) + bs - 1) // bs)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=args.lr, total_steps=steps)
    Xtr, Ytr = torch.from_numpy(xtr), torch.from_numpy(ytr)
    g = torch.Generator().manual_seed(args.seed)
    t0 = time.time()
    for ep in range(args.epochs):
        model.train()
        perm = torch.randperm(len(Xtr), generator=g)
        tot = 0.0
        for b in range(0, len(perm), bs):
            idx = perm[b:b + bs]
            xb = augment(args, Xtr[idx], g)
            loss = F.cross_entropy(model(xb), Ytr[idx], label_smoothing=0.05)
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
            tot += float(loss) * len(idx)
            if lay.fmnist and (b // bs) % 100 == 0:
                print(f"[{kind}] epoch {ep + 1} batch {b // bs} loss {float(loss):.4f} "
                      f"({time.time() - t0:.0f} s)", flush=True)
        if ep % 5 == 4 or ep == args.epochs - 1 or lay.fmnist:
            model.eval()
            n = 1000 if lay.fmnist else len(xte)  # Fashion-MNIST: the first 1000 test images
            acc = float((predict(model, xte[:n]) == yte[:n]).mean())
            print(f"[{kind}] epoch {ep + 1} loss {tot / len(Xtr):.4f} test acc {acc:.4f} "
                  f"({time.time() - t0:.0f} s)", flush=True)
    model.eval()
    return model


def deploy(P, kind, args, xte, chunk=250):
    """deploy_forward over the test set in chunks: (logits, spike counts, aux counts, and the
    counts over the first SUBSET images)."""
    if not Layout(args.data).fmnist:
        return ref.deploy_forward(P, torch.from_numpy(xte), kind, args.heads, args.depth, args.T,
                                  exact_order=True) + ({},)
    logits, counts, aux, first = [], {}, {}, {}
    for i in range(0, len(xte), chunk):
        if i == SUBSET:
            first = dict(spikes=dict(counts), aux=dict(aux))
        lg, c, a = ref.deploy_forward(P, torch.from_numpy(xte[i:i + chunk]), kind, args.heads,
                                      args.depth, args.T, pool0=True, ternion_order=True)
        logits.append(lg)
        for k, v in c.items():
            counts[k] = counts.get(k, 0) + v
        for k, v in a.items():
            aux[k] = aux.get(k, 0) + v
    return torch.cat(logits), counts, aux, first


def read_json(path):
    """The JSON file at `path`, or {} when there is none."""
    if not os.path.exists(path):
        return {}
    with open(path) as f:
        return json.load(f)


def write_digits_test(out, xte, yte):
    with h5py.File(os.path.join(out, "digits_test.h5"), "w") as f:
        f.create_dataset("data", data=xte.astype(np.float32))
        f.create_dataset("labels", data=yte.astype(np.int64))
        f.attrs["source"] = ("sklearn load_digits / 16, train_test_split(test_size=0.2, "
                             "random_state=0, stratify=labels): the held-out test set")


def command_line(argv):
    """The command that reproduces this run, --out left out: where the files go does not change
    them."""
    argv, kept = list(argv), []
    while argv:
        a = argv.pop(0)
        if a == "--out":
            argv = argv[1:]
        elif not a.startswith("--out="):
            kept.append(a)
    return " ".join([COMMAND] + kept)


def model_params(kind, args, path, previous, data):
    """The folded parameters of model `kind` (read from `path` with --reference-only, else
    trained and written there), its accuracy before folding and its training time."""
    if args.reference_only:
        return (ref.read_params(path), previous.get("torch_test_accuracy_unfolded_bn"),
                previous.get("train_seconds"))
    xtr, xte, ytr, yte = data
    lay = Layout(args.data)
    t0 = time.time()
    model = train(kind, args, xtr, ytr, xte, yte)
    train_s = time.time() - t0
    train_mode_acc = float((predict(model, xte) == yte).mean())
    P = ref.export_params(model)
    ref.write_ternion_model(path, P, kind, args.dim, args.heads, args.depth, args.T,
                            lay.image, lay.pool0)
    return P, train_mode_acc, train_s


def reference(kind, args, argv, data, refpath, report):
    """Trains (or reads) model `kind`, writes its file and returns its entry of the reference
    JSON file."""
    lay = Layout(args.data)
    xtr, xte, ytr, yte = data
    path = os.path.join(args.out, f"{kind}_{lay.tag}.h5")
    P, train_mode_acc, train_s = model_params(kind, args, path, report.get(kind, {}), data)
    t0 = time.time()
    logits, counts, aux, first = deploy(P, kind, args, xte)
    deploy_s = time.time() - t0
    pred = logits.argmax(1).numpy()
    acc = float((pred == yte).mean())
    margin = torch.topk(logits, 2, dim=1).values
    test_set = ("digits_test.h5" if not lay.fmnist else
                os.path.join(args.data_dir, "t10k-images-idx3-ubyte.gz"))
    entry = dict(
        model=f"{kind}_{lay.tag}.h5", test_set=test_set, samples=int(len(yte)),
        timesteps=args.T, encoding="direct", dim=args.dim, heads=args.heads,
        depth=args.depth, mlp_ratio=args.mlp_ratio, stem=args.stem, epochs=args.epochs,
        seed=args.seed, lr=args.lr, shift_aug=args.shift_aug, flip_aug=args.flip_aug,
        torch_test_accuracy=acc, torch_test_accuracy_unfolded_bn=train_mode_acc,
        predictions=pred.tolist(),
        min_top2_margin=float((margin[:, 0] - margin[:, 1]).min()),
        spikes=counts, aux=aux,
        note="spikes: non-zero outputs per node summed over the test set and all steps; "
             "deploy path on the folded float32 arrays stored in the model file")
    if lay.fmnist:
        command = command_line(argv)
        if args.reference_only:
            command = read_json(refpath).get(kind, {}).get("command", command)
        entry.update(
            first_1000=first, data="fashion-mnist", image=lay.image, pool0=lay.pool0,
            batch=args.batch, train_subset=args.train_subset or int(len(xtr)),
            threads=args.threads, train_seconds=train_s, deploy_seconds=deploy_s,
            command=command, torch_version=torch.__version__)
    print(f"[{kind}] deploy test accuracy {acc:.4f}; spikes {counts}", flush=True)
    return entry


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    args = parser().parse_args(argv)
    torch.set_num_threads(args.threads)
    ref.LINEAR_VIA_BLAS = args.linear == "blas"
    lay = Layout(args.data)
    data = load_fmnist(args.data_dir, args.train_subset) if lay.fmnist else load()
    os.makedirs(args.out, exist_ok=True)
    if not lay.fmnist:
        write_digits_test(args.out, data[1], data[3])
    refpath = os.path.join(args.out, f"{lay.tag}_reference.json")
    report = read_json(refpath)
    for kind in args.kinds.split(","):
        report[kind] = reference(kind, args, argv, data, refpath, report)
        # Re-read first: the BSA and SSA models may be trained by two processes at once.
        report = {**read_json(refpath), kind: report[kind]}
        with open(refpath, "w") as f:
            json.dump(report, f, indent=1)
        if not args.reference_only:
            path = os.path.join(args.out, f"{kind}_{lay.tag}.h5")
            print(f"wrote {path} ({os.path.getsize(path)} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
