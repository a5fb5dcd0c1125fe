#!/bin/bash
# PREPARED IN SESSION 24, NOT RUN. Issue 22: the 64- and 32-token instances of the split-K pre-decoded GEMM
# (branch tiny-tile = small-tile + the 32 instance; tiny_tile.patch = its cpp changes, tiny_tile_tests.patch =
# tests / smoke / docs). Call 1 of 2 (performance): HEAD, then tiny-tile with the routes as planned (33..64
# tokens -> the 64 tile; the decode kernel keeps 2..32 on >= 4096 rows), then tiny-tile with the decode route
# capped by the scratch hook route_env.patch (NVFP4_DECODE_MAX=1: 3..32 tokens -> the 32 tile) to compare the
# tiled 32 against the decode kernel on the rows; last four shapes where plan_gemm's small-tile
# fallback decides (NVFP4_NO_SMALL_FALLBACK=1 keeps the lone-CTA small plan). Graph + eager, cuBLAS bf16
# beside; 65..128 tokens as one 128-token tile or two 64-token tiles (NVFP4_SMALL_MAX=128). ~8 min.
#   run(command="bash .scratch/next25/run_tiles.sh", carry=[".scratch/next25", "extern/cutlass"], kind="nvidia-h100-x1")
# Then run_tiles_validate.sh (tests, sanitizers) on the same machine.
set -u
export OUT=${OUT:-/tmp/out} PYTHONUNBUFFERED=1 CMAKE_BUILD_PARALLEL_LEVEL=16 NVFP4_CUDA_ARCHS=90a
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
SH=""
for nk in 7168x7168 4096x14336 14336x4096; do for m in 4 16 17 32 48 64 65; do SH="$SH,gemm:${m}x$nk"; done; done
SH=${SH#,},gemm:40x4096x16384,gemm:32x2048x16384,gemm:64x2048x8192
build() { touch cpp/src/sm90/gemm.cu cpp/src/sm90/gemm_decode.cu; python3 -m pip install --no-build-isolation --no-deps -e . > $OUT/build_$1.log 2>&1 || { tail $OUT/build_$1.log; exit 1; }; echo "== $1 built t=$(el)"; }
b() {
  timeout 200 python3 -m nvfp4 bench --quiet --reps 10 --shapes $SH > $OUT/b_$1.txt 2>&1
  echo "bench $1 rc $? t=$(el)"
  grep -E "^gemm" $OUT/b_$1.txt | grep -E "nvfp4  |cuBLAS bf16" | awk -v t=$1 '{print "["t"]", $2, $3, $4, $5, $6, $7, $8, $12}' | cut -c1-100
}
build head; b head
N=.scratch/next25
git apply $N/tiny_tile.patch && git apply $N/tiny_tile_tests.patch && git apply $N/route_env.patch || exit 1
build tiles; b tiles
NVFP4_DECODE_MAX=1 b tiled32
# 65..128 tokens: the 128-token tile (default) against two 64-token tiles (NVFP4_SMALL_MAX=128: the weights
# read twice, each block memory-bound) -- the small tile otherwise leaves a 64 -> 65 step
SH=gemm:65x7168x7168,gemm:96x7168x7168,gemm:128x7168x7168,gemm:96x4096x14336,gemm:96x14336x4096
b t128; NVFP4_SMALL_MAX=128 b two64
# the lone-CTA small plan against the 128-token stream-K fallback (kSmallTileMaxBlockRatio, unmeasured)
SH=gemm:8500x64x4096,gemm:8500x33x7168,gemm:64x7168x14336,gemm:8500x64x2048
b fallback; NVFP4_NO_SMALL_FALLBACK=1 b lone
git apply -R $N/route_env.patch && git apply -R $N/tiny_tile_tests.patch && git apply -R $N/tiny_tile.patch
echo "t=$(el)"
