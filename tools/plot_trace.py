#!/usr/bin/python3
"""Turn a ternion trace (docs/traces.md) into PNG figures.

    /usr/bin/python3 tools/plot_trace.py TRACE.h5 --out DIR [--sample K] [--nodes a,b]
        [--neurons 0,5,10-19] [--figures raster,rates,membrane,energy,attention]
        [--time steps|ms] [--dpi N]

The figures are drawn by the Python package's ternion.plotting (the same code as
ternion.plot); this script only finds the package: the source tree's python/ beside tools/,
else the one installed under this script's prefix (share/ternion/ -> lib/python3*/dist-packages),
else whatever `import ternion` finds. Importing the package loads neither the compiled
extension nor torch, so Debian's python3-matplotlib, python3-h5py and python3-numpy suffice.
"""
import glob
import os
import sys


def _package_dirs():
    here = os.path.dirname(os.path.realpath(__file__))
    prefix = os.path.dirname(os.path.dirname(here))
    v = f"python{sys.version_info.major}.{sys.version_info.minor}"
    return [os.path.join(os.path.dirname(here), "python"),  # the source tree: tools/../python
            os.path.join(prefix, "lib", v, "dist-packages"),  # installed: Debian's local layout
            os.path.join(prefix, "lib", "python3", "dist-packages"),  # installed under /usr
            *sorted(glob.glob(os.path.join(prefix, "lib", "python3*", "*-packages")))]


def _import_plotting(module="plotting", prog="plot_trace"):
    """ternion.<module> from the first of _package_dirs that holds it (tools/plot_mesh.py uses
    this too)."""
    import importlib

    for d in _package_dirs():
        if os.path.isfile(os.path.join(d, "ternion", f"{module}.py")):
            sys.path.insert(0, d)
            break
    try:
        return importlib.import_module(f"ternion.{module}")
    except ImportError as e:
        sys.exit(f"{prog}: cannot import ternion.{module} ({e}); put the directory that holds "
                 f"the ternion package on PYTHONPATH")


if __name__ == "__main__":
    sys.exit(_import_plotting().main(prog="plot_trace"))
