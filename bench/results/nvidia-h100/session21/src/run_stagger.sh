#!/bin/bash
# Session 21 diagnostic: the second consumer warpgroup delayed by N cycles at its start (phase of the
# two warpgroups), tile / persistent kernels at locked clocks.
set -u
export OUT=${OUT:-/tmp/out} PYTHONUNBUFFERED=1 CMAKE_BUILD_PARALLEL_LEVEL=16 NVFP4_CUDA_ARCHS=90a
F=cpp/src/sm90/collective/mainloop_rs_predecoded.cuh
M=gpu__time_duration.sum,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active
git apply .scratch/s21/stagger.patch || exit 1
for n in 0 600 1500; do
  sed -i "s/constexpr long long kStaggerCycles = [0-9]*;/constexpr long long kStaggerCycles = $n;/" $F
  python3 -m pip install --no-build-isolation --no-deps -e . > $OUT/build_$n.log 2>&1 || { tail $OUT/build_$n.log; exit 1; }
  for spec in 1024x2048x65536 4096x4096x4096; do
    timeout 60 ncu --clock-control base -k regex:"gemm_(persistent|predecoded|streamk)" --launch-skip 2 --launch-count 1 --metrics $M \
      python3 .scratch/next21/ncu_mainloop.py $spec 2>&1 | grep -E "duration|hmma|ERR" | awk -v s=$spec -v n=$n '{print "stagger", n, s, $1, $NF}'
  done
done
git checkout $F
