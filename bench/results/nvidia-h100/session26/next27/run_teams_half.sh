#!/bin/bash
# PREPARED IN SESSION 26, NOT RUN. Branch tile32-teams at its half-block commit (teams_half.patch on main): the dense
# split-K 32-token tile with two consumer teams on alternate K blocks, each decoding half a block ahead of its wgmma.
# Tests, the built library's wgmma hazard check and sanitizers first, its timings, then main's build timed in the
# same call. Prediction: it recovers the 8-10% the one-buffer form lost (session 26 call 8) and gains from four warps
# per scheduler: 7168^2 M = 32 22.1 -> ~19-20 µs.
#   run(command="bash bench/results/nvidia-h100/session26/next27/run_teams_half.sh", carry=["extern/cutlass"], kind="nvidia-h100-x1")
set -u
export OUT=${OUT:-/tmp/out} PYTHONUNBUFFERED=1 CMAKE_BUILD_PARALLEL_LEVEL=16 NVFP4_CUDA_ARCHS=90a
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
N=bench/results/nvidia-h100/session26/next27  # this folder, as committed
H=bench/results/nvidia-h100/session26  # the session-26 helpers it shares
build() { python3 -m pip install --no-build-isolation --no-deps -e . > $OUT/build_$1.log 2>&1 || { grep -E "error" $OUT/build_$1.log | head; tail -5 $OUT/build_$1.log; exit 1; }; echo "== $1 built t=$(el)"; }
SH="gemm:4x7168x7168,gemm:16x7168x7168,gemm:32x7168x7168,gemm:32x4096x14336,gemm:32x14336x4096,gemm:32x2048x16384,gemm:8x2048x7168"
bench() { NVFP4_DECODE_MAX=1 timeout 60 python3 -m nvfp4 bench --quiet --reps 10 --shapes $SH > $OUT/b_$1.txt 2>&1; echo "bench $1 rc $? t=$(el)"; grep -E "nvfp4 +auto" $OUT/b_$1.txt | awk -v t=$1 '{print "  ["t"]", $2, $3, $4, $7, $8}'; }
git apply $N/teams_half.patch || exit 1  # (the tree is main)
git apply $H/decode_env.patch || exit 1
build T
timeout 90 python3 -m pytest -q -p no:cacheprovider tests/test_sass_wgmma.py tests/test_gpu_gemm.py -k "token_tile or sass or wgmma or hazard" > $OUT/tests_T1.log 2>&1
echo "tests token_tile rc $? t=$(el)"; tail -1 $OUT/tests_T1.log; grep -E "^FAILED|^ERROR" $OUT/tests_T1.log | head -5
NVFP4_DECODE_MAX=1 timeout 90 python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_gpu_decode.py -k "target or odd or every" > $OUT/tests_T2.log 2>&1
echo "tests decode shapes on the tiled GEMM rc $? t=$(el)"; tail -1 $OUT/tests_T2.log; grep -E "^FAILED|^ERROR" $OUT/tests_T2.log | head -5
cat > /tmp/san32.py <<'PY'
import cupy as cp, numpy as np, nvfp4
rng = np.random.default_rng(1)
def fp4(*s): return cp.asarray(rng.integers(0, 256, s, dtype=np.uint8))
def sf(*s): return cp.asarray(rng.integers(0x30, 0x48, s, dtype=np.uint8))
for M, N, K in [(5, 512, 4096), (32, 1000, 8192), (17, 384, 2080), (3, 256, 16384)]:
    nvfp4.gemm(fp4(M, K // 2), sf(M, K // 16), fp4(N, K // 2), sf(N, K // 16), backend="sm90a", out_dtype="float32")
    cp.cuda.runtime.deviceSynchronize(); print("ok", M, N, K, flush=True)
PY
for tool in memcheck racecheck synccheck; do
  NVFP4_DECODE_MAX=1 timeout 60 compute-sanitizer --tool $tool --error-exitcode 9 python3 /tmp/san32.py > $OUT/san_$tool.log 2>&1
  echo "$tool rc $? t=$(el)"; grep -E "ERROR SUMMARY|RACECHECK SUMMARY" $OUT/san_$tool.log | tail -1; grep -c "^ok" $OUT/san_$tool.log
done
bench T
git apply -R $N/teams_half.patch || exit 1
build A; bench A
git apply -R $H/decode_env.patch  # (the tree is main again)
echo "t=$(el)"
