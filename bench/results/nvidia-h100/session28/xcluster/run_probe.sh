#!/bin/bash
# Session 28: cluster co-residency probe, then the cluster-decoded build on shapes of 96 / 128 tiles.
set -u
export OUT=${OUT:-/tmp/out} PYTHONUNBUFFERED=1 CMAKE_BUILD_PARALLEL_LEVEL=16 NVFP4_CUDA_ARCHS=90a
D=bench/results/nvidia-h100/session28/xcluster
nvcc -arch=sm_90a -O2 -o /tmp/cp $D/cluster_probe.cu && /tmp/cp | tee $OUT/probe.txt
python3 -m pip install --no-build-isolation --no-deps -e . > $OUT/build.log 2>&1 || { grep error $OUT/build.log | head; exit 1; }
timeout 200 python3 -m nvfp4 bench --quiet --reps 20 --shapes grouped:64x256x512,grouped:384x4096x3072,grouped:384x4096x1536,grouped:128+384x4096x1536 > $OUT/bench.txt 2>&1
grep -E "^grouped" $OUT/bench.txt
