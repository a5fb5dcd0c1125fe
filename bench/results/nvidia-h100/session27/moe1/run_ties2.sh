#!/bin/bash
# Session 27: clean A/B of ties.patch (the MoE route's ties to the larger K split, one token group only) against
# HEAD's code (the patch reversed from the tree), A B A order, same call.
set -u
export OUT=${OUT:-/tmp/out} PYTHONUNBUFFERED=1 CMAKE_BUILD_PARALLEL_LEVEL=16 NVFP4_CUDA_ARCHS=90a
D=bench/results/nvidia-h100/session27/moe1
SH="packed:1+1+1+1+1+1+1+1x2048x7168,$(cat $D/shapes_ties2.txt)"  # (a warm-up row first)
build() { python3 -m pip install --no-build-isolation --no-deps -e . > $OUT/build_$1.log 2>&1 || { grep -E "error" $OUT/build_$1.log | head; exit 1; }; }
bench() { timeout 60 python3 -m nvfp4 bench --quiet --reps 10 --shapes $SH > $OUT/b_$1.txt 2>&1; grep -E "nvfp4 +auto" $OUT/b_$1.txt | cut -c1-120 | sed -E 's/packed +G=/G=/;s/ +/ /g' | awk -v t=$1 '{print "["t"]", $0}'; }
git apply -R $D/ties.patch || exit 1
build head; bench head1
git apply $D/ties.patch || exit 1
build ties; bench ties; bench ties2
