"""The sm100a (Blackwell) backend is compiled and inspected, never run: no Blackwell GPU
is available to the project. These tests check what can be checked without one.

1. SASS of the built libnvfp4 (cuobjdump + nvdisasm, from the CUDA toolkit or the
   PyPI wheels nvidia-cuda-cuobjdump / nvidia-cuda-nvdisasm): each sm100a kernel
   exists once and contains the instructions of the intended path --
     UTCOMMA.4X     tcgen05.mma kind::mxf4nvf4 block_scale scale_vec::4X: the native
                    FP4 MMA with one e4m3 scale per 16 elements (.2CTA: 2-SM MMA)
     UTCCP          tcgen05.cp: scale factors copied from shared into tensor memory
     LDTM           tcgen05.ld: accumulators read from tensor memory in the epilogue
     UTMALDG/STG    TMA loads of operands and scales / TMA store of the output
   and for the GEMV the sm100 conversions F2FP.F16.E2M1.UNPACK_B (cvt.rn.f16x2.e2m1x2)
   and F2FP.F16.E4M3.UNPACK_B (cvt.rn.f16x2.e4m3x2), 16-byte loads, no spills.
2. The host-side argument building (tests/sm100_host/host_test.cu, compiled with
   nvcc as host code): CUTLASS's scale-factor layout equals nvfp4's blocked layout,
   the scale preparation and workspace carving are exact.

Both skip cleanly when the library was built without 100a or the tools are missing.
"""

from __future__ import annotations

import glob
import os
import re
import shutil
import subprocess
import sys
import sysconfig

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

# ---------------------------------------------------------------------------
# Locating the library and the tools
# ---------------------------------------------------------------------------


def _library():
    """(path of libnvfp4.so, build archs); NVFP4_LIBRARY overrides the installed one."""
    try:
        import nvfp4
    except ImportError as e:  # pragma: no cover
        pytest.skip(f"nvfp4 is not importable: {e}")
    archs = nvfp4.info()["build_archs"]
    path = os.environ.get("NVFP4_LIBRARY")
    if path:  # a library other than the imported one: its own cubins tell its archs
        archs = ["100a"]
    else:
        libdir = os.path.join(os.path.dirname(nvfp4.__file__), "lib")
        cands = sorted(glob.glob(os.path.join(libdir, "libnvfp4.so*")), key=len)
        if not cands:
            pytest.skip(f"no libnvfp4.so under {libdir}")
        path = cands[0]
    return os.path.realpath(path), archs


def _tool_dirs():
    dirs = []
    for var in ("CUDA_HOME", "CUDA_PATH"):
        if os.environ.get(var):
            dirs.append(os.path.join(os.environ[var], "bin"))
    dirs.append("/usr/local/cuda/bin")
    roots = list(sys.path) + [sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]]
    for root in roots:
        # PyPI wheels: nvidia/cu13/bin (CUDA 13), nvidia/cuda_<tool>/bin (CUDA 12)
        dirs += glob.glob(os.path.join(root, "nvidia", "cu1*", "bin"))
        dirs += glob.glob(os.path.join(root, "nvidia", "cuda_cuobjdump", "bin"))
        dirs += glob.glob(os.path.join(root, "nvidia", "cuda_nvdisasm", "bin"))
    return dirs


def _find_tool(name):
    found = shutil.which(name)
    if found:
        return found
    for d in _tool_dirs():
        cand = os.path.join(d, name)
        if os.path.isfile(cand):
            if not os.access(cand, os.X_OK):
                try:
                    os.chmod(cand, 0o755)
                except OSError:
                    continue
            return cand
    return None


@pytest.fixture(scope="module")
def sm100_sass():
    """{kernel name: SASS text} for the sm_100a functions of libnvfp4."""
    lib, archs = _library()
    if "100a" not in archs:
        pytest.skip(f"libnvfp4 was built without 100a (archs {';'.join(archs)})")
    cuobjdump, nvdisasm = _find_tool("cuobjdump"), _find_tool("nvdisasm")
    if not cuobjdump or not nvdisasm:
        pytest.skip("cuobjdump/nvdisasm not found: install the CUDA toolkit or "
                    "`pip install nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm`")
    env = dict(os.environ)
    env["PATH"] = os.path.dirname(nvdisasm) + os.pathsep + env.get("PATH", "")
    env["NVDISASM_PATH"] = os.path.dirname(nvdisasm)
    r = subprocess.run([cuobjdump, "-sass", "-arch", "sm_100a", lib], capture_output=True, text=True, env=env,
                       timeout=600)
    assert r.returncode == 0, f"cuobjdump failed:\n{r.stderr[-2000:]}"
    funcs = _split_functions(r.stdout)
    if not any("5sm100" in n for n in funcs):
        pytest.skip(f"{lib} has no sm100a backend kernels")
    return funcs


