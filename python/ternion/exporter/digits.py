"""This repository's small spiking Transformer (python/ternion/reference/spikformer.py, DigitsSpikformer): the
graph of models/bundled/{bsa,ssa}_digits.h5, from folded parameters."""
import numpy as np

from .graph import fold_bn, f32


def digits_params(model):
    """Folded float32 parameters keyed like the model file's nodes: {node: {param: array}}."""
    P = {}
    if model.stem:
        w, b = fold_bn(model.conv0.weight, model.conv0.bias, model.bn0)
        P["conv0"] = dict(weight=w, bias=b)
    w, b = fold_bn(model.conv.weight, model.conv.bias, model.bn)
    P["conv"] = dict(weight=w, bias=b)
    for i, blk in enumerate(model.blocks):
        a = {}
        for nm in ("q", "k", "v"):
            lb = getattr(blk.attn, nm)
            w, b = fold_bn(lb.lin.weight, lb.lin.bias, lb.bn)
            a[nm + "_weight"], a[nm + "_bias"] = w, b
        P[f"b{i}_attn"] = a
        for nm in ("proj", "fc1", "fc2"):
            lb = getattr(blk, nm)
            w, b = fold_bn(lb.lin.weight, lb.lin.bias, lb.bn)
            P[f"b{i}_{nm}"] = dict(weight=w, bias=b)
    P["head"] = dict(weight=f32(model.head.weight), bias=f32(model.head.bias))
    return P


def digits_graph(P, kind, dim, heads, depth, T, image=8, pool0=False):
    """(nodes, edges, metadata) of the DigitsSpikformer with folded parameters P: an image of
    image x image pixels (1 channel); pool0 puts a 2x2 max-pool after the first stage (conv0)."""
    del dim  # the shapes follow from P
    nodes = {}
    edges = []
    nodes["input"] = ("Input", dict(shape=np.array([1, image, image], dtype=np.int64)))

    def conv(p, hw):
        return ("Conv2d", dict(weight=p["weight"], bias=p["bias"],
                               stride=np.array([1, 1], np.int64),
                               padding=np.array([1, 1], np.int64),
                               dilation=np.array([1, 1], np.int64), groups=np.int64(1),
                               input_shape=np.array([hw, hw], np.int64)))
    lif = dict(tau=np.float32(2.0), decay_input=np.int64(1), v_threshold=np.float32(1.0),
               v_reset=np.float32(0.0))

    def pool():
        return ("MaxPool2d", dict(kernel_size=np.array([2, 2], np.int64),
                                  stride=np.array([2, 2], np.int64),
                                  padding=np.array([0, 0], np.int64)))
    first = "conv"
    hw = image
    if "conv0" in P:
        nodes["conv0"] = conv(P["conv0"], hw)
        nodes["conv0_lif"] = ("ternion.SJLIF", dict(lif))
        edges += [("input", "conv0"), ("conv0", "conv0_lif")]
        if pool0:
            nodes["pool0"] = pool()
            edges += [("conv0_lif", "pool0"), ("pool0", "conv")]
            hw //= 2
        else:
            edges += [("conv0_lif", "conv")]
        first = None
    nodes["conv"] = conv(P["conv"], hw)
    nodes["conv_lif"] = ("ternion.SJLIF", dict(lif))
    nodes["pool"] = pool()
    nodes["tokens"] = ("ternion.Tokens", {})
    if first:
        edges += [("input", "conv")]
    edges += [("conv", "conv_lif"), ("conv_lif", "pool"), ("pool", "tokens")]
    prev = "tokens"
    for i in range(depth):
        a = dict(P[f"b{i}_attn"])
        a["heads"] = np.int64(heads)
        if kind == "ssa":
            a.update(lif_tau=np.float32(2.0), lif_decay_input=np.int64(1),
                     lif_v_threshold=np.float32(1.0), lif_v_reset=np.float32(0.0),
                     attn_tau=np.float32(2.0), attn_v_threshold=np.float32(0.5),
                     scale=np.float32(0.125))
            nodes[f"b{i}_attn"] = ("ternion.SSA", a)
        else:
            a.update(qk_v_threshold=np.float32(1.0), qk_decay=np.float32(0.5),
                     out_v_threshold=np.float32(0.5), out_decay=np.float32(0.5))
            nodes[f"b{i}_attn"] = ("ternion.BSA", a)
        for nm in ("proj", "fc1", "fc2"):
            nodes[f"b{i}_{nm}"] = ("Affine", dict(P[f"b{i}_{nm}"]))
            nodes[f"b{i}_{nm}_lif"] = ("ternion.SJLIF", dict(lif))
        nodes[f"b{i}_res1"] = ("ternion.Identity", {})
        nodes[f"b{i}_res2"] = ("ternion.Identity", {})
        edges += [(prev, f"b{i}_attn"), (f"b{i}_attn", f"b{i}_proj"),
                  (f"b{i}_proj", f"b{i}_proj_lif"), (prev, f"b{i}_res1"),
                  (f"b{i}_proj_lif", f"b{i}_res1"), (f"b{i}_res1", f"b{i}_fc1"),
                  (f"b{i}_fc1", f"b{i}_fc1_lif"), (f"b{i}_fc1_lif", f"b{i}_fc2"),
                  (f"b{i}_fc2", f"b{i}_fc2_lif"), (f"b{i}_res1", f"b{i}_res2"),
                  (f"b{i}_fc2_lif", f"b{i}_res2")]
        prev = f"b{i}_res2"
    nodes["mean"] = ("ternion.TokenMean", {})
    nodes["head"] = ("Affine", dict(P["head"]))
    nodes["output"] = ("Output", dict(shape=np.array([P["head"]["weight"].shape[0]],
                                                     dtype=np.int64)))
    edges += [(prev, "mean"), ("mean", "head"), ("head", "output")]
    return nodes, edges, dict(timesteps=np.int64(T))
