#!/bin/bash
# Session 25: the 96-token split-K tile (mid_tile.patch = the working tree's change on d197c57) against
# HEAD (64/32 tiles merged) on M = 48..128, then tests + sanitizers on it, then the decode suite (fp8 peer).
set -u
export OUT=${OUT:-/tmp/out} PYTHONUNBUFFERED=1 CMAKE_BUILD_PARALLEL_LEVEL=16 NVFP4_CUDA_ARCHS=90a
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
SH=""
for nk in 7168x7168 4096x14336 14336x4096; do for m in 64 65 80 96 97 128; do SH="$SH,gemm:${m}x$nk"; done; done
SH=${SH#,},gemm:72x1024x16384,gemm:80x2048x8192
build() { python3 -m pip install --no-build-isolation --no-deps -e . > $OUT/build_$1.log 2>&1 || { tail $OUT/build_$1.log; exit 1; }; echo "== $1 built t=$(el)"; }
b() {
  timeout 150 python3 -m nvfp4 bench --quiet --reps 10 --shapes $SH > $OUT/b_$1.txt 2>&1
  echo "bench $1 rc $? t=$(el)"
  grep -E "^gemm" $OUT/b_$1.txt | grep -E "nvfp4  |cuBLAS bf16" | awk -v t=$1 '{print "["t"]", $2, $3, $4, $5, $7, $8, $12}' | cut -c1-100
}
P=.scratch/next25/mid_tile.patch
git apply -R $P || exit 1
build head; b head
git apply $P || exit 1
touch cpp/src/sm90/gemm.cu
build mid; b mid
timeout 150 python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_gpu_gemm.py -k "token_tile or swapped or streamk" > $OUT/tests_mid.log 2>&1
echo "tests rc $? t=$(el)"; tail -1 $OUT/tests_mid.log; grep -E "^FAILED" $OUT/tests_mid.log | head -8
for tool in memcheck racecheck synccheck; do
  timeout 100 compute-sanitizer --tool $tool --error-exitcode 9 python3 .scratch/next25/san_tiles.py > $OUT/san_$tool.log 2>&1
  echo "$tool rc $? t=$(el)"; grep -E "ERROR SUMMARY|RACECHECK SUMMARY" $OUT/san_$tool.log | tail -1; grep -c "^ok" $OUT/san_$tool.log
done
REM=$(( 560 - $(el) ))
[ $REM -gt 60 ] && timeout $REM python3 bench/run.py --suites decode --max-minutes $(python3 -c "print(max(0.5, ($REM - 40) / 60))") --reps 5 --no-plots --out $OUT/suite > $OUT/suite.log 2>&1
echo "suite rc $? t=$(el)"; tail -40 $OUT/suite.log | cut -c1-160
