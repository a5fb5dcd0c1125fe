#!/usr/bin/env bash
# Session 30 call 5: the token tile: no tile (2), every token load from one line (512), a one-stage
# head part decoded first (2048).
set -uo pipefail
D=bench/results/nvidia-h100/session30/abl
git apply --check $D/abl.patch 2>/dev/null && git apply $D/abl.patch
STEPS=build bash tools/device_run.sh || exit 1
python3 $D/ablate.py 7168x7168,4096x14336,14336x4096 2,8,16,24 0,2,512,2048,0 2>&1 | tee $OUT/token_tile.txt
