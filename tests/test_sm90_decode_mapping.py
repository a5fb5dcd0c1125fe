"""CPU check of the sm90a decode GEMM kernel's data mapping (tests/sm90_host/decode_mapping_test.cpp):
the lanes' weight words, the token tile layout, the mma.m16n8k16 registers under CUTLASS's SM80
fragment layouts and the output mapping, emulated on the host and compared with a direct sum.
No GPU and no library build needed."""

from __future__ import annotations

import os
import re
import subprocess

import pytest

from test_sm90_plans import HERE, ROOT, _compiler


def test_decode_mapping(tmp_path):
    cc = _compiler()
    if cc is None:
        pytest.skip("no C++ compiler (CXX, c++, g++, clang++ or nvcc) found")
    exe = str(tmp_path / "decode_mapping_test")
    src = os.path.join(HERE, "sm90_host", "decode_mapping_test.cpp")
    cmd = cc + ["-std=c++17", "-O1", src, "-o", exe,
                "-I", os.path.join(ROOT, "cpp", "src"), "-I", os.path.join(ROOT, "cpp", "include")]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, f"failed to compile:\n{r.stdout[-4000:]}\n{r.stderr[-4000:]}"
    r = subprocess.run([exe], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and re.search(r"^\d+ passed, 0 failed$", r.stdout, re.M), r.stdout[-4000:]
