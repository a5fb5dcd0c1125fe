"""CPU test of the sm90a GEMV plan (cpp/src/sm90/gemv/plan.hpp): support and alignment
checks, kernel choice, register-kernel shapes, the MMA kernel's occupancy model, shape
choice and even-spread cap, kernel parameters. tests/sm90_host/gemv_plan_test.cpp includes
exactly the header the backend runs (plain C++, no CUDA) and is compiled here with the host
C++ compiler (nvcc as a fallback); it needs no GPU and no build of the library.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def _compiler():
    """A C++17 compiler driver: $CXX, c++, g++, clang++, else nvcc."""
    for c in (os.environ.get("CXX"), "c++", "g++", "clang++", "nvcc", "/usr/local/cuda/bin/nvcc"):
        path = c and shutil.which(c)
        if path:
            return path
    return None


def test_sm90_gemv_plan(tmp_path):
    cxx = _compiler()
    if cxx is None:
        pytest.skip("no C++ compiler found")
    exe = str(tmp_path / "sm90_gemv_plan_test")
    src = os.path.join(HERE, "sm90_host", "gemv_plan_test.cpp")
    cmd = [cxx, "-std=c++17", "-O1", "-x", "c++", src, "-o", exe,
           "-I", os.path.join(ROOT, "cpp", "src"), "-I", os.path.join(ROOT, "cpp", "include")]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, f"gemv plan test failed to compile:\n{r.stdout[-4000:]}\n{r.stderr[-4000:]}"
    r = subprocess.run([exe], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and re.search(r"^\d+ passed, 0 failed$", r.stdout, re.M), r.stdout[-4000:]
