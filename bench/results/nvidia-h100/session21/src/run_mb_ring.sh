#!/bin/bash
# Session 21: the microbenchmark's loops at locked base clocks (ncu): the kernel-exact consumer step
# (5-stage run-time ring bookkeeping, with / without the ring barriers) beside rs128_decode_promo and ss256.
set -u
OUT=${OUT:-/tmp/out}
nvidia-smi --query-gpu=name --format=csv,noheader
nvcc -gencode arch=compute_90a,code=sm_90a -O3 -std=c++17 .scratch/next21/mb/wgmma_energy.cu -o /tmp/mb 2>&1 | grep -v C7519 | tail -2
for rep in 1 2; do
for n in ss256 rs128_decode_promo rs128_ring5 rs128_ring5_bar rs128_ring5_bar1 ${EXTRA:-}; do
  r=$(case $n in ss*) echo k_ss;; rs128_ring*) echo k_ring;; *) echo k_rs;; esac)
  timeout 60 ncu --clock-control base -k regex:$r --launch-count 1 \
    --metrics gpu__time_duration.sum,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,sm__cycles_elapsed.avg.per_second,smsp__inst_executed.sum \
    /tmp/mb --kernel $n --seconds 0.3 --launch-ms 5 --gap 0 2>&1 | grep -E "duration|hmma|per_second|inst_exec|ERR" | awk -v n=$n -v r=$rep '{print "mb", r, n, $1, $NF}'
done; done
