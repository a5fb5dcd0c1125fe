"""tools/check_wgmma_sass.py: the register-hazard check of asynchronous wgmma in SASS, no
spills in the loops that issue wgmma, and the weight decode's left shifts split between the
ALU and FMA pipes in those loops (collective/fp4_decode.cuh; bench/NOTES.md session 21).

CPU only: synthetic SASS the checker must pass or flag, then every HGMMA kernel of the built
library (when it holds sm_90a code and cuobjdump is on the PATH), which must be clean: the
main loops' correctness rests on ptxas never writing a fragment or accumulator register
before the wgmma.wait_group that retires its last reader (collective/mainloop_rs.cuh,
mainloop_rs_predecoded.cuh).
"""

import os
import shutil
import subprocess
import sys

import pytest
from _util import library_path

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tools"))
import check_wgmma_sass as cws  # noqa: E402


def _sass(*lines):
    body = "\n".join(f"        /*{16 * i:04x}*/                   {t} ;" for i, t in enumerate(lines))
    return f"\n\tFunction : k\n{body}\n"


def _hazards(*lines):
    (name, insns), = list(cws.functions(_sass(*lines)))
    assert name == "k"
    return cws.check(insns)


RS = "HGMMA.64x128x16.F32 R24, R100, gdesc[UR4], R24"


def test_clean_group_passes():
    n, hz = _hazards("IMAD.MOV.U32 R100, RZ, RZ, R2", "WARPGROUP.ARRIVE", RS, RS + ", gsb0",
                     "WARPGROUP.DEPBAR.LE gsb0, 0x0", "IMAD.MOV.U32 R100, RZ, RZ, R3", "FADD R5, R24, R6", "EXIT")
    assert n == 2 and hz == []


def test_a_register_written_in_flight():
    _, hz = _hazards("WARPGROUP.ARRIVE", RS + ", gsb0", "IMAD.MOV.U32 R101, RZ, RZ, R3",
                     "WARPGROUP.DEPBAR.LE gsb0, 0x0", "EXIT")
    assert [h[2] for h in hz] == ["writes an A register of a group in flight"]


def test_wait_that_leaves_the_reader_pending():
    # two groups, wait_group 1: the first group (A = R100..R103) is done, the second (R104..) is not
    _, ok = _hazards("WARPGROUP.ARRIVE", RS + ", gsb0", "HGMMA.64x128x16.F32 R24, R104, gdesc[UR4], R24, gsb0",
                     "WARPGROUP.DEPBAR.LE gsb0, 0x1", "IMAD.MOV.U32 R100, RZ, RZ, R3", "WARPGROUP.DEPBAR.LE gsb0, 0x0",
                     "EXIT")
    _, bad = _hazards("WARPGROUP.ARRIVE", RS + ", gsb0", "HGMMA.64x128x16.F32 R24, R104, gdesc[UR4], R24, gsb0",
                      "WARPGROUP.DEPBAR.LE gsb0, 0x1", "IMAD.MOV.U32 R105, RZ, RZ, R3",
                      "WARPGROUP.DEPBAR.LE gsb0, 0x0", "EXIT")
    assert ok == [] and [h[2] for h in bad] == ["writes an A register of a group in flight"]


def test_accumulator_read_in_flight():
    _, hz = _hazards("WARPGROUP.ARRIVE", RS + ", gsb0", "FADD R5, R30, R6", "WARPGROUP.DEPBAR.LE gsb0, 0x0", "EXIT")
    assert [h[2] for h in hz] == ["reads the accumulator while a group is in flight"]


def test_missing_fence_after_a_fragment_write():
    _, hz = _hazards("WARPGROUP.ARRIVE", "IMAD.MOV.U32 R102, RZ, RZ, R3", RS + ", gsb0",
                     "WARPGROUP.DEPBAR.LE gsb0, 0x0", "EXIT")
    assert [h[2] for h in hz] == ["A registers written since the last WARPGROUP.ARRIVE"]


