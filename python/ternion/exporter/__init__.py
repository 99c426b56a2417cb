"""ternion.export: PyTorch spiking networks to ternion model files (NIR layout + ternion nodes).

Supported modules (matched by class name and attributes, so SpikingJelly and the Spikformer code
need not be importable here): SpikingJelly LIFNode/MultiStepLIFNode, ParametricLIFNode,
IFNode; torch Conv1d/Conv2d/Linear with a following BatchNorm folded in (or kept: fold_bn=False),
MaxPool2d, AvgPool2d, Flatten, Identity/Dropout; Sequential, SeqToANNContainer, MultiStepContainer; the official
Spikformer (SPS, SSA blocks, MLP, head), the official Spike-driven Transformer v1 (sdt.py), the
official QKFormer (qkformer.py), the official Spike-driven Transformer V2 (sdt_v2.py) and V3
with its integer MultiSpike neurons (sdt_v3.py) and
this repository's DigitsSpikformer; snnTorch Leaky,
Synaptic, RLeaky and RSynaptic (recurrent nn.Linear, nn.Conv2d or one-to-one V), Norse LIFBoxCell, LIFCell, LIBoxCell and IAFCell, Sinabs IAF, LIF and ExpLeak
(peers.py: the file then carries that framework's conventions, metadata/from). Anything else
raises ExportError naming the module path and type. docs/bringing-a-model.md has the table."""
from dataclasses import dataclass, field

from . import converters as cv
from . import peers
from . import qkformer
from . import sdt
from . import sdt_v2
from . import sdt_v3
from . import spikingformer
from .graph import ExportError, Graph, fold_bn, write_model

__all__ = ["export", "ExportError", "ExportReport", "fold_bn", "write_model"]


@dataclass
class ExportReport:
    path: str
    input_shape: tuple
    timesteps: int
    time_first: bool
    encoding: str
    nodes: dict = field(default_factory=dict)  # node name -> (type, module path)
    quantized: dict = None  # export(quantize=...): ternion.quantize's report


class Exporter:
    def __init__(self, fold_bn=True):
        self.fold_bn = fold_bn  # False: BatchNorms become ternion.BatchNorm nodes / bn_form
        self.g = Graph()
        self.timesteps = None
        self.encoding = None
        self.complete = False
        self.frames = False  # Spikingformer's DVS forward: the input is a frame per step
        self.framework = None  # snntorch, norse or sinabs: whose neurons the file holds
        self.meta = {}  # metadata the converters set (from, dt, discretization)

    def name(self, path):
        return self.g.unique(path or "root")

    def replace(self, nodes, edges):
        """A converter that writes the whole graph itself (ending in its Output node)."""
        self.g.nodes.update(nodes)
        self.g.edges.extend(edges)
        for n in nodes:
            self.g.origin[n] = n
        self.complete = True

    def convert(self, m, path, x):
        name = cv.cls(m)
        names = cv.mro_names(m)
        fw = peers.framework_of(m)
        if fw:
            return peers.CONVERTERS[fw](self, m, path, x)
        if name in cv.LIF_NAMES or name in cv.PLIF_NAMES or name in cv.IF_NAMES:
            return cv.convert_neuron(self, m, path, x)
        if cv.is_digits_spikformer(m):
            return cv.convert_digits_spikformer(self, m, path, x)
        if sdt.is_sdt(m):
            return sdt.convert_sdt(self, m, path, x)
        if sdt_v3.is_sdt_v3(m):
            return sdt_v3.convert_sdt_v3(self, m, path, x)
        if sdt_v2.is_sdt_v2(m):
            return sdt_v2.convert_sdt_v2(self, m, path, x)
        if qkformer.is_qkformer(m):
            return qkformer.convert_qkformer(self, m, path, x)
        if spikingformer.is_spikingformer(m):  # before Spikformer: the same top attributes
            return spikingformer.convert_spikingformer(self, m, path, x)
        if sdt.is_ms_sps(m):
            return sdt.convert_ms_sps(self, m, path, x)
        if sdt.is_ms_block(m):
            return sdt.convert_ms_block(self, m, path, x)
        if cv.is_spikformer(m):
            return cv.convert_spikformer(self, m, path, x)
        if cv.is_sps(m):
            return cv.convert_sps(self, m, path, x)
        if cv.is_block(m):
            return cv.convert_block(self, m, path, x)
        if cv.is_ssa(m):
            return cv.convert_ssa(self, m, path, x)
        if cv.is_mlp(m):
            return cv.convert_mlp(self, m, path, x)
        if names & cv.SEQUENTIAL_NAMES:
            return cv.convert_sequential(self, m, path, x)
        if name in cv.IDENTITY_NAMES:
            return x
        if cv.is_conv(m):
            return cv.conv_node(self, m, path, x)
        if cv.is_linear(m):
            return cv.linear_node(self, m, path, x)
        if names & {"MaxPool2d", "AvgPool2d"}:
            return cv.pool_node(self, m, path, x)
        if "Flatten" in names:
            return cv.flatten_node(self, m, path, x)
        if cv.is_bn(m):
            raise ExportError(f"{cv.describe(m, path)}: a BatchNorm must follow a Conv or Linear "
                              "in the same container, to be folded into it")
        raise ExportError(f"{cv.describe(m, path)}: no converter for this module type")


def _multi_step(module):
    for m in module.modules():
        n = cv.cls(m)
        if n.startswith("MultiStep") or n in ("SeqToANNContainer", "MultiStepContainer") or \
                getattr(m, "step_mode", None) == "m":
            return True
    return False


