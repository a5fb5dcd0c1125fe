#!/bin/bash
# Session 23: HEAD on the device: build, the sanitize smoke (memcheck / racecheck / synccheck), the full GPU suite.
set -u
export OUT=${OUT:-/tmp/out} PYTHONUNBUFFERED=1
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
STEPS=build bash tools/device_run.sh > $OUT/build_step.log 2>&1 || { tail $OUT/build_step.log; exit 1; }
echo "built t=$(el)"
for tool in memcheck racecheck synccheck; do
  timeout 75 compute-sanitizer --tool $tool --error-exitcode 9 python3 tools/sanitize_smoke.py > $OUT/sanitize_$tool.log 2>&1
  echo "$tool rc $? t=$(el)"; grep -E "ERROR SUMMARY|RACECHECK SUMMARY|sanitize smoke" $OUT/sanitize_$tool.log | tail -2
done
timeout 300 python3 -m pytest -q -m gpu -p no:cacheprovider tests > $OUT/gpu_tests.log 2>&1; echo "tests rc $? t=$(el)"; tail -2 $OUT/gpu_tests.log; grep -E "^FAILED|^ERROR" $OUT/gpu_tests.log | head
