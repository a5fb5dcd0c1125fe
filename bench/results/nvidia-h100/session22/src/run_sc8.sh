#!/bin/bash
# PREPARED IN SESSION 22, NOT RUN. Issue 22: the decode kernel with half-size stages (8 chunks = 256 K per stage,
# 8 lanes per copied row: 2.3 KB per stage, so 3 eight-warp CTAs fit on an SM at NT8 = 1) against HEAD (16 chunks),
# with the model's picks and forced 3-per-SM shapes (NVFP4_DECODE_FORCE="wt,kc", a scratch hook in sc8.patch; the
# dual decode route is off in the patch: its plan would need the 16-chunk geometry). SASS checked in session 22:
# 0 spills, NT8 = 1 / 2 / 3 / 4 at 79-93 / 109-110 / 121-123 registers. Graph / eager with cuBLAS; decode tests on
# the patch. ~5 min.
#   run(command="bash .scratch/next23/run_sc8.sh", carry=[".scratch/next23", "extern/cutlass"], kind="nvidia-h100-x1")
set -u
export OUT=${OUT:-/tmp/out} PYTHONUNBUFFERED=1 CMAKE_BUILD_PARALLEL_LEVEL=16 NVFP4_CUDA_ARCHS=90a
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
touch cpp/src/sm90/gemv/decode_plan.hpp cpp/src/sm90/gemv/decode_kernel.cuh  # (the build dir may hold newer objects)
SH=gemm:2x7168x7168,gemm:4x7168x7168,gemm:8x7168x7168,gemm:9x7168x7168,gemm:16x7168x7168,gemm:17x7168x7168,gemm:4x14336x4096,gemm:16x14336x4096,gemm:4x4096x14336,gemm:16x4096x14336
build() { python3 -m pip install --no-build-isolation --no-deps -e . > $OUT/build_$1.log 2>&1 || { tail $OUT/build_$1.log; exit 1; }; echo "== $1 built t=$(el)"; }
b() {  # label, shapes, force
  NVFP4_DECODE_FORCE=$3 timeout 100 python3 -m nvfp4 bench --quiet --reps 10 --shapes $2 > $OUT/b_$1.txt 2>&1
  grep -E "^(gemm|dual)" $OUT/b_$1.txt | grep -E "nvfp4  |cuBLAS bf16" | cut -c1-110 | sed "s/^/[$1] /"
}
build head
b head $SH ""
git apply .scratch/next23/sc8.patch || exit 1
build sc8
b sc8 $SH ""
b sc8_8_6 gemm:4x7168x7168,gemm:16x7168x7168,gemm:4x14336x4096 8,6
b sc8_6_4 gemm:4x7168x7168,gemm:16x7168x7168 6,4
b sc8_8_4 gemm:4x7168x7168,gemm:4x14336x4096 8,4
timeout 200 python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_gpu_decode.py tests/test_gpu_packed_decode.py \
  > $OUT/tests_sc8.log 2>&1; echo "sc8 tests rc $? t=$(el)"; tail -1 $OUT/tests_sc8.log; grep -E "^FAILED" $OUT/tests_sc8.log | head -5
git apply -R .scratch/next23/sc8.patch
echo "t=$(el)"
