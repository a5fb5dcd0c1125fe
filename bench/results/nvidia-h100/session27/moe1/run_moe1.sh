#!/bin/bash
# Session 27: where the packed MoE decode route's 1-token time goes (64 experts, top-8 of 1 token: 8 live
# experts of one row) against the same bytes run densely (batched GEMV L = 8, one 16384-row GEMV, 8 experts
# only), then ncu of the MoE kernel.
#   run(command="bash bench/results/nvidia-h100/session27/moe1/run_moe1.sh", carry=["extern/cutlass"], kind="nvidia-h100-x1")
set -u
export OUT=${OUT:-/tmp/out} PYTHONUNBUFFERED=1 CMAKE_BUILD_PARALLEL_LEVEL=16 NVFP4_CUDA_ARCHS=90a
D=bench/results/nvidia-h100/session27/moe1
python3 -m pip install --no-build-isolation --no-deps -e . > $OUT/build.log 2>&1 || { tail $OUT/build.log; exit 1; }
R1=0+0+0+0+0+0+0+0+0+0+0+0+0+1+0+0+0+0+0+0+0+0+0+0+0+0+0+0+0+0+0+0+0+1+0+0+1+0+0+0+0+0+0+1+0+0+1+1+0+0+1+0+0+0+0+0+0+0+0+0+0+0+1+0
SH="packed:${R1}x2048x7168,packed:1+1+1+1+1+1+1+1x2048x7168,gemv:2048x7168x8,gemv:16384x7168,gemm:2x16384x7168,gemm:8x16384x7168"
SH="$SH,packed:${R1}x7168x2048,packed:1+1+1+1+1+1+1+1x7168x2048,gemv:7168x2048x8,gemv:57344x2048,gemm:2x57344x2048"
timeout 200 python3 -m nvfp4 bench --quiet --reps 10 --shapes $SH > $OUT/bench.txt 2>&1; echo "bench rc $?"
grep -E "nvfp4|cuBLAS|torch" $OUT/bench.txt | cut -c1-150
for kn in "moe 2048 7168" "moe8 2048 7168" "moe 7168 2048"; do
  set -- $kn
  timeout 120 ncu --kernel-name "regex:moe" --launch-skip 2 --launch-count 1 --section SpeedOfLight --section LaunchStats \
    --section Occupancy --section WarpStateStats --section MemoryWorkloadAnalysis --section SchedulerStats \
    python3 $D/moe1.py $1 $2 $3 > $OUT/ncu_$1_$2.txt 2>&1; echo "ncu $kn rc $?"
  grep -E "Duration|DRAM Throughput|Memory Throughput|Grid Size|Block Size|Registers|Achieved Occupancy|Theoretical Occ|Dynamic Shared|No Eligible|Issued Warp|Cluster|Waves" $OUT/ncu_$1_$2.txt | head -20
done
