#!/bin/bash
# Session 25 final table: M sweep steps on 7168^2, dual decode rows, the MoE routing suite; main + 96 tile.
set -u
export OUT=${OUT:-/tmp/out} PYTHONUNBUFFERED=1 CMAKE_BUILD_PARALLEL_LEVEL=16 NVFP4_CUDA_ARCHS=90a
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
python3 -m pip install --no-build-isolation --no-deps -e . > $OUT/build.log 2>&1 || { tail $OUT/build.log; exit 1; }
echo "built t=$(el)"
SH=""
for m in 2 3 4 8 15 16 17 24 32 33 48 64 65 80 96 97 112 128 129 136 137 200 256 257 384 512 513 1024 1025 2048 2049; do SH="$SH,gemm:${m}x7168x7168"; done
SH=${SH#,},dual:4x4096x7168,dual:16x4096x7168,dual:64x4096x7168,dual:4x14336x4096,dual:16x14336x4096,dual:64x14336x4096
timeout 200 python3 -m nvfp4 bench --quiet --reps 10 --shapes $SH > $OUT/b_sweep.txt 2>&1
echo "bench rc $? t=$(el)"
grep -E "^(gemm|dual)" $OUT/b_sweep.txt | grep -E "nvfp4  |cuBLAS bf16" | awk '{print $1, $2, $3, $4, $5, $7, $8, $12}' | cut -c1-100
REM=$(( 400 - $(el) ))
timeout $REM python3 bench/run.py --suites moe_route --max-minutes $(python3 -c "print(max(0.5, ($REM - 40) / 60))") --reps 5 --no-plots --out $OUT/suite > $OUT/suite.log 2>&1
echo "suite rc $? t=$(el)"; grep -v "^\[#*\.*\]" $OUT/suite.log | tail -40 | cut -c1-170
