"""Helpers of the checks against peer frameworks (check_syops, check_neurobench, check_peers) and
official model code (check_spikingformer, check_sdt_v2, check_sdt_v3)."""
import importlib
import importlib.machinery
import importlib.util
import os
import shutil
import sys


def import_checkout(name, directory):
    """Imports the package `name` from `directory` (a source checkout holding name/__init__.py)
    and registers it in sys.modules, so that `import name` and its submodules, here and inside
    the other packages, resolve to that checkout; sys.path is left as it is. Without
    `directory`, a plain import (PYTHONPATH or the installed package). Import a package before
    the packages that import it."""
    if not directory:
        return importlib.import_module(name)
    spec = importlib.machinery.PathFinder.find_spec(name, [os.path.abspath(directory)])
    if spec is None:
        sys.exit(f"{directory}: no Python package {name} in it")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module


def ternion_binary(path):
    """`path` if it names an executable (a path, or a name found on PATH), else exits with a
    message: the tools' default, build/ternion, is relative to the current directory."""
    if shutil.which(path) is None:
        sys.exit(f"{path}: no ternion binary there (run from the repository root, or give "
                 "its path)")
    return path


def randomize_bn(net, gen):
    """Random affine BatchNorm parameters (weight in [0.6, 1.4], bias in [0.2, 0.8]: neurons fire
    at different rates) and cumulative running statistics, for calibration passes."""
    import torch
    import torch.nn as nn

    for m in net.modules():
        if isinstance(m, (nn.BatchNorm1d, nn.BatchNorm2d)):
            with torch.no_grad():
                m.weight.copy_(0.6 + 0.8 * torch.rand(m.weight.shape, generator=gen))
                m.bias.copy_(0.2 + 0.6 * torch.rand(m.bias.shape, generator=gen))
            m.momentum = None
