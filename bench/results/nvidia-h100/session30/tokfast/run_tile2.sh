#!/usr/bin/env bash
# Session 30 call 8: HEAD against the conflict-free, division-free token tile (tile2.patch, in the working tree
# when this runs), same machine, then the decode GPU tests on the patched build.
set -uo pipefail
D=bench/results/nvidia-h100/session30/tokfast
A=bench/results/nvidia-h100/session30/abl/ablate.py
git apply -R $D/tile2.patch || exit 1
STEPS=build bash tools/device_run.sh || exit 1
python3 $A 7168x7168,4096x14336,14336x4096 2,4,8,16,24 0,0 2>&1 | tee $OUT/head.txt
git apply $D/tile2.patch || exit 1
STEPS=build bash tools/device_run.sh || exit 1
python3 $A 7168x7168,4096x14336,14336x4096 2,4,8,16,24 0,0 2>&1 | tee $OUT/tile2.txt
python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_gpu_decode.py tests/test_gpu_dual_decode.py \
  tests/test_gpu_packed_decode.py 2>&1 | tail -5 | tee $OUT/tests2.txt
