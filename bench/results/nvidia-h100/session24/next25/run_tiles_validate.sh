#!/bin/bash
# PREPARED IN SESSION 24, NOT RUN. Call 2 of 2 for branch tiny-tile (see run_tiles.sh): test_gpu_gemm.py (the
# token-tile values in three dtypes and both layouts, kernel names, swapped roles, stream-K, the rest) and the
# sanitize smoke (64- and 32-token instances included) under memcheck and racecheck. ~5 min.
#   run(command="bash .scratch/next25/run_tiles_validate.sh", carry=[".scratch/next25", "extern/cutlass"], kind="nvidia-h100-x1")
set -u
export OUT=${OUT:-/tmp/out} PYTHONUNBUFFERED=1 CMAKE_BUILD_PARALLEL_LEVEL=16 NVFP4_CUDA_ARCHS=90a
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
git apply .scratch/next25/tiny_tile.patch && git apply .scratch/next25/tiny_tile_tests.patch || exit 1
touch cpp/src/sm90/gemm.cu
python3 -m pip install --no-build-isolation --no-deps -e . > $OUT/build.log 2>&1 || { tail $OUT/build.log; exit 1; }
echo "built t=$(el)"
timeout 300 python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_gpu_gemm.py > $OUT/tests_gemm.log 2>&1
echo "gemm tests rc $? t=$(el)"; tail -1 $OUT/tests_gemm.log; grep -E "^FAILED" $OUT/tests_gemm.log | head -8
for tool in memcheck racecheck; do
  timeout 120 compute-sanitizer --tool $tool --error-exitcode 9 python3 tools/sanitize_smoke.py > $OUT/san_$tool.log 2>&1
  echo "$tool rc $? t=$(el)"; grep -E "ERROR SUMMARY|RACECHECK SUMMARY|Error" $OUT/san_$tool.log | tail -3
done
git apply -R .scratch/next25/tiny_tile_tests.patch && git apply -R .scratch/next25/tiny_tile.patch
echo "t=$(el)"
