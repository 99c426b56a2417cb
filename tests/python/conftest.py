"""pytest options for the Python package tests: --ternion PATH (the built CLI)."""
import os
import subprocess
import sys

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def pytest_addoption(parser):
    parser.addoption("--ternion", default=os.path.join(ROOT, "build", "ternion"),
                     help="path of the ternion binary")
    parser.addoption("--package", default="",
                     help="directory holding the built package (<build>/python, with the "
                          "extension module); default: the source tree's pure-Python package")


def pytest_configure(config):
    # Before any test module imports ternion.
    sys.path.insert(0, config.getoption("--package") or os.path.join(ROOT, "python"))


@pytest.fixture(scope="session")
def ternion_bin(request):
    path = request.config.getoption("--ternion")
    if not os.path.exists(path):
        pytest.fail(f"ternion binary not found: {path} (pass --ternion PATH)")
    return path


@pytest.fixture
def small_tmpfs(tmp_path):
    """A 1 MiB tmpfs mounted for the test (full-disk tests), unmounted after; skipped where the
    test may not mount one (needs root and mount rights)."""
    d = tmp_path / "full"
    d.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(d)],
                      capture_output=True).returncode != 0:
        pytest.skip("cannot mount a tmpfs here (needs root and mount rights)")
    try:
        yield d
    finally:
        subprocess.run(["umount", str(d)])
