#!/usr/bin/env bash
# Session 30 call: the decode kernel's ablation (abl.patch applied to the working tree here).
set -uo pipefail
D=bench/results/nvidia-h100/session30/abl
git apply --check $D/abl.patch 2>/dev/null && git apply $D/abl.patch
STEPS=build bash tools/device_run.sh || exit 1
python3 $D/ablate.py 7168x7168,4096x14336,14336x4096 2,4,8,16 2>&1 | tee $OUT/ablate.txt
