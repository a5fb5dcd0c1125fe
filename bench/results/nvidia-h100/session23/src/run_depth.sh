#!/bin/bash
# Session 23, issue 22: decode kernel stage geometry. head (SC 16, depth 2) / head with kDecodeMinClusterStages 2 /
# SC 8 depth 2 / 3 / 4 (sc8d.patch; dual decode route off while the geometry differs), graph + eager with cuBLAS.
set -u
export OUT=${OUT:-/tmp/out} PYTHONUNBUFFERED=1 CMAKE_BUILD_PARALLEL_LEVEL=16 NVFP4_CUDA_ARCHS=90a
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
P=cpp/src/sm90/gemv/decode_plan.hpp
SH=gemm:2x7168x7168,gemm:4x7168x7168,gemm:8x7168x7168,gemm:9x7168x7168,gemm:16x7168x7168,gemm:17x7168x7168,gemm:32x7168x7168,gemm:4x14336x4096,gemm:16x14336x4096,gemm:4x4096x14336,gemm:16x4096x14336,gemm:24x4096x14336
SH=$SH,gemm:9x4096x1536,gemm:16x4096x1536,gemm:9x4096x2048,gemm:16x4096x2048,gemm:16x5120x2048,gemm:16x4096x2560,gemm:9x6144x1536,gemm:8x4096x4096
SH=$SH,packed:1+0+1+1+1+1+2+2+0+0+2+0+0+0+0+0+0+1+0+0+0+0+1+0+0+1+0+0+0+1+1+0+0+0+1+0+0+0+1+0+0+2+0+0+0+1+0+0+2+0+2+3+0+0+0+1+0+0+0+0+0+0+3+0x2048x7168,packed:0+0+1+0+1+0+3+8+3+3+3+0+1+1+0+2+5+0+3+0+0+4+5+12+2+2+0+0+0+3+4+0+0+0+0+0+4+0+1+1+1+0+0+6+0+3+1+3+1+2+1+1+8+0+3+11+4+7+0+0+0+1+1+2x7168x2048,packed:4+2+5+3+8+2+1+20+11+9+2+6+7+1+24+2+8+5+0+10+7+30+11+2+12+13+21+5+4+4+1+6+7+17+10+1+12+9+5+6+23+0+12+1+10+26+2+12+22+4+34+7+4+3+0+6+1+2+0+2+6+21+0+1x2048x7168
build() { touch cpp/src/sm90/gemv/decode_plan.hpp cpp/src/sm90/gemv/decode_kernel.cuh cpp/src/sm90/gemv/decode_mma.cuh; python3 -m pip install --no-build-isolation --no-deps -e . > $OUT/build_$1.log 2>&1 || { tail $OUT/build_$1.log; exit 1; }; echo "== $1 built t=$(el)"; }
b() {
  timeout 150 python3 -m nvfp4 bench --quiet --reps 10 --shapes $SH > $OUT/b_$1.txt 2>&1
  grep -E "^(gemm|packed)" $OUT/b_$1.txt | grep -E "nvfp4  |cuBLAS bf16|grouped_mm" | cut -c1-60,75-110 | sed "s/^/[$1] /"
}
t() { timeout 200 python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_gpu_decode.py tests/test_gpu_packed_decode.py > $OUT/tests_$1.log 2>&1; echo "$1 tests rc $? t=$(el)"; tail -1 $OUT/tests_$1.log; grep -E "^FAILED" $OUT/tests_$1.log | head -5; }
build head; b head
sed -i 's/constexpr int kDecodeMinClusterStages = 3;/constexpr int kDecodeMinClusterStages = 2;/' $P; grep -q "kDecodeMinClusterStages = 2;" $P || exit 1
build ms2; b ms2
sed -i 's/constexpr int kDecodeMinClusterStages = 2;/constexpr int kDecodeMinClusterStages = 3;/' $P
git apply .scratch/s23/sc8d.patch || exit 1
build d2; b d2
sed -i 's/kDecodeDepth = 2;/kDecodeDepth = 3;/' $P; grep -q "kDecodeDepth = 3;" $P || exit 1
build d3; b d3; t d3
sed -i 's/kDecodeDepth = 3;/kDecodeDepth = 4;/' $P; grep -q "kDecodeDepth = 4;" $P || exit 1
build d4; b d4; t d4
sed -i 's/kDecodeDepth = 4;/kDecodeDepth = 2;/' $P
git apply -R .scratch/s23/sc8d.patch
echo "t=$(el)"
