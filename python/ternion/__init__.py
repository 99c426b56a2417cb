"""ternion's Python package.

Run and price models (the C++ simulator, through the extension module `ternion._core`):
    model = ternion.load("model.h5")            # or ternion.load_bundled(), ternion.build(...)
    r = ternion.run(model, x, labels)           # spikes, counts, energy, accuracy as numpy/dicts
    f = ternion.frames(events, frames=8, size=(H, W))   # event-camera streams as frames
    ternion.profiles(); ternion.attention(kind, weights, x)
    ternion.quantize(model_path, output_path, profile)  # the integer model a chip holds
See docs/python.md.

Export a PyTorch spiking network as a ternion model file (pure Python, needs torch):
    ternion.export(module, example_input, path)  # see docs/bringing-a-model.md

Draw a trace's figures (pure Python, needs matplotlib and h5py):
    ternion.plot("run.h5", "figs")  # raster, rates, membrane, energy, attention; see docs/traces.md
Draw a mesh placement (pure Python, needs matplotlib): cores by layer, packets per link:
    ternion.plot_mesh(ternion.map(model, "loihi-like"), "mesh.png")  # see docs/chips.md

Importing the package loads neither torch nor h5py; the simulator is loaded on first use.
"""

__all__ = ["load", "load_bundled", "build", "run", "quantize", "frames", "Result", "Model", "Error", "profiles",
           "describe_profile", "attention", "attention_kinds", "kernels", "export", "ExportError", "plot",
           "plot_mesh", "map", "chips"]

_API = {"load", "load_bundled", "build", "run", "quantize", "frames", "Result", "Model", "Error", "profiles",
        "describe_profile", "attention", "attention_kinds", "kernels", "map", "chips"}


def export(module, example_input, path, **options):
    """Writes `module` as a ternion model file at `path`; returns an `ExportReport`.
    See ternion.exporter.export for the options."""
    from .exporter import export as _export

    return _export(module, example_input, path, **options)


def plot(trace, out=".", **options):
    """Draws the figures of the trace file `trace` (raster, rates, membrane, energy,
    attention_<node>) as PNG files in `out` (None: none written) and returns them as
    {name: matplotlib Figure}. Options: sample, nodes, neurons, figures, time ("steps" or
    "ms"), dpi. See ternion.plotting.plot and docs/traces.md."""
    from .plotting import plot as _plot

    return _plot(trace, out, **options)


def plot_mesh(placement, out=None, **options):
    """Draws a mesh placement (ternion.map(model, "loihi-like"), Result.chip of a run with
    chip=..., or a `ternion map --json` / `ternion run --chip --json` file) as the chip's tiles
    and cores, each used core coloured by its layer, and the packets per step on every link;
    writes a PNG at `out` unless None and returns the matplotlib Figure. Options: model (the
    title's name), dpi. See ternion.mesh_plot.plot_mesh and docs/chips.md."""
    from .mesh_plot import plot_mesh as _plot_mesh

    return _plot_mesh(placement, out, **options)


def __getattr__(name):
    if name == "ExportError":
        from .exporter.graph import ExportError

        return ExportError
    if name in _API:
        try:
            from . import api
        except ImportError as e:  # the package without its compiled extension
            raise ImportError(
                f"ternion.{name} needs the compiled extension ternion._core, which was not "
                f"found ({e}); build with -DTERNION_PYTHON=ON (needs pybind11-dev) and install, "
                f"or put <build>/python on PYTHONPATH") from e
        return getattr(api, name)
    raise AttributeError(f"module 'ternion' has no attribute {name!r}")
