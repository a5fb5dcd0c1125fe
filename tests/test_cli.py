"""The command line: `python -m nvfp4 --cmake-dir | info | bench`."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from conftest import HAVE_GPU


def run_cli(*args, timeout=120):
    return subprocess.run([sys.executable, "-m", "nvfp4", *args], capture_output=True, text=True, timeout=timeout)


def test_cmake_dir_points_at_the_installed_package():
    r = run_cli("--cmake-dir")
    assert r.returncode == 0, r.stderr
    path = r.stdout.strip()
    assert os.path.isdir(path), f"--cmake-dir printed {path!r}, which is not a directory"
    assert os.path.isfile(os.path.join(path, "nvfp4Config.cmake")), os.listdir(path)


def test_version_matches_the_package():
    import nvfp4

    r = run_cli("--version")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == nvfp4.__version__


def test_info_exits_zero_and_lists_devices():
    r = run_cli("info")
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("nvfp4 "), r.stdout
    if not HAVE_GPU:
        assert "no CUDA device visible" in r.stdout


def test_info_json():
    import json

    r = run_cli("info", "--json")
    assert r.returncode == 0, r.stderr
    info = json.loads(r.stdout)
    assert {"version", "build_archs", "devices"} <= set(info)


@pytest.mark.skipif(HAVE_GPU, reason="with a GPU `bench` runs the GPU benchmark (tested on the device)")
def test_bench_without_gpu_runs_the_cpu_check():
    r = run_cli("bench")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "no CUDA GPU visible" in r.stdout
    line = next((ln for ln in r.stdout.splitlines() if ln.startswith("CPU reference gemm")), None)
    assert line is not None, r.stdout
    assert "(ok)" in line, line
