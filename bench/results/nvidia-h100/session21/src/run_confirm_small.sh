#!/bin/bash
# Session 21: third round, small-M shapes (the gpu-mode GEMM shapes), HEAD vs the new decode, 20 reps.
# graph / eager bench with cuBLAS (no ncu), then the patch again; plus the memcheck smoke with the patch.
set -u
export OUT=${OUT:-/tmp/out} PYTHONUNBUFFERED=1 CMAKE_BUILD_PARALLEL_LEVEL=16 NVFP4_CUDA_ARCHS=90a
SH=gemm:128x4096x7168,gemm:128x7168x16384,gemm:128x7168x2048,gemm:256x7168x7168,gemm:64x7168x7168,dual:256x4096x7168,dual:128x4096x7168
b() { python3 -m pip install --no-build-isolation --no-deps -e . > $OUT/build_$1.log 2>&1 || { tail $OUT/build_$1.log; exit 1; }
  timeout 120 python3 -m nvfp4 bench --quiet --reps 20 --shapes $SH > $OUT/bench_$1.txt 2>&1
  grep -E "^(gemm|dual)" $OUT/bench_$1.txt | grep -E "nvfp4  |cuBLAS bf16" | cut -c1-105 | sed "s/^/$1 /"; }
git checkout -q cpp/src/sm90/collective/fp4_decode.cuh   # the device copy has the working tree's change: HEAD first
b head
git apply .scratch/s21/final.patch || exit 1
b new


