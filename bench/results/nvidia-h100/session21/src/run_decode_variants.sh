#!/bin/bash
# PREPARED IN SESSION 21, NOT RUN. The decode split (main) against two more pipe balances in the harness
# (k_real without / with the epilogue, locked; free-clock TFLOP/s): p3mulhi (pair 3's right shift on the FMA pipe
# too), inverse (signs on FMA, magnitudes on ALU). ~50 s.
#   run(command="bash .scratch/next22/run_decode_variants.sh", carry=[".scratch/s21", ".scratch/next22", "extern/cutlass"])
set -u
N="nvcc -DNVFP4_BUILDING_LIBRARY -Icpp/include -Icpp/src -isystem extern/cutlass/include -gencode arch=compute_90a,code=sm_90a -O3 -std=c++17 --expt-relaxed-constexpr -Xcudafe=--diag_suppress=177 -lineinfo"
$N .scratch/s21/mb_real.cu -o /tmp/mb_head 2>&1 | grep -v C7519 | head -3
for v in p3mulhi inverse; do git apply .scratch/next22/$v.patch && $N .scratch/s21/mb_real.cu -o /tmp/mb_$v 2>&1 | grep -v C7519 | head -3; git checkout -q cpp/src/sm90/collective/fp4_decode.cuh; done
M=gpu__time_duration.sum,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active
for rep in 1 2; do for b in head p3mulhi inverse; do for args in "1024 128 0" "1024 128 3"; do
  timeout 60 ncu --clock-control base -k regex:k_real --launch-skip 1 --launch-count 1 --metrics $M /tmp/mb_$b $args 2>&1 | grep -E "hmma|ERR" | awk -v a="$args" -v b=$b '{print b, a, $1, $NF}'
done; done; done
for rep in 1 2; do for b in head p3mulhi inverse; do /tmp/mb_$b 1024 0 3 | tail -1 | sed "s/^/free $b: /"; done; done
