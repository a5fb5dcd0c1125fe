#!/bin/bash
set -u
export OUT=${OUT:-/tmp/out} PYTHONUNBUFFERED=1 CMAKE_BUILD_PARALLEL_LEVEL=16 NVFP4_CUDA_ARCHS=90a
git apply .scratch/s24/p/dbg.patch || exit 1
touch cpp/src/sm90/gemv/decode_kernel.cuh
python3 -m pip install --no-build-isolation --no-deps -e . > $OUT/build.log 2>&1 || { tail -20 $OUT/build.log; git apply -R .scratch/s24/p/dbg.patch; exit 1; }
timeout 200 python3 .scratch/s24/timeline.py 2>&1 | tee $OUT/timeline.txt
git apply -R .scratch/s24/p/dbg.patch