def _split_functions(text):
    funcs, name, arch, body = {}, None, None, []

    def flush():
        if name is not None and arch == "sm_100a":
            funcs[name] = funcs.get(name, "") + "\n".join(body)

    for line in text.splitlines():
        m = re.match(r"\s*code for (sm_\w+)", line) or re.match(r"\s*arch = (sm_\w+)", line)
        if m:
            flush()
            name, body, arch = None, [], m.group(1)
            continue
        m = re.match(r"\s*Function : (\S+)", line)
        if m:
            flush()
            name, body = m.group(1), []
            continue
        if name is not None:
            body.append(line)
    flush()
    return funcs


# ---------------------------------------------------------------------------
# The kernels and what their SASS must show
# ---------------------------------------------------------------------------
# Mangled-name markers of each sm100a kernel (one instantiation each).
KERNELS = {
    "gemm_1sm": lambda n: "SM100_MMA_MXF4_SS" in n and "StreamKScheduler" in n and "GroupProblemShape" not in n,
    "gemm_2sm": lambda n: "SM100_MMA_MXF4_2x1SM_SS" in n and "GroupProblemShape" not in n,
    # our kernel (dual_kernel.cuh) built from CUTLASS's 1-SM collective types
    "dual_gemm": lambda n: "5sm100" in n and "dual_gemm_kernel" in n,
    "grouped_gemm": lambda n: "GroupProblemShape" in n and "SM100_MMA_MXF4" in n,
    "gemv": lambda n: "5sm100" in n and "gemv_kernel" in n,
}

# Tensor-core kernels: native block-scaled FP4 MMA (scale_vec::4X = a scale per 16
# elements), scales through tensor memory, TMEM accumulators, TMA in and out.
TC_REQUIRED = {
    "block-scaled FP4 MMA, 16-element scale blocks": r"\bUTCOMMA(\.2CTA)?\.4X\b",
    "scale factors copied into tensor memory": r"\bUTCCP\b",
    "accumulators loaded from tensor memory": r"\bLDTM\b",
    "TMA loads": r"\bUTMALDG\b",
    "TMA store of the output": r"\bUTMASTG\b",
}
EXTRA_REQUIRED = {
    "gemm_2sm": {"2-SM (cta_group::2) MMA": r"\bUTCOMMA\.2CTA\.4X\b",
                 "2-SM scale copies": r"\bUTCCP\.\S*2CTA"},
    "gemm_1sm": {"persistent tile scheduler (CLC)": r"\bUGETNEXTWORKID\b"},
}
GEMV_REQUIRED = {
    "e2m1x2 -> f16x2 conversion (cvt.rn.f16x2.e2m1x2)": r"\bF2FP\.F16\.E2M1\.UNPACK_B\b",
    "e4m3x2 -> f16x2 conversion (cvt.rn.f16x2.e4m3x2)": r"\bF2FP\.F16\.E4M3\.UNPACK_B\b",
    "16-byte loads": r"\bLDG\.E\.128\b",
    "fp16x2 FMA": r"\bHFMA2\b",
}


def _instructions(sass):
    """Opcodes with modifiers, e.g. 'UTCOMMA.4X', one per instruction line."""
    return re.findall(r"/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_]*(?:\.[A-Za-z0-9_]+)*)", sass)


def _kernel(sm100_sass, which):
    names = [n for n in sm100_sass if KERNELS[which](n)]
    assert len(names) == 1, f"expected exactly one sm100a {which} kernel, found {len(names)}: {[n[:80] for n in names]}"
    return sm100_sass[names[0]]


@pytest.mark.parametrize("which", ["gemm_1sm", "gemm_2sm", "dual_gemm", "grouped_gemm"])
def test_tensor_core_kernel_sass(sm100_sass, which):
    sass = _kernel(sm100_sass, which)
    ops = " ".join(_instructions(sass))
    required = dict(TC_REQUIRED, **EXTRA_REQUIRED.get(which, {}))
    missing = [what for what, pattern in required.items() if not re.search(pattern, ops)]
    assert not missing, f"{which}: SASS lacks {missing}"
    # no emulation: nothing of the fp16 (UTCHMMA) or fp8 (UTCQMMA) MMA kinds
    assert not re.search(r"\bUTC[HQ]MMA\b", ops), f"{which}: unexpected non-FP4 MMA kind"


