#!/bin/bash
# Session 27: is the packed MoE 1-token route's G = 64 penalty (38.6 µs against 31.0 for the same 8 rows as G = 8,
# run_moe1.sh) the live experts' place in the weight buffer? Same bytes, live experts first / strided / last /
# routed, and the 4-token routing with and without its empty experts.
set -u
export OUT=${OUT:-/tmp/out} PYTHONUNBUFFERED=1 CMAKE_BUILD_PARALLEL_LEVEL=16 NVFP4_CUDA_ARCHS=90a
python3 -m pip install --no-build-isolation --no-deps -e . > $OUT/build.log 2>&1 || { tail $OUT/build.log; exit 1; }
SH="packed:0+0+0+0+0+0+0+0+0+0+0+0+0+1+0+0+0+0+0+0+0+0+0+0+0+0+0+0+0+0+0+0+0+1+0+0+1+0+0+0+0+0+0+1+0+0+1+1+0+0+1+0+0+0+0+0+0+0+0+0+0+0+1+0x2048x7168,packed:1+1+1+1+1+1+1+1+0+0+0+0+0+0+0+0+0+0+0+0+0+0+0+0+0+0+0+0+0+0+0+0+0+0+0+0+0+0+0+0+0+0+0+0+0+0+0+0+0+0+0+0+0+0+0+0+0+0+0+0+0+0+0+0x2048x7168,packed:1+0+0+0+0+0+0+0+1+0+0+0+0+0+0+0+1+0+0+0+0+0+0+0+1+0+0+0+0+0+0+0+1+0+0+0+0+0+0+0+1+0+0+0+0+0+0+0+1+0+0+0+0+0+0+0+1+0+0+0+0+0+0+0x2048x7168,packed:0+0+0+0+0+0+0+0+0+0+0+0+0+0+0+0+0+0+0+0+0+0+0+0+0+0+0+0+0+0+0+0+0+0+0+0+0+0+0+0+0+0+0+0+0+0+0+0+0+0+0+0+0+0+0+0+1+1+1+1+1+1+1+1x2048x7168,packed:1+1+1+1+1+1+1+1x2048x7168,packed:1+1+1+1+1+1+1+1+0+0+0+0+0+0+0+0x2048x7168,packed:1+0+1+1+1+1+2+2+0+0+2+0+0+0+0+0+0+1+0+0+0+0+1+0+0+1+0+0+0+1+1+0+0+0+1+0+0+0+1+0+0+2+0+0+0+1+0+0+2+0+2+3+0+0+0+1+0+0+0+0+0+0+3+0x2048x7168,packed:1+1+1+1+1+2+2+2+1+1+1+1+1+1+1+2+1+2+2+3+1+3x2048x7168,packed:0+0+0+0+0+0+0+0+0+0+0+0+0+1+0+0+0+0+0+0+0+0+0+0+0+0+0+0+0+0+0+0+0+1+0+0+1+0+0+0+0+0+0+1+0+0+1+1+0+0+1+0+0+0+0+0+0+0+0+0+0+0+1+0x7168x2048,packed:1+1+1+1+1+1+1+1+0+0+0+0+0+0+0+0+0+0+0+0+0+0+0+0+0+0+0+0+0+0+0+0+0+0+0+0+0+0+0+0+0+0+0+0+0+0+0+0+0+0+0+0+0+0+0+0+0+0+0+0+0+0+0+0x7168x2048"
for i in 1 2; do timeout 200 python3 -m nvfp4 bench --quiet --reps 10 --shapes $SH > $OUT/place$i.txt 2>&1; echo "bench rc $?"
grep -E "nvfp4 " $OUT/place$i.txt | cut -c1-150 | sed -E 's/packed +G=/G=/'; done
