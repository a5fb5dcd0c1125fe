#!/usr/bin/env bash
# Session 30 call 10: is the reduction's unexplained ~0.9 µs the CTAs' later exit under PDL? Full (0) and
# barriers-only (8), each with programmatic dependent launch on and off (16384).
set -uo pipefail
D=bench/results/nvidia-h100/session30/abl
git apply --check $D/abl_pdl.patch 2>/dev/null && git apply $D/abl_pdl.patch
STEPS=build bash tools/device_run.sh || exit 1
python3 $D/ablate.py 7168x7168,14336x4096 2,8,16 0,8,4,16384,16392,16388,0 2>&1 | tee $OUT/pdl.txt
