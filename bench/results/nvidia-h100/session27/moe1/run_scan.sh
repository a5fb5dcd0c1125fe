#!/bin/bash
# Session 27: the MoE decode route's chunk scan in one warp per CTA with coalesced rows of 32 experts
# (the working tree's change) against main (the tree with the change reversed), same call: the issue's
# MoE rows (64 experts, top-8 of 1 / 4 / 16 / 64 tokens, both (N, K)) and 8 live rows at G = 8 / 33 / 64 / 128;
# then the packed decode GPU tests and compute-sanitizer on the change.
set -u
export OUT=${OUT:-/tmp/out} PYTHONUNBUFFERED=1 CMAKE_BUILD_PARALLEL_LEVEL=16 NVFP4_CUDA_ARCHS=90a
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
D=bench/results/nvidia-h100/session27/moe1
SH=$(cat $D/shapes_scan.txt)
build() { python3 -m pip install --no-build-isolation --no-deps -e . > $OUT/build_$1.log 2>&1 || { grep -E "error" $OUT/build_$1.log | head; exit 1; }; echo "== $1 built t=$(el)"; }
bench() { timeout 150 python3 -m nvfp4 bench --quiet --reps 10 --shapes $SH > $OUT/b_$1.txt 2>&1; echo "bench $1 rc $? t=$(el)"; grep -E "nvfp4 +auto|cuBLAS" $OUT/b_$1.txt | cut -c1-150 | sed -E 's/packed +G=/G=/;s/ +/ /g' | awk -v t=$1 '{print "["t"]", $0}'; }
git diff -- cpp tests > /tmp/change.patch
git apply -R /tmp/change.patch || exit 1
build main; bench main
git apply /tmp/change.patch || exit 1
build scan; bench scan
timeout 240 python3 -m pytest -q -p no:cacheprovider tests/test_gpu_packed_decode.py > $OUT/tests.log 2>&1
echo "tests rc $? t=$(el)"; tail -1 $OUT/tests.log; grep -E "^FAILED|^ERROR" $OUT/tests.log | head -5
cat > /tmp/san_moe.py <<'PY'
import cupy as cp, numpy as np, nvfp4
rng = np.random.default_rng(3)
def fp4(*s): return cp.asarray(rng.integers(0, 256, s, dtype=np.uint8))
def sf(*s): return cp.asarray(rng.integers(0x30, 0x48, s, dtype=np.uint8))
for G, counts in [(64, [0] * 60 + [3, 0, 1, 9]), (200, [1] * 40 + [0] * 159 + [5]), (8, [2, 0, 0, 1, 0, 0, 0, 20])]:
    off = cp.asarray(np.concatenate([[0], np.cumsum(counts)]).astype(np.int32)); T = int(sum(counts))
    nvfp4.grouped_gemm_packed(fp4(T, 128), sf(T, 16), fp4(G, 512, 128), sf(G, 512, 16), off, out_dtype="float32")
    cp.cuda.runtime.deviceSynchronize(); print("ok", G, flush=True)
PY
for tool in memcheck racecheck synccheck; do
  timeout 100 compute-sanitizer --tool $tool --error-exitcode 9 python3 /tmp/san_moe.py > $OUT/san_$tool.log 2>&1
  echo "$tool rc $? t=$(el)"; grep -E "ERROR SUMMARY|RACECHECK SUMMARY" $OUT/san_$tool.log | tail -1; grep -c "^ok" $OUT/san_$tool.log
done
