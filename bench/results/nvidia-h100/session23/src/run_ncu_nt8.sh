#!/bin/bash
# Session 23 (issue 22): why 32 tokens cost +26% over 24 on 4096x14336 (full stages, clusters of 7) but +12% on
# 7168^2 (fine stages, clusters of 4): ncu of one call of each (4 kernels), warp states and pipes.
set -u
export OUT=${OUT:-/tmp/out} PYTHONUNBUFFERED=1
STEPS=build bash tools/device_run.sh > $OUT/build_step.log 2>&1 || { tail $OUT/build_step.log; exit 1; }
timeout 240 ncu -k regex:gemm_decode_kernel --launch-count 4 \
  --section SpeedOfLight --section WarpStateStats --section SchedulerStats --section Occupancy --section LaunchStats \
  --section MemoryWorkloadAnalysis python3 .scratch/s23/ncu_nt8.py > $OUT/ncu1.txt 2>&1; echo "ncu rc $?"
grep -E "gemm_decode_kernel|Duration|Issued Warp|No Eligible|Active Warps Per|Eligible Warps|Stall|Memory Throughput|Registers Per|Block Limit|Achieved Occupancy|Grid Size|Cluster Size|Shared Memory Config" $OUT/ncu1.txt | head -80
