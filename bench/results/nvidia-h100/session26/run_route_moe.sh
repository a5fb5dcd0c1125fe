#!/bin/bash
# Session 26 call 3. (a) decode route vs small tiles (run_route_sweep.sh body); (b) the MoE decode route's
# bound: top-8 of 128 / 192 / 256 tokens over 64 experts (means 16 / 24 / 32) on the decode route (HEAD)
# against the tiled route (kPackedDecodeMeanRows = 8 rebuilt).
set -u
export OUT=${OUT:-/tmp/out} PYTHONUNBUFFERED=1 CMAKE_BUILD_PARALLEL_LEVEL=16 NVFP4_CUDA_ARCHS=90a
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
N=.scratch/next26
git apply $N/decode_env.patch || exit 1
python3 -m pip install --no-build-isolation --no-deps -e . > $OUT/build.log 2>&1 || { tail $OUT/build.log; exit 1; }
echo "built t=$(el)"
MOE=$(cd bench && python3 -c "
from run import moe_routing
print(','.join(f\"packed:{'+'.join(map(str, moe_routing(t, 64)))}x{n}x{k}\" for t in (128, 192, 256) for n, k in ((2048, 7168), (7168, 2048))))")
timeout 120 python3 -m nvfp4 bench --quiet --reps 10 --shapes $MOE > $OUT/moe_decode.txt 2>&1; echo "moe decode rc $? t=$(el)"
SH=""
for n in 2048 4096 7168 14336; do for k in 1024 2048 4096 7168 14336; do for m in 4 8 16 17 24 32; do
  SH="$SH,gemm:${m}x${n}x${k}"; done; done; done
SH=${SH#,}
timeout 200 python3 -m nvfp4 bench --quiet --reps 5 --shapes $SH > $OUT/b_route.txt 2>&1; echo "route rc $? t=$(el)"
NVFP4_DECODE_MAX=1 timeout 200 python3 -m nvfp4 bench --quiet --reps 5 --shapes $SH > $OUT/b_tiled.txt 2>&1
echo "tiled rc $? t=$(el)"
python3 $N/route_compare.py $OUT/b_route.txt $OUT/b_tiled.txt > $OUT/route_compare.txt; tail -40 $OUT/route_compare.txt
sed -i 's/constexpr int64_t kPackedDecodeMeanRows = 32;/constexpr int64_t kPackedDecodeMeanRows = 8;/' cpp/src/sm90/packed_plan.hpp
python3 -m pip install --no-build-isolation --no-deps -e . > $OUT/build2.log 2>&1 || { tail $OUT/build2.log; exit 1; }
echo "rebuilt mean8 t=$(el)"
timeout 120 python3 -m nvfp4 bench --quiet --reps 10 --shapes $MOE > $OUT/moe_tiled.txt 2>&1; echo "moe tiled rc $? t=$(el)"
paste <(awk '$1 ~ /packed/ || /nvfp4/' $OUT/moe_decode.txt | cut -c1-200) /dev/null | head -20
echo ---; awk '$1 ~ /packed/ || /nvfp4/' $OUT/moe_tiled.txt | cut -c1-200 | head -20
git checkout cpp/src/sm90/packed_plan.hpp; git apply -R $N/decode_env.patch
echo "t=$(el)"
