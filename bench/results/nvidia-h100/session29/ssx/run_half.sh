#!/bin/bash
# Session 29 call 11: the half-decode probes of ssx_energy.cu (ssx192_h, ssx192_q) beside ssx192 and ss192_promo.
set -u
OUT=${OUT:-/tmp/out}
D=bench/results/nvidia-h100/session29/ssx
# ssx_energy.cu = session 21's wgmma_energy.cu + the k_ssx kernels, kept as a copy patch (git apply writes it)
git apply $D/ssx_energy.patch || exit 1
nvcc -gencode arch=compute_90a,code=sm_90a -O3 -std=c++17 -Xptxas -v $D/ssx_energy.cu -o /tmp/ssx > $OUT/ptxas.txt 2>&1
rc=$?; rm -f $D/ssx_energy.cu; [ $rc = 0 ] || { tail $OUT/ptxas.txt; exit 1; }
grep -A2 "k_ssx" $OUT/ptxas.txt | grep -E "spill" | sort | uniq -c
for f in '_Z5k_ssxILi2ELi1EEv4Args' '_Z5k_ssxILi2ELi2EEv4Args'; do cuobjdump -sass -fun $f /tmp/ssx > $OUT/s.txt 2>&1; echo "$f HGMMA $(grep -c HGMMA $OUT/s.txt) STS.128 $(grep -c STS.128 $OUT/s.txt) HMUL2 $(grep -c HMUL2 $OUT/s.txt)"; done
timeout 60 /tmp/ssx --kernel ss192_promo,ssx192,ssx192_h,ssx192_q --seconds 2 --data fp4 --gap 0.5 2>&1 | grep -v "^#"
for rep in 1 2; do for n in ss192_promo ssx192 ssx192_h ssx192_q; do
  timeout 60 ncu --clock-control base -k regex:k_ssx --launch-count 1 \
    --metrics sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,l1tex__data_pipe_lsu_wavefronts_mem_shared.sum.pct_of_peak_sustained_elapsed \
    /tmp/ssx --kernel $n --seconds 0.3 --launch-ms 5 --gap 0 --data fp4 2>&1 | grep -E "hmma|wavefronts|ERR" | awk -v n=$n -v r=$rep '{print "ncu", r, n, $1, $NF}'
done; done
