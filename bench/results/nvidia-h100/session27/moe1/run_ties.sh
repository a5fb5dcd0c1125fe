#!/bin/bash
# Session 27: the MoE decode route's shape choice with ties to the larger K split (the working tree's change to
# decode_plan.hpp / decode_moe_plan.hpp) against main (the change reversed), same call; then the packed decode tests.
set -u
export OUT=${OUT:-/tmp/out} PYTHONUNBUFFERED=1 CMAKE_BUILD_PARALLEL_LEVEL=16 NVFP4_CUDA_ARCHS=90a
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
D=bench/results/nvidia-h100/session27/moe1
SH=$(cat $D/shapes_ties.txt)
build() { python3 -m pip install --no-build-isolation --no-deps -e . > $OUT/build_$1.log 2>&1 || { grep -E "error" $OUT/build_$1.log | head; exit 1; }; echo "== $1 built t=$(el)"; }
bench() { timeout 150 python3 -m nvfp4 bench --quiet --reps 10 --shapes $SH > $OUT/b_$1.txt 2>&1; echo "bench $1 rc $? t=$(el)"; grep -E "nvfp4 +auto|cuBLAS" $OUT/b_$1.txt | cut -c1-150 | sed -E 's/packed +G=/G=/;s/ +/ /g' | awk -v t=$1 '{print "["t"]", $0}'; }
git diff -- cpp tests > /tmp/change.patch
git apply -R /tmp/change.patch || exit 1
build main; bench main
git apply /tmp/change.patch || exit 1
build ties; bench ties
timeout 240 python3 -m pytest -q -p no:cacheprovider tests/test_gpu_packed_decode.py > $OUT/tests.log 2>&1
echo "tests rc $? t=$(el)"; tail -1 $OUT/tests.log; grep -E "^FAILED|^ERROR" $OUT/tests.log | head -5
