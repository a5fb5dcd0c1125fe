#!/bin/bash
# PREPARED IN SESSION 25, NOT RUN. Issue 22: why the 32-token tile runs at 2.4x the HBM floor flat in M
# (7168^2: 23.2 µs at M = 4 and 24.2 at M = 32, against the decode kernel's 14.2 at M = 4). Back-of-envelope
# (NOTES "Order for session 26"): a K block (8 KB of weights) should take ~400 cycles of decode and ~650 of
# HBM share, but the measured time is ~1,000 cycles per block per CTA. ncu on the tiled kernel (decode route
# capped by the scratch hook decode_env.patch): 32-token tile at M = 4 and 32, 64-token tile at M = 64, the
# decode kernel at M = 4 for reference; details (SOL, occupancy, issue) and per-SASS-line stall samples. ~5 min.
#   run(command="bash .scratch/next26/run_ncu_tiles.sh", carry=[".scratch/next26", "extern/cutlass"], kind="nvidia-h100-x1")
set -u
export OUT=${OUT:-/tmp/out} PYTHONUNBUFFERED=1 CMAKE_BUILD_PARALLEL_LEVEL=16 NVFP4_CUDA_ARCHS=90a
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
N=.scratch/next26
git apply $N/decode_env.patch || exit 1
python3 -m pip install --no-build-isolation --no-deps -e . > $OUT/build.log 2>&1 || { tail $OUT/build.log; exit 1; }
echo "built t=$(el)"
prof() {  # name, kernel regex, env, M N K
  local name=$1 kre=$2 envs=$3; shift 3
  env $envs timeout 150 ncu --kernel-name "regex:$kre" --launch-skip 2 --launch-count 1 --set full --import-source yes \
    -f -o $OUT/$name python3 $N/ncu_tiles.py "$@" > $OUT/ncu_$name.log 2>&1
  echo "ncu $name rc $? t=$(el)"
  ncu --import $OUT/$name.ncu-rep --page details --csv > $OUT/${name}_details.csv 2>/dev/null
  grep -E '"(Duration|Memory Throughput|DRAM Throughput|Compute \(SM\) Throughput|Achieved Occupancy|Issue Slots Busy|Warp Cycles Per Issued Instruction|Registers Per Thread|Executed Ipc Active)"' \
    $OUT/${name}_details.csv | awk -F'","' '{print "  '$name'", $(NF-2), $(NF-1), $NF}' | head -12
  ncu --import $OUT/$name.ncu-rep --page source --csv --print-source sass > $OUT/${name}_src.csv 2>/dev/null
  python3 $N/ncu_summary.py $OUT/${name}_src.csv | head -16 | sed "s/^/  $name /"
}
prof tile32_m4 predecoded_kernel NVFP4_DECODE_MAX=1 4 7168 7168
prof tile32_m32 predecoded_kernel NVFP4_DECODE_MAX=1 32 7168 7168
prof tile64_m64 predecoded_kernel NVFP4_DECODE_MAX=99 64 7168 7168
prof decode_m4 gemm_decode_kernel NVFP4_DECODE_MAX=99 4 7168 7168
git apply -R $N/decode_env.patch
echo "t=$(el)"
