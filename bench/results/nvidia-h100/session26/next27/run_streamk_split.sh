#!/bin/bash
# PREPARED IN SESSION 26, NOT RUN. Branch tile32-streamk = streamk_split.patch on main: stream-K for the 32- / 64- /
# 96-token tiles (all 132 SMs instead of 112 CTAs at 7168^2 M = 32 / 64). Tests + sanitizers on the patch, then
# timings of main and the patch in the same call. Prediction: 7168^2 M = 32 22.1 -> ~20.5 µs, M = 64 24.5 -> ~22.5,
# 14336x4096 M = 32 / 64 23.7 / 27.3 -> ~21.5 / ~24.5 (busiest SM 28 -> 24 + 1 / 32 -> 28 + 1 blocks).
#   run(command="bash bench/results/nvidia-h100/session26/next27/run_streamk_split.sh", carry=["extern/cutlass"], kind="nvidia-h100-x1")
set -u
export OUT=${OUT:-/tmp/out} PYTHONUNBUFFERED=1 CMAKE_BUILD_PARALLEL_LEVEL=16 NVFP4_CUDA_ARCHS=90a
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
N=bench/results/nvidia-h100/session26/next27  # this folder, as committed
build() { python3 -m pip install --no-build-isolation --no-deps -e . > $OUT/build_$1.log 2>&1 || { grep error $OUT/build_$1.log | head; exit 1; }; echo "== $1 built t=$(el)"; }
SH="gemm:32x7168x7168,gemm:64x7168x7168,gemm:48x7168x7168,gemm:32x14336x4096,gemm:64x14336x4096,gemm:64x4096x14336,gemm:80x2048x8192,gemm:65x7168x7168"
bench() { timeout 90 python3 -m nvfp4 bench --quiet --reps 10 --shapes $SH > $OUT/b_$1.txt 2>&1; echo "bench $1 rc $? t=$(el)"; grep -E "nvfp4 +auto|cuBLAS" $OUT/b_$1.txt | awk -v t=$1 '{print "  ["t"]", $0}' | cut -c1-120; }
git apply $N/streamk_split.patch || exit 1
build S
timeout 150 python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_gpu_gemm.py -k "token_tile or streamk" > $OUT/tests.log 2>&1
echo "tests rc $? t=$(el)"; tail -1 $OUT/tests.log; grep -E "^FAILED|^ERROR" $OUT/tests.log | head -8
cat > /tmp/san_sk.py <<'PY'
import cupy as cp, numpy as np, nvfp4
rng = np.random.default_rng(2)
def fp4(*s): return cp.asarray(rng.integers(0, 256, s, dtype=np.uint8))
def sf(*s): return cp.asarray(rng.integers(0x30, 0x48, s, dtype=np.uint8))
for M, N, K in [(32, 7168, 7168), (64, 14336, 4096), (80, 2048, 8192)]:
    nvfp4.gemm(fp4(M, K // 2), sf(M, K // 16), fp4(N, K // 2), sf(N, K // 16), backend="sm90a", out_dtype="float32")
    cp.cuda.runtime.deviceSynchronize(); print("ok", M, N, K, flush=True)
PY
for tool in memcheck racecheck synccheck; do
  timeout 120 compute-sanitizer --tool $tool --error-exitcode 9 python3 /tmp/san_sk.py > $OUT/san_$tool.log 2>&1
  echo "$tool rc $? t=$(el)"; grep -E "ERROR SUMMARY|RACECHECK SUMMARY" $OUT/san_$tool.log | tail -1; grep -c "^ok" $OUT/san_$tool.log
done
bench S
git apply -R $N/streamk_split.patch; build main; bench main
echo "t=$(el)"
