#!/bin/bash
# PREPARED IN SESSION 22, NOT RUN. Issue 22: the decode route's bounds at short K. 9..32 tokens on 4096..6144 rows
# at K = 1024..3072, the route (tree) against the tiled GEMM (decode_min_rows forced high for K < 4096), graph µs.
# Session 22 measured losses only on exactly 4096 rows at K <= 2048 for 9..16 tokens (three points) and at K < 4096
# for 17..32 tokens (which the route already leaves to the tiled GEMM). ~3 min.
#   run(command="bash .scratch/next23/run_shortk_sweep.sh", carry=[".scratch/next23", "extern/cutlass"], kind="nvidia-h100-x1")
set -u
export OUT=${OUT:-/tmp/out} PYTHONUNBUFFERED=1 CMAKE_BUILD_PARALLEL_LEVEL=16 NVFP4_CUDA_ARCHS=90a
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
P=cpp/src/sm90/gemv/decode_plan.hpp
cp $P /tmp/plan.orig; touch $P
SH=""
for n in 4096 5120 6144; do for k in 1024 1536 2048 2560 3072; do for m in 9 12 16; do SH="$SH,gemm:${m}x${n}x${k}"; done; done; done
SH=${SH#,}
one() {
  python3 -m pip install --no-build-isolation --no-deps -e . > $OUT/build_$1.log 2>&1 || { tail $OUT/build_$1.log; exit 1; }
  echo "== $1 built t=$(el)"
  timeout 200 python3 -m nvfp4 bench --quiet --reps 10 --shapes $SH > $OUT/bench_$1.txt 2>&1
  grep -E "^gemm" $OUT/bench_$1.txt | grep -E "nvfp4  " | awk -v v=$1 '{print v, $2, $3, $4, $7, $8}'
}
one route
sed -i 's/  return M > kDecodeWideTokens \&\& K < kDecodeWideMinK ? kDecodeWideMinRows : kDecodeMinRows;/  return K < kDecodeWideMinK ? (int64_t{1} << 40) : kDecodeMinRows;/' $P
grep -q "1} << 40) : kDecodeMinRows" $P || exit 1
one tiled
cp /tmp/plan.orig $P
echo "t=$(el)"
