#!/bin/bash
# Session 21: k_real without / with the epilogue (modes 0 / 3; 4 = epilogue behind a noinline call),
# library decode (ptxas' IMAD.SHL for most left shifts) against the decode's shifts forced to SHF (shf.patch).
set -u
N="nvcc -DNVFP4_BUILDING_LIBRARY -Icpp/include -Icpp/src -isystem extern/cutlass/include -gencode arch=compute_90a,code=sm_90a -O3 -std=c++17 --expt-relaxed-constexpr -Xcudafe=--diag_suppress=177 -lineinfo"
$N .scratch/s21/mb_real.cu -o /tmp/mb_imad 2>&1 | grep -v C7519 | head -3
git apply .scratch/s21/shf.patch && $N .scratch/s21/mb_real.cu -o /tmp/mb_shf 2>&1 | grep -v C7519 | head -3; git checkout cpp/src/sm90/collective/fp4_decode.cuh
M=gpu__time_duration.sum,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active
for rep in 1 2; do for b in imad shf; do for args in "1024 128 0" "1024 128 3" "1024 128 4"; do
  timeout 60 ncu --clock-control base -k regex:k_real --launch-skip 1 --launch-count 1 --metrics $M /tmp/mb_$b $args 2>&1 | grep -E "duration|hmma|ERR" | awk -v a="$args" -v b=$b '{print b, a, $1, $NF}'
done; done; done
for b in imad shf; do /tmp/mb_$b 1024 0 3 | tail -1 | sed "s/^/free clocks $b: /"; done
