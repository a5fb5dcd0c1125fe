#!/bin/bash
# Session 25: the dual decode route to 32 tokens (branch dual-decode32) against the fused 32/64-token tiles
# (scratch hook NVFP4_DUAL_DECODE_MAX=16 sends 17..32 back to them), one build; then the dual decode tests
# and racecheck / memcheck on 3- and 4-group dual decode cases.
set -u
export OUT=${OUT:-/tmp/out} PYTHONUNBUFFERED=1 CMAKE_BUILD_PARALLEL_LEVEL=16 NVFP4_CUDA_ARCHS=90a
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
git apply .scratch/next25/dual_env.patch || exit 1
python3 -m pip install --no-build-isolation --no-deps -e . > $OUT/build.log 2>&1 || { tail $OUT/build.log; exit 1; }
echo "built t=$(el)"
SH=""
for nk in 4096x7168 14336x4096; do for m in 16 17 24 32 33; do SH="$SH,dual:${m}x$nk"; done; done
SH=${SH#,}
b() {
  timeout 100 python3 -m nvfp4 bench --quiet --reps 10 --shapes $SH > $OUT/b_$1.txt 2>&1
  echo "bench $1 rc $? t=$(el)"
  grep -E "^dual" $OUT/b_$1.txt | grep -E "nvfp4  |cuBLAS bf16" | awk -v t=$1 '{print "["t"]", $2, $3, $4, $5, $7, $8, $12}' | cut -c1-100
}
b decode32; NVFP4_DUAL_DECODE_MAX=16 b tiles
timeout 150 python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_gpu_dual_decode.py > $OUT/tests.log 2>&1
echo "tests rc $? t=$(el)"; tail -1 $OUT/tests.log; grep -E "^FAILED" $OUT/tests.log | head -8
cat > /tmp/san_d32.py <<'PY'
import cupy as cp, numpy as np, nvfp4
rng = np.random.default_rng(0)
def fp4(*s): return cp.asarray(rng.integers(0, 256, s, dtype=np.uint8))
def sf(*s): return cp.asarray(rng.integers(0x30, 0x48, s, dtype=np.uint8))
for M, N, K, L in [(17, 2048, 2048, 1), (32, 2048, 2048, 1), (24, 1024, 4096, 2)]:
    a, sa = fp4(L, M, K // 2), sf(L, M, K // 16)
    b1, s1, b2, s2 = fp4(L, N, K // 2), sf(L, N, K // 16), fp4(L, N, K // 2), sf(L, N, K // 16)
    nvfp4.dual_gemm(a, sa, b1, s1, b2, s2, backend="sm90a")
    nvfp4.dual_gemm(a, nvfp4.swizzle_scales(sa), b1, nvfp4.swizzle_scales(s1), b2, nvfp4.swizzle_scales(s2), sf_layout="blocked", backend="sm90a")
    cp.cuda.runtime.deviceSynchronize(); print("ok", M, N, K, L, flush=True)
PY
for tool in racecheck memcheck; do
  timeout 60 compute-sanitizer --tool $tool --error-exitcode 9 python3 /tmp/san_d32.py > $OUT/san_$tool.log 2>&1
  echo "$tool rc $? t=$(el)"; grep -E "ERROR SUMMARY|RACECHECK SUMMARY" $OUT/san_$tool.log | tail -1; grep -c "^ok" $OUT/san_$tool.log
done
git apply -R .scratch/next25/dual_env.patch
