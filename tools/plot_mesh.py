#!/usr/bin/python3
"""Draw a mesh placement (docs/chips.md) as a PNG: the chip's tiles and cores, each used core
coloured by its layer, and the spike packets per step on every link between tiles.

    ternion map MODEL --chip loihi-like --json > map.json
    /usr/bin/python3 tools/plot_mesh.py map.json -o mesh.png [--model NAME] [--dpi N]
    ternion run MODEL --input X --chip generic-45nm --json | /usr/bin/python3 tools/plot_mesh.py - -o mesh.png

The figure is drawn by the Python package's ternion.mesh_plot (the same code as
ternion.plot_mesh), found as tools/plot_trace.py finds ternion.plotting: the source tree's
python/ beside tools/, else the package installed under this script's prefix, else whatever
`import ternion` finds. Needs Debian's python3-matplotlib and python3-numpy, not the compiled
extension.
"""
import os
import sys

if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.realpath(__file__)))  # plot_trace.py beside it
    from plot_trace import _import_plotting

    sys.exit(_import_plotting("mesh_plot", "plot_mesh").main(prog="plot_mesh"))
