#!/bin/bash
# PREPARED IN SESSION 25, NOT RUN. Issue 22: the packed MoE decode route to a mean of 32 rows per expert
# (branch moe-decode32 = moe_decode32.patch on main): HEAD then the patch, bench/run.py --suites moe_route
# (64 / 128 experts, top-8 of 1..8192 tokens, torch._grouped_mm beside) each; then the packed decode tests
# and memcheck / racecheck on the 32-row chunks. ~6 min.
#   run(command="bash .scratch/next26/run_moe32.sh", carry=[".scratch/next26", "extern/cutlass"], kind="nvidia-h100-x1")
# Prediction: 64 experts, 128 tokens (1024 rows, mean 16): (2048, 7168) 376 -> ~290 µs, (7168, 2048) 383 -> ~300;
# 128 experts, 1024 tokens (mean 64) unchanged (tiled). Keep if faster on the mean 9..32 rows, tests clean.
set -u
export OUT=${OUT:-/tmp/out} PYTHONUNBUFFERED=1 CMAKE_BUILD_PARALLEL_LEVEL=16 NVFP4_CUDA_ARCHS=90a
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
build() { python3 -m pip install --no-build-isolation --no-deps -e . > $OUT/build_$1.log 2>&1 || { tail $OUT/build_$1.log; exit 1; }; echo "== $1 built t=$(el)"; }
suite() {
  timeout 150 python3 bench/run.py --suites moe_route --max-minutes 2 --reps 5 --no-plots --out $OUT/suite_$1 > $OUT/suite_$1.log 2>&1
  echo "suite $1 rc $? t=$(el)"; grep -E "G=(64|128)" $OUT/suite_$1.log | awk -v t=$1 '{print "["t"]", $1, $2, $3, $4, $5, $6, $7}'
}
build head; suite head
git apply .scratch/next26/moe_decode32.patch || exit 1
build moe32; suite moe32
timeout 150 python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_gpu_packed_decode.py tests/test_gpu_packed_tiled.py > $OUT/tests.log 2>&1
echo "tests rc $? t=$(el)"; tail -1 $OUT/tests.log; grep -E "^FAILED" $OUT/tests.log | head -8
cat > /tmp/san_moe32.py <<'PY'
import cupy as cp, numpy as np, nvfp4
rng = np.random.default_rng(0)
def fp4(*s): return cp.asarray(rng.integers(0, 256, s, dtype=np.uint8))
def sf(*s): return cp.asarray(rng.integers(0x30, 0x48, s, dtype=np.uint8))
for G, N, K, counts in [(16, 512, 1024, [40, 0, 33, 9, 0, 64, 1, 0, 20, 0, 0, 2, 0, 70, 0, 3]), (8, 1024, 8192, [30, 0, 2, 41, 0, 1, 0, 9])]:
    T = sum(counts); offs = cp.asarray(np.concatenate([[0], np.cumsum(counts)]).astype(np.int32))
    nvfp4.grouped_gemm_packed(fp4(T, K // 2), sf(T, K // 16), fp4(G, N, K // 2), sf(G, N, K // 16), offs, out_dtype="float32", backend="sm90a")
    cp.cuda.runtime.deviceSynchronize(); print("ok", G, N, K, T, flush=True)
PY
for tool in memcheck racecheck; do
  timeout 90 compute-sanitizer --tool $tool --error-exitcode 9 python3 /tmp/san_moe32.py > $OUT/san_$tool.log 2>&1
  echo "$tool rc $? t=$(el)"; grep -E "ERROR SUMMARY|RACECHECK SUMMARY" $OUT/san_$tool.log | tail -1; grep -c "^ok" $OUT/san_$tool.log
done
git apply -R .scratch/next26/moe_decode32.patch
