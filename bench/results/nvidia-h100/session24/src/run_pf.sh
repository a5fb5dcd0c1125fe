#!/bin/bash
# Session 24, issue 22: token-tile L2 prefetch before the weight stages (A), + paired token loads (B); HEAD before and after.
set -u
export OUT=${OUT:-/tmp/out} PYTHONUNBUFFERED=1 CMAKE_BUILD_PARALLEL_LEVEL=16 NVFP4_CUDA_ARCHS=90a
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
SH=gemm:2x7168x7168,gemm:4x7168x7168,gemm:8x7168x7168,gemm:16x7168x7168,gemm:32x7168x7168,gemm:4x4096x14336,gemm:16x4096x14336,gemm:32x4096x14336,gemm:4x14336x4096,gemm:16x14336x4096,gemm:32x14336x4096,gemm:16x4096x2048,dual:4x4096x7168,dual:16x4096x7168
SH=$SH,packed:1+0+1+1+1+1+2+2+0+0+2+0+0+0+0+0+0+1+0+0+0+0+1+0+0+1+0+0+0+1+1+0+0+0+1+0+0+0+1+0+0+2+0+0+0+1+0+0+2+0+2+3+0+0+0+1+0+0+0+0+0+0+3+0x2048x7168,packed:0+0+1+0+1+0+3+8+3+3+3+0+1+1+0+2+5+0+3+0+0+4+5+12+2+2+0+0+0+3+4+0+0+0+0+0+4+0+1+1+1+0+0+6+0+3+1+3+1+2+1+1+8+0+3+11+4+7+0+0+0+1+1+2x7168x2048
build() { touch cpp/src/sm90/gemv/decode_kernel.cuh cpp/src/sm90/gemv/decode_mma.cuh; python3 -m pip install --no-build-isolation --no-deps -e . > $OUT/build_$1.log 2>&1 || { tail $OUT/build_$1.log; exit 1; }; echo "== $1 built t=$(el)"; }
b() {
  timeout 150 python3 -m nvfp4 bench --quiet --reps 10 --shapes $SH > $OUT/b_$1.txt 2>&1
  grep -E "^(gemm|dual|packed)" $OUT/b_$1.txt | grep -E "nvfp4  |cuBLAS bf16|grouped_mm" | awk -v t=$1 '{print "["t"]", $1, $2, $3, $7, $8, $12}' | cut -c1-100
}
t() { timeout 240 python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_gpu_decode.py tests/test_gpu_packed_decode.py tests/test_gpu_dual_decode.py > $OUT/tests_$1.log 2>&1; echo "$1 tests rc $? t=$(el)"; tail -1 $OUT/tests_$1.log; grep -E "^FAILED" $OUT/tests_$1.log | head -5; }
build head; b head
git apply .scratch/s24/p/A_prefetch.patch || exit 1
build A; b A
git apply -R .scratch/s24/p/A_prefetch.patch; git apply .scratch/s24/p/B_prefetch_pairs.patch || exit 1
build B; b B; t B
git apply -R .scratch/s24/p/B_prefetch_pairs.patch
[ $(el) -lt 430 ] && { build head2; b head2; }
echo "t=$(el)"
