"""A downstream CMake project finds the installed package with
`-Dnvfp4_DIR=$(python -m nvfp4 --cmake-dir)`, links nvfp4::nvfp4 with only a C
compiler (the shared library carries the CUDA runtime statically) and runs a CPU gemm
with a known answer plus an invalid call (tests/cpp_consumer/main.c)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))


def _c_compiler():
    return os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")


def test_cmake_consumer_builds_and_runs(tmp_path):
    cmake = shutil.which("cmake")
    if cmake is None:
        pytest.skip("cmake is not installed")
    if _c_compiler() is None:
        pytest.skip("no C compiler (cc, gcc, clang) found")
    r = subprocess.run([sys.executable, "-m", "nvfp4", "--cmake-dir"], capture_output=True, text=True, check=True)
    cmake_dir = r.stdout.strip()
    build = tmp_path / "build"
    env = dict(os.environ)
    env.pop("CUDACXX", None)   # the consumer must not need nvcc

    def step(*cmd):
        p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)
        assert p.returncode == 0, f"{' '.join(cmd)} failed:\n{p.stdout}\n{p.stderr}"
        return p.stdout

    step(cmake, "-S", os.path.join(HERE, "cpp_consumer"), "-B", str(build), f"-Dnvfp4_DIR={cmake_dir}",
         "-DCMAKE_BUILD_TYPE=Release")
    step(cmake, "--build", str(build))
    exe = build / "nvfp4_consumer"
    out = step(str(exe))
    import nvfp4

    lines = out.splitlines()
    assert lines[0] == f"version {nvfp4.__version__}"
    assert "gemm status 0: 16 22 48 66" in lines
    assert any(ln.startswith("invalid status 1 (invalid value): gemm: K mismatch: 'a' has K=32, 'b' has K=64")
               for ln in lines), out
    assert lines[-1] == "ALL OK", out
