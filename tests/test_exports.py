"""The shared objects export their interface only (cmake/libnvfp4.map, cmake/python_ext.map):
libnvfp4 the C ABI's nvfp4_* functions, each extension its PyInit_*. Anything else exported
(the statically linked CUDA runtime, libstdc++ where the toolchain links it statically) can
bind libraries loaded later: an exported libstdc++ crashed `import nvfp4, torch`."""

from __future__ import annotations

import glob
import os
import shutil
import subprocess

import pytest

import nvfp4


def _exports(path):
    out = subprocess.run(["nm", "-D", "--defined-only", path], capture_output=True, text=True, check=True).stdout
    return [line.split()[-1] for line in out.splitlines() if line.strip()]


def _installed(pattern):
    here = os.path.dirname(nvfp4._nvfp4_ext.__file__)
    return sorted(glob.glob(os.path.join(here, pattern)))


@pytest.mark.skipif(shutil.which("nm") is None, reason="needs binutils' nm")
def test_libnvfp4_exports_the_c_abi_only():
    libs = _installed(os.path.join("lib", "libnvfp4.so*"))
    assert libs, "libnvfp4.so not found beside the extension"
    names = _exports(libs[0])
    assert "nvfp4_gemm" in names and "nvfp4_last_error" in names
    assert [n for n in names if not n.startswith("nvfp4_")] == []


@pytest.mark.skipif(shutil.which("nm") is None, reason="needs binutils' nm")
def test_extensions_export_their_init_only():
    exts = _installed("_nvfp4_*.so")
    assert exts
    for ext in exts:
        names = _exports(ext)
        assert len(names) == 1 and names[0].startswith("PyInit__nvfp4_"), (ext, names[:10])
