#!/bin/bash
# PREPARED IN SESSION 25, NOT RUN. Issue 22: the decode route's bounds against the tiled GEMM now that the
# tiled GEMM has 32- / 64-token tiles (session 25: at M = 32 the 32-token tile beat the decode kernel on
# 4096x14336, 28.4 vs 31.9 µs, and tied on 7168^2 / 14336x4096; at M <= 17 the decode kernel won everywhere).
# One build with the scratch hook decode_env.patch; the default routes, then NVFP4_DECODE_MAX=1 (every M >= 3
# on the tiled GEMM), graph + eager; route_compare.py joins them. N x K x M = 4 x 5 x 6 shapes. ~5 min.
#   run(command="bash .scratch/next26/run_route_sweep.sh", carry=[".scratch/next26", "extern/cutlass"], kind="nvidia-h100-x1")
set -u
export OUT=${OUT:-/tmp/out} PYTHONUNBUFFERED=1 CMAKE_BUILD_PARALLEL_LEVEL=16 NVFP4_CUDA_ARCHS=90a
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
N=.scratch/next26
git apply $N/decode_env.patch || exit 1
python3 -m pip install --no-build-isolation --no-deps -e . > $OUT/build.log 2>&1 || { tail $OUT/build.log; exit 1; }
echo "built t=$(el)"
SH=""
for n in 2048 4096 7168 14336; do for k in 1024 2048 4096 7168 14336; do for m in 4 8 16 17 24 32; do
  SH="$SH,gemm:${m}x${n}x${k}"; done; done; done
SH=${SH#,}
timeout 240 python3 -m nvfp4 bench --quiet --reps 5 --shapes $SH > $OUT/b_route.txt 2>&1; echo "route rc $? t=$(el)"
NVFP4_DECODE_MAX=1 timeout 240 python3 -m nvfp4 bench --quiet --reps 5 --shapes $SH > $OUT/b_tiled.txt 2>&1
echo "tiled rc $? t=$(el)"
python3 $N/route_compare.py $OUT/b_route.txt $OUT/b_tiled.txt | tee $OUT/route_compare.txt
git apply -R $N/decode_env.patch
