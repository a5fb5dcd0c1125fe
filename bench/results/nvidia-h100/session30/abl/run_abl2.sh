#!/usr/bin/env bash
# Session 30 call 3: the K-split reduction's parts (abl.patch bits 4 / 8 / 32), then depth-3 rings
# with and without the ramp (depth3.patch on top; bit 64 = ramp).
set -uo pipefail
D=bench/results/nvidia-h100/session30/abl
git apply --check $D/abl.patch 2>/dev/null && git apply $D/abl.patch
STEPS=build bash tools/device_run.sh || exit 1
python3 $D/ablate.py 7168x7168,4096x14336,14336x4096 2,4,8,16 0,4,8,32,0 2>&1 | tee $OUT/reduce_parts.txt
git apply $D/depth3.patch || exit 1
STEPS=build bash tools/device_run.sh || exit 1
python3 $D/ablate.py 7168x7168,4096x14336,14336x4096 2,4,8 0,64,0,64 2>&1 | tee $OUT/depth3.txt
git apply -R $D/depth3.patch
