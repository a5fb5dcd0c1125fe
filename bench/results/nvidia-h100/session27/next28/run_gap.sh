#!/bin/bash
# PREPARED IN SESSION 27, NOT RUN (~2 min): gap_probe.py (see its docstring) on the committed tree.
#   run(command="bash bench/results/nvidia-h100/session27/next28/run_gap.sh", carry=["extern/cutlass"], kind="nvidia-h100-x1")
set -u
export OUT=${OUT:-/tmp/out} PYTHONUNBUFFERED=1 CMAKE_BUILD_PARALLEL_LEVEL=16 NVFP4_CUDA_ARCHS=90a
python3 -m pip install --no-build-isolation --no-deps -e . > $OUT/build.log 2>&1 || { tail $OUT/build.log; exit 1; }
timeout 240 python3 bench/results/nvidia-h100/session27/next28/gap_probe.py 2>&1 | tee $OUT/gap.txt
