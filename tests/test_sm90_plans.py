"""CPU tests of the sm90a plan layers: the GEMM plan (cpp/src/sm90/gemm_plan.hpp: which
problems the Hopper kernels take; kernel, split-K, grid, token TMA box, scale-load mode and
token workspace; gemm_schedule_test: operand roles, token tile, stream-K, invariants over random
problems), the dual GEMM plan (cpp/src/sm90/dual_plan.hpp: fused kernel or composed
path, split-K, scale-load and output store modes), the grouped GEMM plan
(cpp/src/sm90/grouped_plan.hpp: one-launch kernel or per-group loop, problem table, tile
numbering, split-K, scale-load mode, token workspace) and the GEMV plan (cpp/src/sm90/gemv/plan.hpp: support and alignment
checks, kernel choice, register-kernel shapes, the MMA kernel's occupancy model and shape
choice, kernel parameters; gemv/decode_plan.hpp: the decode kernel's support and launch shape);
and the decode kernel's data mapping (decode_mapping_test: the lanes' weight words, the token
tile, the mma.m16n8k16 registers under CUTLASS's SM80 fragment layouts and the output mapping,
emulated on the host against a direct sum), and the packed MoE decode route (decode_moe_plan_test:
packed_plan.hpp's route rule, the MoE launch plan, the kernel's chunk numbering emulated over valid and
malformed offset tables). Each test in tests/sm90_host/ includes exactly the header the
backend runs (plain C++, no CUDA) and is compiled here with the host C++ compiler (nvcc as a
fallback); no GPU and no build of the library needed.
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
    """[driver, flags...] of a C++17 compiler: $CXX, c++, g++, clang++, else nvcc; or None."""
    for name in (os.environ.get("CXX"), "c++", "g++", "clang++"):
        if name and shutil.which(name):
            return [shutil.which(name)]
    for name in ("nvcc", "/usr/local/cuda/bin/nvcc"):
        if shutil.which(name):
            return [shutil.which(name), "-x", "cu"]
    return None


@pytest.mark.parametrize("test", ["gemm_plan_test", "gemm_schedule_test", "gemv_plan_test", "dual_plan_test", "grouped_plan_test",
                                  "decode_mapping_test", "decode_moe_plan_test", "decode_launch_test"])
def test_sm90_plan(test, tmp_path):
    cc = _compiler()
    if cc is None:
        pytest.skip("no C++ compiler (CXX, c++, g++, clang++ or nvcc) found")
    exe = str(tmp_path / test)
    src = os.path.join(HERE, "sm90_host", test + ".cpp")
    cmd = cc + ["-std=c++17", "-O1", src, "-o", exe,
                "-I", os.path.join(ROOT, "cpp", "src"), "-I", os.path.join(ROOT, "cpp", "include")]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, f"{test} failed to compile:\n{r.stdout[-4000:]}\n{r.stderr[-4000:]}"
    r = subprocess.run([exe], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and re.search(r"^\d+ passed, 0 failed$", r.stdout, re.M), r.stdout[-4000:]
