#!/bin/bash
# Session 29 call 2: session 28's capture probes failed (call 1: every captured op with a workspace raised
# cudaErrorStreamCaptureUnsupported from the launch's cudaGetLastError, in both the probe and capture_owned.patch).
# probe2.patch: mode 2 prints the thread's last error around the in-capture cudaMalloc (what left it); mode 1 lends a
# buffer made before the capture (no allocation in the capture, no memory nodes) and times the rows against base.
set -u
export OUT=${OUT:-/tmp/out} PYTHONUNBUFFERED=1 CMAKE_BUILD_PARALLEL_LEVEL=16 NVFP4_CUDA_ARCHS=90a
D=bench/results/nvidia-h100/session29/capture
git apply $D/probe2.patch || exit 1
python3 -m pip install --no-build-isolation --no-deps -e . > $OUT/build.log 2>&1 || { grep error $OUT/build.log | head; exit 1; }
NVFP4_PROBE_CAPTURE_BUFFER=2 timeout 60 python3 -m nvfp4 bench --quiet --reps 2 --shapes gemm:128x4096x7168 > $OUT/mode2.txt 2>&1
grep probe2 $OUT/mode2.txt | sort | uniq -c | head -20
grep -E "nvfp4 +auto" $OUT/mode2.txt
S=gemm:128x4096x7168,grouped:128+384x4096x1536,packed:128+384x4096x1536,grouped:192+320x3072x4096,dual:256x4096x7168,gemm:128x7168x2048
for r in 1 2 3; do
  for mode in base probe; do
    if [ $mode = probe ]; then export NVFP4_PROBE_CAPTURE_BUFFER=1; else unset NVFP4_PROBE_CAPTURE_BUFFER; fi
    timeout 90 python3 -m nvfp4 bench --quiet --reps 20 --shapes $S > $OUT/b_${mode}_$r.txt 2>&1
    grep -E "nvfp4 +auto|cuBLAS" $OUT/b_${mode}_$r.txt | sed "s/^/$mode$r /"
  done
done
for mode in base probe; do
  if [ $mode = probe ]; then export NVFP4_PROBE_CAPTURE_BUFFER=1; else unset NVFP4_PROBE_CAPTURE_BUFFER; fi
  echo "variance $mode"; timeout 120 python3 bench/results/nvidia-h100/session28/listpacked/variance_probe.py 2>&1 | tee $OUT/variance_$mode.txt
done
git apply -R $D/probe2.patch
