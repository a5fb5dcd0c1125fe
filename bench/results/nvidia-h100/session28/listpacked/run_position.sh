#!/bin/bash
# Session 28: does a bench row slow down with its position in the process (call 10: list / packed 18.0-18.4 in the
# first pair, 18.9-19.2 in the second, cuBLAS loop steady)? One process times the same grouped row six times, then
# gemm:128x4096x7168 twice, while nvidia-smi samples SM clock / temperature / power every 100 ms.
export OUT=${OUT:-/tmp/out}
S=grouped:128+384x4096x1536
nvidia-smi --query-gpu=timestamp,clocks.sm,temperature.gpu,power.draw --format=csv,noheader -lms 100 > $OUT/smi.csv &
SMI=$!
timeout 120 python3 -m nvfp4 bench --reps 20 --shapes gemm:128x4096x7168,$S,$S,$S,$S,$S,$S,gemm:128x4096x7168 > $OUT/pos.txt 2>$OUT/pos_progress.log
kill $SMI
grep -E "nvfp4 +auto|cuBLAS" $OUT/pos.txt
awk -F', ' '{print $2, $3, $4}' $OUT/smi.csv | sort | uniq -c | sort -rn | head -8
