#!/bin/bash
# PREPARED IN SESSION 24, NOT RUN. Issues 22 / 23: the 64-token instance of the split-K pre-decoded GEMM for
# M <= 64 (branch small-tile: small_tile.patch = its cpp changes, small_tile_tests.patch = tests, sanitize
# smoke, docs). HEAD / small / HEAD again on M = 33..65 shapes (graph + eager, cuBLAS bf16 beside), then on
# small: test_gpu_gemm.py (token tiles, swapped roles, stream-K, everything), the sanitize smoke under memcheck
# and racecheck. Prediction: 64x7168x7168 ~29 -> ~15-17 µs graph; 65x7168x7168 unchanged (128-token tile).
#   run(command="bash .scratch/next25/run_small_tile.sh", carry=[".scratch/next25", "extern/cutlass"], kind="nvidia-h100-x1")
# ~8 min. Keep (merge branch small-tile) if faster with the tests and sanitizers clean.
set -u
export OUT=${OUT:-/tmp/out} PYTHONUNBUFFERED=1 CMAKE_BUILD_PARALLEL_LEVEL=16 NVFP4_CUDA_ARCHS=90a
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
SH=gemm:33x7168x7168,gemm:48x7168x7168,gemm:64x7168x7168,gemm:65x7168x7168,gemm:64x4096x14336,gemm:64x14336x4096,gemm:33x4096x14336,gemm:40x4096x16384,gemm:64x2048x8192,gemm:128x7168x7168
build() { touch cpp/src/sm90/gemm.cu; python3 -m pip install --no-build-isolation --no-deps -e . > $OUT/build_$1.log 2>&1 || { tail $OUT/build_$1.log; exit 1; }; echo "== $1 built t=$(el)"; }
b() {
  timeout 150 python3 -m nvfp4 bench --quiet --reps 10 --shapes $SH > $OUT/b_$1.txt 2>&1
  grep -E "^gemm" $OUT/b_$1.txt | grep -E "nvfp4  |cuBLAS bf16" | awk -v t=$1 '{print "["t"]", $1, $2, $3, $4, $5, $6, $7, $8, $12}' | cut -c1-110
}
build head; b head
git apply .scratch/next25/small_tile.patch && git apply .scratch/next25/small_tile_tests.patch || exit 1
build small; b small
timeout 300 python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_gpu_gemm.py > $OUT/tests_small.log 2>&1
echo "small gemm tests rc $? t=$(el)"; tail -1 $OUT/tests_small.log; grep -E "^FAILED" $OUT/tests_small.log | head -8
for tool in memcheck racecheck; do
  timeout 150 compute-sanitizer --tool $tool python3 tools/sanitize_smoke.py > $OUT/san_$tool.log 2>&1
  echo "$tool rc $? t=$(el)"; grep -E "ERROR SUMMARY|RACECHECK SUMMARY|Error|FAIL" $OUT/san_$tool.log | tail -3
done
git apply -R .scratch/next25/small_tile_tests.patch && git apply -R .scratch/next25/small_tile.patch
[ $(el) -lt 480 ] && { build head2; b head2; }
echo "t=$(el)"
