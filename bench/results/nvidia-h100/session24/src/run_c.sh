#!/bin/bash
set -u
export OUT=${OUT:-/tmp/out} PYTHONUNBUFFERED=1 CMAKE_BUILD_PARALLEL_LEVEL=16 NVFP4_CUDA_ARCHS=90a
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
SH=gemm:2x7168x7168,gemm:4x7168x7168,gemm:8x7168x7168,gemm:16x7168x7168,gemm:32x7168x7168,gemm:4x4096x14336,gemm:16x4096x14336,gemm:4x14336x4096,gemm:16x14336x4096,dual:4x4096x7168
build() { touch cpp/src/sm90/gemv/decode_kernel.cuh cpp/src/sm90/gemv/decode_mma.cuh; python3 -m pip install --no-build-isolation --no-deps -e . > $OUT/build_$1.log 2>&1 || { tail $OUT/build_$1.log; exit 1; }; echo "== $1 built t=$(el)"; }
b() {
  timeout 150 python3 -m nvfp4 bench --quiet --reps 10 --shapes $SH > $OUT/b_$1.txt 2>&1
  grep -E "^(gemm|dual|packed)" $OUT/b_$1.txt | grep -E "nvfp4  " | awk -v t=$1 '{print "["t"]", $1, $2, $3, $4, $7, $8, $12}' | cut -c1-100
}
git apply .scratch/s24/p/C_pairs.patch || exit 1
build C; b C
git apply -R .scratch/s24/p/C_pairs.patch
build head; b head
git apply .scratch/s24/p/C_pairs.patch; build C2; b C2; git apply -R .scratch/s24/p/C_pairs.patch
echo "t=$(el)"