def test_hazard_on_one_path_only():
    # a predicated branch around the wait: the path that skips it writes R100 in flight
    _, hz = _hazards("WARPGROUP.ARRIVE", RS + ", gsb0", "@P0 BRA 0x40", "WARPGROUP.DEPBAR.LE gsb0, 0x0",
                     "IMAD.MOV.U32 R100, RZ, RZ, R3", "WARPGROUP.DEPBAR.LE gsb0, 0x0", "EXIT")
    assert [h[0] for h in hz] == [0x40]


@pytest.mark.skipif(shutil.which("cuobjdump") is None, reason="needs cuobjdump (CUDA toolkit)")
def test_library_wgmma_kernels_clean():
    try:
        lib = library_path()
    except (subprocess.CalledProcessError, OSError):
        lib = None
    if lib is None or not os.path.exists(lib):
        pytest.skip("libnvfp4.so not found (python -m nvfp4 --cmake-dir)")
    checked, failed = 0, []
    for name, insns in cws.functions(cws.sass_of(lib)):
        n, hazards = cws.check(insns)
        if n:
            checked += 1
            if hazards:
                failed.append((name, hazards[:3]))
    if checked == 0:
        pytest.skip("the library holds no sm_90a wgmma kernel (NVFP4_CUDA_ARCHS without 90a)")
    assert checked >= 10, f"only {checked} HGMMA kernels found"
    assert failed == []


def _spills(*lines):
    (_, insns), = list(cws.functions(_sass(*lines)))
    return [h[2] for h in cws.hot_loop_spills(insns)]


def test_spill_in_the_hgmma_loop():
    loop = ["WARPGROUP.ARRIVE", RS + ", gsb0", "WARPGROUP.DEPBAR.LE gsb0, 0x0"]
    # entry at 0x00; the loop body 0x10..0x50 branches back to 0x10
    assert _spills("IMAD.MOV.U32 R2, RZ, RZ, R3", *loop, "STL [R1], R2", "@P0 BRA 0x10", "EXIT") == \
        ["local memory in the HGMMA loop at 0x10"]
    assert _spills("STL [R1], R2", *loop, "@P0 BRA 0x10", "LDL R2, [R1]", "EXIT") == []
    # an outer loop (0x00..0x60) around the HGMMA loop (0x10..0x40): its spills are not in the hot loop
    assert _spills("STL [R1], R2", *loop, "@P0 BRA 0x10", "LDL R2, [R1]", "@P1 BRA 0x0", "EXIT") == []


def _split(*body):
    (_, insns), = list(cws.functions(_sass("IMAD.MOV.U32 R2, RZ, RZ, R3", "WARPGROUP.ARRIVE", RS + ", gsb0",
                                           *body, "WARPGROUP.DEPBAR.LE gsb0, 0x0", "@P0 BRA 0x10", "EXIT")))
    return [h[2] for h in cws.decode_shift_split(insns)]


def test_decode_shifts_on_one_pipe():
    # the loop (0x10..) decodes (HMUL2); its four left shifts all IMAD.SHL (FMA pipe): flagged
    imad = ["IMAD.SHL.U32 R10, R4, 0x1000, RZ", "IMAD.SHL.U32 R11, R4, 0x200, RZ", "IMAD.SHL.U32 R12, R5, 0x100, RZ",
            "IMAD.SHL.U32 R13, R5, 0x20, RZ", "HMUL2 R14, R10, R6"]
    assert _split(*imad) == ["decode shifts lean to one pipe in the HGMMA loop at 0x10: 0 SHF.L, 4 IMAD.SHL"]
    # two on each pipe (fp4_decode.cuh's split): clean; no HMUL2 in the loop: not a decode loop
    split = ["SHF.L.U32.HI R10, RZ, 0xc, R4", "IMAD.SHL.U32 R11, R4, 0x200, RZ", "SHF.L.U32.HI R12, RZ, 0x8, R5",
             "IMAD.SHL.U32 R13, R5, 0x20, RZ", "HMUL2 R14, R10, R6"]
    assert _split(*split) == []
    assert _split(*imad[:4]) == []
    # the byte-wise decode (a multiply-high in the loop, fp4_decode.cuh decode_word_scaled): not checked
    assert _split(*imad, "IMAD.HI.U32 R15, R4, 0x20000000, RZ") == []
