#!/bin/bash
# Session 21: second round, the committed-to-be decode (final.patch = the working tree's fp4_decode.cuh) against HEAD,
# graph / eager bench with cuBLAS (no ncu), then the patch again; plus the memcheck smoke with the patch.
set -u
export OUT=${OUT:-/tmp/out} PYTHONUNBUFFERED=1 CMAKE_BUILD_PARALLEL_LEVEL=16 NVFP4_CUDA_ARCHS=90a
SH=gemm:4096x4096x4096,gemm:2048x7168x7168,gemm:1024x7168x7168,gemm:512x7168x7168,gemm:2048x14336x4096,gemm:128x4096x7168,dual:512x4096x7168,dual:256x3072x4096
b() { python3 -m pip install --no-build-isolation --no-deps -e . > $OUT/build_$1.log 2>&1 || { tail $OUT/build_$1.log; exit 1; }
  timeout 120 python3 -m nvfp4 bench --quiet --reps 10 --shapes $SH > $OUT/bench_$1.txt 2>&1
  grep -E "^(gemm|dual)" $OUT/bench_$1.txt | grep -E "nvfp4  |cuBLAS bf16" | cut -c1-105 | sed "s/^/$1 /"; }
git checkout -q cpp/src/sm90/collective/fp4_decode.cuh   # the device copy has the working tree's change: HEAD first
b head
git apply .scratch/s21/final.patch || exit 1
b new
timeout 150 compute-sanitizer --tool memcheck --error-exitcode 9 python3 tools/sanitize_smoke.py > $OUT/san_memcheck.log 2>&1
echo "memcheck rc $?"; grep -E "ERROR SUMMARY" $OUT/san_memcheck.log | sort | uniq -c
