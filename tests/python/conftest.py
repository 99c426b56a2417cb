"""pytest options for the Python package tests: --ternion PATH (the built CLI)."""
import os
import sys

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "python"))
sys.path.insert(0, os.path.join(ROOT, "tools"))


def pytest_addoption(parser):
    parser.addoption("--ternion", default=os.path.join(ROOT, "build", "ternion"),
                     help="path of the ternion binary")


@pytest.fixture(scope="session")
def ternion_bin(request):
    path = request.config.getoption("--ternion")
    if not os.path.exists(path):
        pytest.fail(f"ternion binary not found: {path} (pass --ternion PATH)")
    return path
