#!/bin/bash
set -u
export OUT=${OUT:-/tmp/out} PYTHONUNBUFFERED=1 CMAKE_BUILD_PARALLEL_LEVEL=16 NVFP4_CUDA_ARCHS=90a
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
SH=gemm:2x7168x7168,gemm:4x7168x7168,gemm:8x7168x7168,gemm:16x7168x7168,gemm:32x7168x7168,gemm:4x4096x14336,gemm:16x4096x14336,gemm:32x4096x14336,gemm:4x14336x4096,gemm:16x14336x4096,gemm:32x14336x4096,gemm:16x4096x2048,gemm:17x7168x7168
build() { touch cpp/src/sm90/gemv/decode_kernel.cuh; python3 -m pip install --no-build-isolation --no-deps -e . > $OUT/build_$1.log 2>&1 || { tail $OUT/build_$1.log; exit 1; }; echo "== $1 built t=$(el)"; }
b() {
  timeout 150 python3 -m nvfp4 bench --quiet --reps 10 --shapes $SH > $OUT/b_$1.txt 2>&1
  grep -E "^(gemm|dual|packed)" $OUT/b_$1.txt | grep -E "nvfp4  " | awk -v t=$1 '{print "["t"]", $1, $2, $3, $4, $7, $8, $12}' | cut -c1-100
}
build head; b head
git apply .scratch/s24/p/E_bulkpf.patch || exit 1
build E; b E
timeout 200 python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_gpu_decode.py -x > $OUT/tests_E.log 2>&1; echo "E tests rc $? t=$(el)"; tail -1 $OUT/tests_E.log
git apply .scratch/s24/p/dbg.patch || exit 1
touch cpp/src/sm90/gemv/decode_kernel.cuh; python3 -m pip install --no-build-isolation --no-deps -e . > $OUT/build_dbg.log 2>&1 || { tail $OUT/build_dbg.log; }
timeout 100 python3 .scratch/s24/timeline.py 2>&1 | tee $OUT/timeline_E.txt
git apply -R .scratch/s24/p/dbg.patch; git apply -R .scratch/s24/p/E_bulkpf.patch
echo "t=$(el)"
