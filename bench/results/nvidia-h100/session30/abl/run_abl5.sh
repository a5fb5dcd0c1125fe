#!/usr/bin/env bash
# Session 30 call 7: the token tile's cost is it the decode or the data? constant tiles (4096 zeros,
# 8192 fp16 1.0) against the decoded tile (0) and no tile (2), with the SM clock and board power.
set -uo pipefail
D=bench/results/nvidia-h100/session30/abl
git apply --check $D/abl2.patch 2>/dev/null && git apply $D/abl2.patch
STEPS=build bash tools/device_run.sh || exit 1
ABL_CLOCK=1 python3 $D/ablate.py 7168x7168,14336x4096 2,16,24 0,2,4096,8192,1,0 2>&1 | tee $OUT/const_tile.txt
