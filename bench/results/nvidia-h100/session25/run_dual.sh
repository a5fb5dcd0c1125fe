#!/bin/bash
# Session 25: the fused dual kernel's 32/64/96-token tiles (dual_tile.patch on 886c1b1) against HEAD, then
# test_gpu_dual_fused.py + sanitizers on san_tiles.py (GEMM and dual tile cases).
set -u
export OUT=${OUT:-/tmp/out} PYTHONUNBUFFERED=1 CMAKE_BUILD_PARALLEL_LEVEL=16 NVFP4_CUDA_ARCHS=90a
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
SH=""
for nk in 4096x7168 14336x4096; do for m in 17 32 33 48 64 65 96 97; do SH="$SH,dual:${m}x$nk"; done; done
SH=${SH#,}
build() { python3 -m pip install --no-build-isolation --no-deps -e . > $OUT/build_$1.log 2>&1 || { tail $OUT/build_$1.log; exit 1; }; echo "== $1 built t=$(el)"; }
b() {
  timeout 120 python3 -m nvfp4 bench --quiet --reps 10 --shapes $SH > $OUT/b_$1.txt 2>&1
  echo "bench $1 rc $? t=$(el)"
  grep -E "^dual" $OUT/b_$1.txt | grep -E "nvfp4  |cuBLAS bf16" | awk -v t=$1 '{print "["t"]", $2, $3, $4, $5, $7, $8, $12}' | cut -c1-100
}
P=.scratch/next25/dual_tile.patch
git apply -R $P || exit 1
build head; b head
git apply $P || exit 1
touch cpp/src/sm90/dual_gemm.cu
build dual; b dual
timeout 200 python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_gpu_dual_fused.py tests/test_gpu_dual_decode.py > $OUT/tests_dual.log 2>&1
echo "tests rc $? t=$(el)"; tail -1 $OUT/tests_dual.log; grep -E "^FAILED" $OUT/tests_dual.log | head -8
for tool in memcheck racecheck synccheck; do
  timeout 90 compute-sanitizer --tool $tool --error-exitcode 9 python3 .scratch/next25/san_tiles.py > $OUT/san_$tool.log 2>&1
  echo "$tool rc $? t=$(el)"; grep -E "ERROR SUMMARY|RACECHECK SUMMARY" $OUT/san_$tool.log | tail -1; grep -c "^ok" $OUT/san_$tool.log
done
echo "t=$(el)"