def export(module, example_input, path, *, timesteps=None, time_first=None, metadata=None,
           fold_bn=True, quantize=None, attention=None):
    """Writes `module` as a ternion model file at `path` and returns an ExportReport.

    example_input: a tensor with the batch axis, shaped like what `module` takes:
      * [T, B, ...] for multi-step networks (SpikingJelly step_mode 'm', MultiStep* neurons,
        SeqToANNContainer): T becomes the file's `timesteps`;
      * [B, ...] for models that repeat their input over time themselves (Spikformer,
        Spike-driven Transformer, QKFormer, Spikingformer, DigitsSpikformer: T from the model,
        direct encoding) or single-step networks (then pass `timesteps`);
      * [B, T, C, H, W] for Spikingformer's DVS files (their forward permutes frames to time
        first): T becomes `timesteps`, and the input is run as frames (`/frames`).
    time_first overrides that choice. Only its shape is used. The file describes the module in
    eval mode, BatchNorm with its running statistics:
      * fold_bn=True (default): folded into the preceding Conv/Linear's weights and bias, as
        inference hardware runs it (no BatchNorm operations are counted). Float32 rounding then
        differs from PyTorch's by an ulp or so, which can move a spike whose membrane sits at
        the threshold.
      * fold_bn=False: kept unfolded (ternion.BatchNorm nodes; bn_form inside ternion.SSA) and
        computed as PyTorch's CPU kernels round it, for spike-for-spike comparisons with
        PyTorch; the BatchNorms then cost one multiply-add per element.
    quantize: a hardware profile (name or file) with number formats: `path` then holds the
      integer model a chip would hold (ternion.quantize, docs/fixed-point.md) instead of the
      float one; the report's `quantized` says what became integer. Needs the compiled
      extension.
    attention: None (default) exports each attention as it is; "bsa" states that the model was
      trained with Bipolar Self-attention in place of its backbone's self-attention
      (ternion.reference.bsa.swap_attention): an SSA or SDSA left in the model is then an error
      naming the module (QKFormer's Q-K token attention blocks stay as they are)."""
    if attention not in (None, "bsa"):
        raise ExportError(f"attention must be None or 'bsa', got {attention!r}")
    ex = Exporter(fold_bn)
    shape = tuple(example_input.shape)
    whole = cv.is_spikformer(module) or sdt.is_sdt(module) or qkformer.is_qkformer(module) or \
        cv.is_digits_spikformer(module) or sdt_v3.is_sdt_v3(module) or sdt_v2.is_sdt_v2(module)
    ex.frames = spikingformer.is_spikingformer(module) and len(shape) == 5
    if ex.frames:  # [B, T, C, H, W]: samples first, as the DVS forward takes them
        ex.timesteps, shape, time_first = int(shape[1]), shape[:1] + shape[2:], False
    if time_first is None:
        time_first = not whole and _multi_step(module)
    if time_first:
        if len(shape) < 3:
            raise ExportError(f"example_input of shape {shape} is not [T, B, ...]")
        in_shape = shape[2:]
        ex.timesteps = int(shape[0])
    else:
        if len(shape) < 2:
            raise ExportError(f"example_input of shape {shape} is not [B, ...]")
        in_shape = shape[1:]
    x = ex.g.add("input", "Input", dict(shape=cv.i64(in_shape)), [], in_shape)
    last = ex.convert(module, "", x)
    if not ex.complete:
        ex.g.add("output", "Output", dict(shape=cv.i64(ex.g.shapes[last])), [last],
                 ex.g.shapes[last])
    if attention == "bsa":
        _require_bsa(ex.g)
    if timesteps is not None:
        # The bounds ternion's loader accepts: a file it would refuse is not written.
        if int(timesteps) != timesteps or not 1 <= int(timesteps) <= 1_000_000:
            raise ExportError(f"timesteps must be an integer between 1 and 1000000, got "
                              f"{timesteps!r}")
        ex.timesteps = int(timesteps)
    meta = {"source": "ternion.export"}
    if ex.timesteps is not None:
        meta["timesteps"] = cv.i64(ex.timesteps)
    if ex.encoding is not None:
        meta["encoding"] = ex.encoding
    meta.update(ex.meta)
    meta.update(metadata or {})
    report = ExportReport(path=str(path), input_shape=in_shape, timesteps=ex.timesteps,
                          time_first=bool(time_first), encoding=ex.encoding or "",
                          nodes={n: (t, ex.g.origin.get(n, n)) for n, (t, _) in ex.g.nodes.items()})
    if quantize is None:
        ex.g.write(path, meta)
        return report
    report.quantized = _write_quantized(ex.g, meta, path, quantize)
    return report


def _require_bsa(graph):
    """attention="bsa": no spiking self-attention other than BSA, and at least one BSA."""
    types = {n: t for n, (t, _) in graph.nodes.items()}
    other = [n for n, t in types.items() if t in ("ternion.SSA", "ternion.SDSA")]
    if other:
        raise ExportError(f"attention='bsa', but {graph.origin.get(other[0], other[0])} is a "
                          f"{types[other[0]].split('.')[1]} attention (replace it with "
                          "ternion.reference.bsa.swap_attention before loading the BSA weights)")
    if "ternion.BSA" not in types.values():
        raise ExportError("attention='bsa', but the model has no BipolarSelfAttention")


def _write_quantized(graph, meta, path, profile):
    """The float model into a private temporary file beside `path`, quantised into `path`."""
    import os
    import tempfile

    from .. import api

    folder = os.path.dirname(os.path.abspath(str(path)))
    fd, tmp = tempfile.mkstemp(prefix=".ternion-float-", suffix=".h5", dir=folder)
    os.close(fd)
    try:
        graph.write(tmp, meta)
        return api.quantize(tmp, path, profile)
    finally:
        os.remove(tmp)