def test_dual_gemm_two_mmas_per_k_block(sm100_sass):
    """One A tile, two accumulators: the dual kernel uses the 1-SM GEMM's MMA tile
    (128x128x256: 4 k-blocks of 64 FP4 elements per stage) and must issue exactly twice
    its tcgen05.mma count -- one MMA into each accumulator per k-block -- while loading
    A once (3 TMA loads of data: A, B1, B2; 3 of scales: SFA, SFB1, SFB2)."""
    dual = _instructions(_kernel(sm100_sass, "dual_gemm"))
    stock = _instructions(_kernel(sm100_sass, "gemm_1sm"))
    n_dual = sum(op.startswith("UTCOMMA") for op in dual)
    n_stock = sum(op.startswith("UTCOMMA") for op in stock)
    assert n_stock >= 4, f"gemm_1sm: {n_stock} UTCOMMA"
    assert n_dual == 2 * n_stock and n_dual >= 8, f"dual: {n_dual} UTCOMMA, 1-SM GEMM: {n_stock}"
    # scale factors of A, B1 and B2 copied to tensor memory every stage
    n_utccp = sum(op.startswith("UTCCP") for op in dual)
    assert n_utccp >= 3 and n_utccp % 3 == 0, f"dual: {n_utccp} UTCCP"
    n_tma = sum(op.startswith("UTMALDG") for op in dual)
    assert n_tma == 6, f"dual: {n_tma} TMA loads (A, B1, B2, SFA, SFB1, SFB2 once each per stage)"
    assert not any(op in ("LDL", "STL") or op.startswith(("LDL.", "STL.")) for op in dual), "dual: register spills"


def test_gemv_sass(sm100_sass):
    sass = _kernels_matching(sm100_sass, "gemv")
    assert len(sass) == 4, f"expected 4 gemv instantiations (linear/blocked x 1/4 rows), got {len(sass)}"
    for name, text in sass.items():
        ops = " ".join(_instructions(text))
        missing = [what for what, pattern in GEMV_REQUIRED.items() if not re.search(pattern, ops)]
        assert not missing, f"{name}: SASS lacks {missing}"
        assert not re.search(r"\b(LDL|STL)\b", ops), f"{name}: register spills"
        assert not re.search(r"\bUTC\w*MMA\b", ops), f"{name}: the GEMV runs on CUDA cores"


def _kernels_matching(sm100_sass, which):
    return {n: s for n, s in sm100_sass.items() if KERNELS[which](n)}


def test_prep_kernels_present_and_spill_free(sm100_sass):
    """The small kernels that build the CUTLASS arguments in the workspace."""
    for marker in ("swizzle_scales_kernel", "fill_list_tables", "fill_packed_tables", "swizzle_packed_sfa"):
        names = [n for n in sm100_sass if marker in n and "5sm100" in n]
        assert len(names) == 1, f"{marker}: {len(names)} sm100a instantiations"
        ops = " ".join(_instructions(sm100_sass[names[0]]))
        assert not re.search(r"\b(LDL|STL)\b", ops), f"{marker}: register spills"


def test_instantiation_count(sm100_sass):
    """Compile time stays bounded: exactly 3 CUTLASS GEMM kernels (1-SM, 2-SM, grouped)
    and one dual kernel in the sm100a backend."""
    cutlass = [n for n in sm100_sass if "SM100_MMA_MXF4" in n]
    assert len(cutlass) == 3, [n[:100] for n in cutlass]
    dual = [n for n in sm100_sass if KERNELS["dual_gemm"](n)]
    assert len(dual) == 1, dual


# ---------------------------------------------------------------------------
# Host-side argument building (C++, CPU only)
# ---------------------------------------------------------------------------


def _cutlass_include():
    cands = []
    if os.environ.get("NVFP4_CUTLASS_DIR"):
        cands += [os.path.join(os.environ["NVFP4_CUTLASS_DIR"], "include"), os.environ["NVFP4_CUTLASS_DIR"]]
    cands.append(os.path.join(ROOT, "extern", "cutlass", "include"))
    try:
        import cutlass_library  # the nvidia-cutlass wheel, if installed

        cands.append(os.path.join(os.path.dirname(cutlass_library.__file__), "source", "include"))
    except ImportError:
        pass
    # where the CMake build unpacks the nvidia-cutlass wheel (scikit-build-core build dir)
    cands += glob.glob(os.path.join(ROOT, "build", "*", "_cutlass_wheel", "unpacked", "cutlass_library", "source",
                                    "include"))
    for c in cands:
        if os.path.isfile(os.path.join(c, "cutlass", "cutlass.h")) and os.path.isfile(
                os.path.join(c, "cutlass", "detail", "sm100_blockscaled_layout.hpp")):
            return c
    return None


def test_sm100_host_argument_building(tmp_path):
    nvcc = _find_tool("nvcc")
    if nvcc is None:
        pytest.skip("nvcc not found")
    inc = _cutlass_include()
    if inc is None:
        pytest.skip("CUTLASS 4.2 headers not found (extern/cutlass, NVFP4_CUTLASS_DIR, nvidia-cutlass wheel)")
    exe = str(tmp_path / "sm100_host_test")
    src = os.path.join(HERE, "sm100_host", "host_test.cu")
    cmd = [nvcc, "-std=c++17", "-O1", "-x", "cu", src, "-o", exe,
           "-I", os.path.join(ROOT, "cpp", "src"), "-I", os.path.join(ROOT, "cpp", "include"), "-isystem", inc]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, f"host test failed to compile:\n{r.stdout[-4000:]}\n{r.stderr[-4000:]}"
    r = subprocess.run([exe], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and re.search(r"^\d+ passed, 0 failed$", r.stdout, re.M), r.stdout[-4000:]
