#!/bin/bash
# Session 23: fine decode stages: decode GPU tests, sanitizer on fine launch shapes, then 17..32 tokens at
# K < 4096 on 4096..6144 rows: the decode route (decode_min_rows = 4096 always) against the tiled GEMM (tree).
set -u
export OUT=${OUT:-/tmp/out} PYTHONUNBUFFERED=1 CMAKE_BUILD_PARALLEL_LEVEL=16 NVFP4_CUDA_ARCHS=90a
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
P=cpp/src/sm90/gemv/decode_plan.hpp
build() { touch $P cpp/src/sm90/gemv/decode_kernel.cuh cpp/src/sm90/gemv/decode_mma.cuh cpp/src/sm90/gemm_decode.cu; python3 -m pip install --no-build-isolation --no-deps -e . > $OUT/build_$1.log 2>&1 || { tail $OUT/build_$1.log; exit 1; }; echo "== $1 built t=$(el)"; }
SH=""
for nk in 4096x1024 4096x2048 4096x3072 5120x2048 6144x1536 6144x3072 4096x1536; do for m in 17 24 32; do SH="$SH,gemm:${m}x$nk"; done; done
SH=${SH#,}
b() { timeout 200 python3 -m nvfp4 bench --quiet --reps 10 --shapes $SH > $OUT/b_$1.txt 2>&1; echo "bench $1 rc $? t=$(el)"; grep -E "^gemm" $OUT/b_$1.txt | grep "nvfp4  " | awk -v v=$1 '{print v, $2, $3, $4, $7, $8}'; }
build tree
timeout 200 python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_gpu_decode.py > $OUT/tests.log 2>&1; echo "tests rc $? t=$(el)"; tail -1 $OUT/tests.log; grep -E "^FAILED" $OUT/tests.log | head -5
for tool in memcheck racecheck; do
  timeout 150 compute-sanitizer --tool $tool python3 .scratch/s23/san_fine.py > $OUT/san_$tool.log 2>&1; echo "$tool rc $? t=$(el)"; grep -E "ERROR SUMMARY|RACECHECK SUMMARY|FAIL" $OUT/san_$tool.log | tail -3; grep -c " ok" $OUT/san_$tool.log
done
b tiled
cp $P /tmp/plan.orig
sed -i 's/  return M > kDecodeWideTokens \&\& K < kDecodeWideMinK ? kDecodeWideMinRows : kDecodeMinRows;/  return kDecodeMinRows;/' $P
grep -q "^  return kDecodeMinRows;" $P || exit 1
build route; b route
cp /tmp/plan.orig $P
echo "t=$(el)"
