#!/bin/bash
# Session 21: the decode's left shifts forced to SHF (shf.patch) in the library: locked ncu, graph/eager bench
# with cuBLAS, the GEMM GPU tests against float64.
set -u
export OUT=${OUT:-/tmp/out} PYTHONUNBUFFERED=1 CMAKE_BUILD_PARALLEL_LEVEL=16 NVFP4_CUDA_ARCHS=90a
M=gpu__time_duration.sum,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active
SH=gemm:4096x4096x4096,gemm:2048x7168x7168,gemm:512x7168x7168,gemm:128x4096x7168,dual:512x4096x7168,dual:256x4096x7168
one() {
  python3 -m pip install --no-build-isolation --no-deps -e . > $OUT/build_$1.log 2>&1 || { tail $OUT/build_$1.log; exit 1; }
  for spec in 1024x2048x65536 4096x4096x4096 2048x7168x7168; do
    timeout 40 ncu --clock-control base -k regex:"gemm_(persistent|predecoded|streamk)" --launch-skip 2 --launch-count 1 --metrics $M \
      python3 .scratch/next21/ncu_mainloop.py $spec 2>&1 | grep -E "duration|hmma|ERR" | awk -v v=$1 -v s=$spec '{print v, s, $1, $NF}'; done
  timeout 90 python3 -m nvfp4 bench --quiet --reps 10 --shapes $SH > $OUT/bench_$1.txt 2>&1
  grep -E "^(gemm|dual)" $OUT/bench_$1.txt | grep -E "nvfp4  |cuBLAS bf16" | cut -c1-105 | sed "s/^/$1 /"
}
one head
git apply .scratch/s21/shf.patch || exit 1
one shf
timeout 240 python3 -m pytest -q -x tests/test_gpu_gemm.py tests/test_gpu_dual_fused.py 2>&1 | tail -3
git checkout cpp/src/sm90/collective/fp4_decode.cuh
