"""ternion's Python package.

`ternion.export(module, example_input, path)` writes a PyTorch spiking network (SpikingJelly
neurons, torch layers, Spikformer) as a ternion model file; see docs/bringing-a-model.md.
Importing the package loads neither torch nor h5py: the exporter is imported on first use.
"""

__all__ = ["export", "ExportError"]


def export(module, example_input, path, **options):
    """Writes `module` as a ternion model file at `path`; returns an `ExportReport`.
    See ternion.exporter.export for the options."""
    from .exporter import export as _export

    return _export(module, example_input, path, **options)


def __getattr__(name):
    if name == "ExportError":
        from .exporter.graph import ExportError

        return ExportError
    raise AttributeError(f"module 'ternion' has no attribute {name!r}")
