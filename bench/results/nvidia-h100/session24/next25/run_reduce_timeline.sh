#!/bin/bash
# PREPARED IN SESSION 24, NOT RUN. Issue 22: (1) reduce_batch.patch (the K split's reduction loads all kc ranks'
# partials before adding: one DSMEM round trip instead of ceil(kc / 4); same sums, bit for bit) against HEAD on the
# cluster-of-7 rows (4096x14336) and 7168^2, then the decode tests on it; (2) timeline_graph.py with dbg.patch on HEAD:
# the decode kernel's phases under graph replay (session 24 measured them only for one cold eager launch).
#   run(command="bash .scratch/next25/run_reduce_timeline.sh", carry=[".scratch/next25", "extern/cutlass"], kind="nvidia-h100-x1")
# ~5 min.
set -u
export OUT=${OUT:-/tmp/out} PYTHONUNBUFFERED=1 CMAKE_BUILD_PARALLEL_LEVEL=16 NVFP4_CUDA_ARCHS=90a
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
SH=gemm:4x7168x7168,gemm:16x7168x7168,gemm:32x7168x7168,gemm:4x4096x14336,gemm:16x4096x14336,gemm:32x4096x14336,gemm:4x14336x4096,gemm:32x14336x4096,dual:4x4096x7168,dual:16x4096x7168
build() { touch cpp/src/sm90/gemv/decode_kernel.cuh; python3 -m pip install --no-build-isolation --no-deps -e . > $OUT/build_$1.log 2>&1 || { tail $OUT/build_$1.log; exit 1; }; echo "== $1 built t=$(el)"; }
b() {
  timeout 150 python3 -m nvfp4 bench --quiet --reps 10 --shapes $SH > $OUT/b_$1.txt 2>&1
  grep -E "^(gemm|dual)" $OUT/b_$1.txt | grep -E "nvfp4  " | awk -v t=$1 '{print "["t"]", $1, $2, $3, $4, $7, $8, $12}'
}
build head; b head
git apply .scratch/next25/reduce_batch.patch || exit 1
build batch; b batch
timeout 200 python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_gpu_decode.py tests/test_gpu_dual_decode.py tests/test_gpu_packed_decode.py > $OUT/tests_batch.log 2>&1
echo "batch tests rc $? t=$(el)"; tail -1 $OUT/tests_batch.log; grep -E "^FAILED" $OUT/tests_batch.log | head -5
git apply -R .scratch/next25/reduce_batch.patch
build head2; b head2
git apply .scratch/next25/dbg.patch || exit 1
build dbg
timeout 150 python3 .scratch/next25/timeline_graph.py 2>&1 | tee $OUT/timeline_graph.txt
git apply -R .scratch/next25/dbg.patch
echo "t=$(el)"
