#!/bin/bash
# Session 29: is an SS loop with the weights decoded into shared memory by a transform warpgroup (192-token
# tile, promotion) as tensor-busy as the cuBLAS-like SS loop? ssx_energy.cu (session 21's harness + k_ssx).
# Free clocks (TFLOP/s, MHz, W, pJ/FLOP; --data fp4), then ncu at locked base clocks (tensor pipe active).
set -u
OUT=${OUT:-/tmp/out}
D=bench/results/nvidia-h100/session29/ssx
nvidia-smi --query-gpu=name --format=csv,noheader
# ssx_energy.cu = session 21's wgmma_energy.cu + the k_ssx kernels, kept as a copy patch (git apply writes it)
git apply $D/ssx_energy.patch || exit 1
nvcc -gencode arch=compute_90a,code=sm_90a -O3 -std=c++17 -Xptxas -v $D/ssx_energy.cu -o /tmp/ssx > $OUT/ptxas.txt 2>&1
rc=$?; rm -f $D/ssx_energy.cu; [ $rc = 0 ] || { tail $OUT/ptxas.txt; exit 1; }
grep -A2 "k_ssx" $OUT/ptxas.txt | grep -E "spill|Used" | sort | uniq -c
cuobjdump -sass -fun '_Z5k_ssxILi2EEv4Args' /tmp/ssx > $OUT/sass_ssx192.txt 2>&1
echo "ssx192 SASS: HGMMA $(grep -c HGMMA $OUT/sass_ssx192.txt), STS.128 $(grep -c 'STS.128' $OUT/sass_ssx192.txt), HMUL2 $(grep -c HMUL2 $OUT/sass_ssx192.txt), LDL/STL $(grep -cE 'LDL|STL' $OUT/sass_ssx192.txt)"
timeout 120 /tmp/ssx --kernel ss256,ss192,ss192_promo,ssx192,rs128_decode_promo,rs128_ring5_bar --seconds 3 --data fp4 --gap 1 2>&1 | tee $OUT/free_fp4.txt
for rep in 1 2; do
for n in ss256 ss192 ss192_promo ssx192 rs128_ring5_bar; do
  r=$(case $n in ss192*|ssx*) echo k_ssx;; ss*) echo k_ss;; rs128_ring*) echo k_ring;; *) echo k_rs;; esac)
  timeout 60 ncu --clock-control base -k regex:$r --launch-count 1 \
    --metrics gpu__time_duration.sum,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active \
    /tmp/ssx --kernel $n --seconds 0.3 --launch-ms 5 --gap 0 --data fp4 2>&1 | grep -E "duration|hmma|ERR" | awk -v n=$n -v r=$rep '{print "ncu", r, n, $1, $NF}'
done; done | tee $OUT/ncu.txt
