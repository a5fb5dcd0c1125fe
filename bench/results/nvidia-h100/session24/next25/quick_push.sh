#!/bin/bash
set -u
export OUT=${OUT:-/tmp/out} PYTHONUNBUFFERED=1 CMAKE_BUILD_PARALLEL_LEVEL=16 NVFP4_CUDA_ARCHS=90a
git apply .scratch/next25/push_reduce.patch || exit 1
python3 -m pip install --no-build-isolation --no-deps -e . > $OUT/build.log 2>&1 || { tail $OUT/build.log; exit 1; }
echo built
timeout 60 python3 -m nvfp4 bench --quiet --reps 10 --shapes gemm:4x7168x7168,gemm:16x7168x7168,gemm:32x7168x7168,gemm:4x4096x14336,gemm:32x4096x14336,gemm:32x14336x4096,dual:4x4096x7168 > $OUT/b_push.txt 2>&1
grep -E "^(gemm|dual)" $OUT/b_push.txt | grep "nvfp4  " | awk '{print $1, $2, $3, $4, $7, $8, $12, $13}'
git apply -R .scratch/next25/push_reduce.patch
