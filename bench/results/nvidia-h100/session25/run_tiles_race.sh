#!/bin/bash
set -u
export OUT=${OUT:-/tmp/out} PYTHONUNBUFFERED=1 CMAKE_BUILD_PARALLEL_LEVEL=16 NVFP4_CUDA_ARCHS=90a
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
git apply .scratch/next25/tiny_tile.patch && git apply .scratch/next25/tiny_tile_tests.patch || exit 1
python3 -m pip install --no-build-isolation --no-deps -e . > $OUT/build.log 2>&1 || { tail $OUT/build.log; exit 1; }
echo "built t=$(el)"
for tool in racecheck synccheck; do
  timeout 200 compute-sanitizer --tool $tool --error-exitcode 9 python3 .scratch/next25/san_tiles.py > $OUT/san_$tool.log 2>&1
  echo "$tool rc $? t=$(el)"; grep -E "ERROR SUMMARY|RACECHECK SUMMARY|Error|ok " $OUT/san_$tool.log | tail -6
done
git apply -R .scratch/next25/tiny_tile_tests.patch && git apply -R .scratch/next25/tiny_tile.patch
