#!/bin/bash
# Session 21: the decode's shifts split between the ALU (sign, SHF) and FMA (magnitude, IMAD) pipes
# (mix.patch) in the library: HEAD vs mix, ncu locked + graph/eager bench with cuBLAS, then the patch's
# SASS check and GPU tests against float64.
set -u
export OUT=${OUT:-/tmp/out} PYTHONUNBUFFERED=1 CMAKE_BUILD_PARALLEL_LEVEL=16 NVFP4_CUDA_ARCHS=90a
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
M=gpu__time_duration.sum,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active
SH=gemm:4096x4096x4096,gemm:8192x7168x7168,gemm:2048x7168x7168,gemm:1024x7168x7168,gemm:512x7168x7168,gemm:256x7168x7168,gemm:2048x14336x4096,gemm:128x4096x7168,dual:512x4096x7168,dual:256x4096x7168,dual:256x3072x4096,dual:512x3072x7168
one() {
  python3 -m pip install --no-build-isolation --no-deps -e . > $OUT/build_$1.log 2>&1 || { tail $OUT/build_$1.log; exit 1; }
  echo "== $1 built t=$(el)"
  if [ "${NCU:-1}" = 1 ]; then for spec in 1024x2048x65536 4096x4096x4096 2048x7168x7168 512x7168x7168; do
    timeout 40 ncu --clock-control base -k regex:"gemm_(persistent|predecoded|streamk)" --launch-skip 2 --launch-count 1 --metrics $M \
      python3 .scratch/next21/ncu_mainloop.py $spec 2>&1 | grep -E "duration|hmma|ERR" | awk -v v=$1 -v s=$spec '{print v, s, $1, $NF}'; done; fi
  timeout 150 python3 -m nvfp4 bench --quiet --reps 10 --shapes $SH > $OUT/bench_$1.txt 2>&1
  grep -E "^(gemm|dual)" $OUT/bench_$1.txt | grep -E "nvfp4  |cuBLAS bf16" | cut -c1-105 | sed "s/^/$1 /"
}
one head
git apply .scratch/s21/mix.patch || exit 1
one mix
timeout 120 python3 -m pytest -q -p no:cacheprovider tests/test_sass_wgmma.py 2>&1 | tail -1
timeout 240 python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_gpu_gemm.py tests/test_gpu_dual_fused.py \
  tests/test_gpu_grouped_persistent.py tests/test_gpu_packed_tiled.py tests/test_gpu_grouped_gemm.py > $OUT/tests.log 2>&1
echo "tests rc $? t=$(el)"; tail -1 $OUT/tests.log; grep -E "^FAILED" $OUT/tests.log | head
git checkout cpp/src/sm90/collective/fp4_decode.cuh
