#!/bin/bash
# Session 23: HEAD (fine stages + the 1536 bound): decode + gemm GPU tests, then the decode sweep.
set -u
export OUT=${OUT:-/tmp/out} PYTHONUNBUFFERED=1 CMAKE_BUILD_PARALLEL_LEVEL=16 NVFP4_CUDA_ARCHS=90a
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
STEPS=build bash tools/device_run.sh > $OUT/build_step.log 2>&1 || { tail $OUT/build_step.log; exit 1; }
echo "built t=$(el)"
timeout 330 python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_gpu_decode.py tests/test_gpu_gemm.py > $OUT/tests.log 2>&1; echo "tests rc $? t=$(el)"; tail -1 $OUT/tests.log; grep -E "^FAILED" $OUT/tests.log | head -5
timeout 240 python3 bench/run.py --suites decode --no-plots --quiet --reps 10 --out $OUT/res > $OUT/sweep.log 2>&1; echo "sweep rc $? t=$(el)"
grep -E "^gemm" $OUT/sweep.log | grep -E "nvfp4  |cuBLAS" | cut -c1-130 | head -80
