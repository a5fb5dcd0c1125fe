#!/usr/bin/env bash
# Session 30 call 9: compute-sanitizer on the decode routes with tile2.patch (in the working tree).
set -uo pipefail
D=bench/results/nvidia-h100/session30/tokfast
STEPS=build bash tools/device_run.sh || exit 1
for tool in memcheck racecheck synccheck; do
  timeout 150 compute-sanitizer --tool $tool --error-exitcode 9 python3 $D/san_decode.py > $OUT/san_$tool.log 2>&1
  echo "$tool: exit $? $(grep -h 'ERROR SUMMARY\|RACECHECK SUMMARY' $OUT/san_$tool.log | tail -1)"
done
