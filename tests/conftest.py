"""Shared pytest setup: the `gpu` marker (skipped without a CUDA device), a fresh-seed `rng`
fixture whose seed is printed when a test fails, and the GPU tests' `dev` fixture (device
arrays: PyTorch, else CuPy; tests/_util.py).

Reproduce a failure with NVFP4_TEST_SEED=<seed printed in the report>."""

from __future__ import annotations

import os
import secrets
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # tests/_util.py

from _util import HAVE_GPU, _make_device  # noqa: E402


def pytest_configure(config):
    config.addinivalue_line("markers", "gpu: needs a CUDA device (skipped without one)")


def pytest_collection_modifyitems(config, items):
    if HAVE_GPU:
        return
    skip = pytest.mark.skip(reason="no CUDA device visible (nvfp4._nvfp4_ext.device_count() == 0)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture
def rng(request):
    """A numpy Generator with a fresh random seed (or NVFP4_TEST_SEED)."""
    seed = int(os.environ.get("NVFP4_TEST_SEED", secrets.randbits(63)))
    request.node._nvfp4_seed = seed
    return np.random.default_rng(seed)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    seed = getattr(item, "_nvfp4_seed", None)
    if seed is not None and report.failed:
        report.sections.append(("rng seed", f"NVFP4_TEST_SEED={seed}"))


@pytest.fixture(scope="module")
def dev():
    if not HAVE_GPU:
        pytest.skip("no CUDA device")
    return _make_device()
