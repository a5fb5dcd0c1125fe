#!/bin/bash
# PREPARED IN SESSION 24, NOT RUN. Issue 22: the push-based K-split reduction (push_reduce.patch = branch
# push-reduce's cpp changes): HEAD / push / HEAD again (graph + eager, cuBLAS beside), then on push the decode
# GPU tests (dense, dual, packed MoE) and compute-sanitizer memcheck / racecheck / synccheck on san_push.py.
#   run(command="bash .scratch/next25/run_push.sh", carry=[".scratch/next25", "extern/cutlass"], kind="nvidia-h100-x1")
# ~7 min. Keep if faster on the split rows with tests and sanitizers clean (merge branch push-reduce).
set -u
export OUT=${OUT:-/tmp/out} PYTHONUNBUFFERED=1 CMAKE_BUILD_PARALLEL_LEVEL=16 NVFP4_CUDA_ARCHS=90a
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
SH=gemm:2x7168x7168,gemm:4x7168x7168,gemm:8x7168x7168,gemm:16x7168x7168,gemm:32x7168x7168,gemm:4x4096x14336,gemm:16x4096x14336,gemm:32x4096x14336,gemm:4x14336x4096,gemm:16x14336x4096,gemm:32x14336x4096,gemm:16x4096x2048,dual:4x4096x7168,dual:16x4096x7168
SH=$SH,packed:1+0+1+1+1+1+2+2+0+0+2+0+0+0+0+0+0+1+0+0+0+0+1+0+0+1+0+0+0+1+1+0+0+0+1+0+0+0+1+0+0+2+0+0+0+1+0+0+2+0+2+3+0+0+0+1+0+0+0+0+0+0+3+0x2048x7168
build() { touch cpp/src/sm90/gemv/decode_kernel.cuh cpp/src/sm90/gemv/decode_plan.hpp; python3 -m pip install --no-build-isolation --no-deps -e . > $OUT/build_$1.log 2>&1 || { tail $OUT/build_$1.log; exit 1; }; echo "== $1 built t=$(el)"; }
b() {
  timeout 150 python3 -m nvfp4 bench --quiet --reps 10 --shapes $SH > $OUT/b_$1.txt 2>&1
  grep -E "^(gemm|dual|packed)" $OUT/b_$1.txt | grep -E "nvfp4  |cuBLAS bf16|grouped_mm" | awk -v t=$1 '{print "["t"]", $1, $2, $3, $4, $7, $8, $12}' | cut -c1-110
}
build head; b head
git apply .scratch/next25/push_reduce.patch || exit 1
build push; b push
timeout 200 python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_gpu_decode.py tests/test_gpu_dual_decode.py tests/test_gpu_packed_decode.py > $OUT/tests_push.log 2>&1
echo "push tests rc $? t=$(el)"; tail -1 $OUT/tests_push.log; grep -E "^FAILED" $OUT/tests_push.log | head -5
for tool in memcheck racecheck synccheck; do
  timeout 120 compute-sanitizer --tool $tool python3 .scratch/next25/san_push.py > $OUT/san_$tool.log 2>&1
  echo "$tool rc $? t=$(el)"; grep -E "ERROR SUMMARY|RACECHECK SUMMARY|FAIL" $OUT/san_$tool.log | tail -3; grep -c " ok" $OUT/san_$tool.log
done
git apply -R .scratch/next25/push_reduce.patch
[ $(el) -lt 480 ] && { build head2; b head2; }
echo "t=$(el)"
