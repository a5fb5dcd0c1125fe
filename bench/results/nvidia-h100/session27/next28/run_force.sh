#!/bin/bash
# PREPARED IN SESSION 27, NOT RUN (~3 min): the dense decode route's launch shapes that the shape model rates within
# ~4-12% of its pick but that spread the warp-stages more evenly over the SMs (busiest SM / even share: the picks
# 1.18 on 7168^2 and 4096x14336; candidates 1.03-1.15; bench/NOTES.md "Where issue 22 stands after session 27").
# shape_env.patch (scratch, not for main): NVFP4_DECODE_SHAPE="wt,kc,sc" forces the shape (sc 16 = full 512-K
# stages, 8 = fine 256-K stages). Each group = one process per shape; the first line of each group is the pick.
#   run(command="bash bench/results/nvidia-h100/session27/next28/run_force.sh", carry=["extern/cutlass"], kind="nvidia-h100-x1")
set -u
export OUT=${OUT:-/tmp/out} PYTHONUNBUFFERED=1 CMAKE_BUILD_PARALLEL_LEVEL=16 NVFP4_CUDA_ARCHS=90a
N=bench/results/nvidia-h100/session27/next28
git apply $N/shape_env.patch || exit 1
python3 -m pip install --no-build-isolation --no-deps -e . > $OUT/build.log 2>&1 || { grep error $OUT/build.log | head; exit 1; }
row() {  # shapes, forced shape or "pick"
  if [ "$2" = pick ]; then timeout 60 python3 -m nvfp4 bench --quiet --reps 10 --shapes $1 > /tmp/b.txt 2>&1
  else NVFP4_DECODE_SHAPE=$2 timeout 60 python3 -m nvfp4 bench --quiet --reps 10 --shapes $1 > /tmp/b.txt 2>&1; fi
  grep -E "nvfp4 +auto" /tmp/b.txt | awk -v f=$2 '{printf "  %-9s %s %s %s graph %s eager %s t/SOL %s\n", f, $2, $3, $4, $7, $8, $12}'
}
S1=gemm:4x7168x7168,gemm:8x7168x7168,gemm:16x7168x7168
for f in pick 5,4,8 8,6,8 6,6,8 7,2,16 6,3,16; do row $S1 $f; done | tee $OUT/force_7168.txt
S2=gemm:4x4096x14336,gemm:16x4096x14336
for f in pick 6,8,8 7,6,16 8,8,8; do row $S2 $f; done | tee $OUT/force_4096.txt
git apply -R $N/shape_env.patch
