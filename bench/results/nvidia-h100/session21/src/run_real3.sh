#!/bin/bash
# Session 21: k_real with the kernel's epilogue compiled after the loop (mode 3) against without (mode 0).
set -u
OUT=${OUT:-/tmp/out}
nvcc -DNVFP4_BUILDING_LIBRARY -Icpp/include -Icpp/src -isystem extern/cutlass/include -gencode arch=compute_90a,code=sm_90a -O3 -std=c++17 --expt-relaxed-constexpr -Xcudafe=--diag_suppress=177 -lineinfo .scratch/s21/mb_real.cu -o /tmp/mb_real 2>&1 | grep -v C7519 | head -5
/tmp/mb_real 1024 0 3 | tail -1
M=gpu__time_duration.sum,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,sm__cycles_elapsed.avg.per_second
for rep in 1 2; do for args in "1024 128 0" "1024 128 3" "512 128 3"; do
  timeout 60 ncu --clock-control base -k regex:k_real --launch-skip 1 --launch-count 1 --metrics $M /tmp/mb_real $args 2>&1 | grep -E "duration|hmma|ERR" | awk -v a="$args" '{print "real", a, $1, $NF}'
done; done
