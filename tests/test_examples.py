"""The multi-device examples on the CPU: two processes over gloo (torch.distributed) and two
virtual CPU devices (JAX shard_map), both on the library's float64 CPU backend, checked
against the float64 reference of the whole MLP by the examples themselves. The same scripts
run on two GPUs in tests/test_gpu_multi_gpu.py."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SMALL = ["--cpu", "--tokens", "16", "--hidden", "256", "--intermediate", "512", "--iters", "1"]


def _run(script):
    env = dict(os.environ)
    env.pop("XLA_FLAGS", None)
    proc = subprocess.run([sys.executable, os.path.join(ROOT, "examples", script), *SMALL], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"{script} exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr[-3000:]}"
    assert "matches the float64 reference" in proc.stdout, proc.stdout
    return proc.stdout


def test_torch_tensor_parallel_example_on_cpu():
    torch = pytest.importorskip("torch")
    if not torch.distributed.is_available() or not torch.distributed.is_gloo_available():
        pytest.skip("torch.distributed with gloo is not available")
    _run("tp_gated_mlp_torch.py")


def test_jax_sharded_example_on_cpu():
    pytest.importorskip("jax")
    _run("sharded_gated_mlp_jax.py")
