#!/usr/bin/env bash
# Session 30 call 11: the reduction's exchange split further: no loads (32768), kc plain ld.shared of the own CTA
# (65536), own CTA through the cluster window (128), barriers only (8), full (0).
set -uo pipefail
D=bench/results/nvidia-h100/session30/abl
git apply --check $D/abl_x.patch 2>/dev/null && git apply $D/abl_x.patch
STEPS=build bash tools/device_run.sh || exit 1
python3 $D/ablate.py 7168x7168,14336x4096 2,16 0,8,32768,65536,128,0 2>&1 | tee $OUT/exchange.txt
