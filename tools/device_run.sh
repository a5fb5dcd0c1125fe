#!/usr/bin/env bash
# One device-machine call: build, GPU tests, benchmarks; logs under $OUT.
# Usage (from the repo root on the device machine, extern/cutlass carried):
#   ARCHS="90a" STEPS="build tests bench" bash tools/device_run.sh [pytest args...]
set -uo pipefail
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-16}
export NVFP4_CUDA_ARCHS=${ARCHS:-90a}
STEPS=${STEPS:-build tests}
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader
for step in $STEPS; do
  case $step in
    build)
      t0=$(date +%s)
      # The build directory outlives calls, but the sources arrive with the sending machine's
      # (older) modification times, so an edited source can look older than its object and be
      # skipped (session 22 timed one build twice that way). Touch every source whose content
      # differs from the last successful build's (manifest in the ignored build/).
      man=build/.src_manifest
      find cpp -type f \( -name '*.cu' -o -name '*.cuh' -o -name '*.hpp' -o -name '*.h' -o -name '*.cpp' -o -name '*.txt' \) \
        -print0 | xargs -0 sha1sum | sort > /tmp/src_manifest
      if [ -f "$man" ]; then comm -23 /tmp/src_manifest "$man" | cut -c43- | xargs -r touch; else find cpp -type f -exec touch {} +; fi
      if ! python3 -m pip install --no-build-isolation --no-deps -e . > "$OUT/build.log" 2>&1; then
        grep -E "error|Error" "$OUT/build.log" | head -40; tail -20 "$OUT/build.log"; exit 1
      fi
      mkdir -p build && cp /tmp/src_manifest "$man"
      echo "build ($NVFP4_CUDA_ARCHS): $(( $(date +%s) - t0 )) s"
      python3 -m nvfp4 info ;;
    tests)
      python3 -m pytest -q -m gpu -p no:cacheprovider "$@" tests 2>&1 | tee "$OUT/gpu_tests.log" | tail -60 ;;
    bench)
      python3 -m nvfp4 bench --json "$OUT/main.json" 2>"$OUT/bench_progress.log" | tee "$OUT/bench_main.txt" ;;
    suite)
      python3 bench/run.py --out "$OUT" 2>"$OUT/suite_progress.log" | tail -40 ;;
    sanitize)
      for tool in memcheck racecheck synccheck; do
        compute-sanitizer --tool $tool --error-exitcode 9 python3 tools/sanitize_smoke.py > "$OUT/sanitize_$tool.log" 2>&1
        echo "compute-sanitizer $tool: exit $? ($(grep -c 'ERROR SUMMARY: 0 errors' "$OUT/sanitize_$tool.log") clean summaries)"
        tail -3 "$OUT/sanitize_$tool.log"
      done ;;
  esac
done
