#!/bin/bash
# Session 23: fine-stage token tiles of 64 KB (tile.patch: 64 chunks for 1-2 token groups, 32 for 3-4) against HEAD,
# then the same with kDecodeFineCost = 0 (the model takes fine stages wherever they tie); decode tests on tile.
set -u
export OUT=${OUT:-/tmp/out} PYTHONUNBUFFERED=1 CMAKE_BUILD_PARALLEL_LEVEL=16 NVFP4_CUDA_ARCHS=90a
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
P=cpp/src/sm90/gemv/decode_plan.hpp
SH=""
for s in 9x7168x7168 16x7168x7168 17x7168x7168 24x7168x7168 32x7168x7168 16x4096x14336 24x4096x14336 32x4096x14336 \
         16x14336x4096 24x14336x4096 32x14336x4096 24x4096x7168 24x4096x2048 32x4096x2048 24x5120x5120 4x7168x7168; do SH="$SH,gemm:$s"; done
SH=${SH#,}
build() { touch $P cpp/src/sm90/gemm_decode.cu; python3 -m pip install --no-build-isolation --no-deps -e . > $OUT/build_$1.log 2>&1 || { tail $OUT/build_$1.log; exit 1; }; echo "== $1 built t=$(el)"; }
b() { timeout 150 python3 -m nvfp4 bench --quiet --reps 10 --shapes $SH > $OUT/b_$1.txt 2>&1; echo "bench $1 rc $? t=$(el)"; }
build head; b head
git apply .scratch/s23/tile.patch || exit 1
build tile; b tile
timeout 150 python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_gpu_decode.py > $OUT/tests_tile.log 2>&1; echo "tests rc $? t=$(el)"; tail -1 $OUT/tests_tile.log; grep -E "^FAILED" $OUT/tests_tile.log | head -5
sed -i 's/constexpr double kDecodeFineCost = 0.06;/constexpr double kDecodeFineCost = 0.0;/' $P; grep -q "kDecodeFineCost = 0.0;" $P || exit 1
build tile0; b tile0
sed -i 's/constexpr double kDecodeFineCost = 0.0;/constexpr double kDecodeFineCost = 0.06;/' $P
git apply -R .scratch/s23/tile.patch
python3 - <<'PY'
import os
o=os.environ['OUT']; rows={}; vs=('head','tile','tile0')
for v in vs:
    for l in open(f'{o}/b_{v}.txt'):
        if l.startswith('gemm') and (' nvfp4  ' in l or 'cuBLAS bf16' in l):
            f=l.split(); key=' '.join(f[1:4]); impl='bf16' if 'cuBLAS' in l else 'nvfp4'
            i=f.index('auto') if 'auto' in f else f.index('-')
            rows.setdefault(key,{})[(v,impl)]=(float(f[i+1]),float(f[i+2]))
print(f"{'shape':24s}" + ''.join(f"{v+' g/e':>14s}" for v in vs) + f"{'bf16 g/e':>14s}")
for k,d in rows.items():
    print(f"{k:24s}" + ''.join(f"{d[(v,'nvfp4')][0]:7.1f}/{d[(v,'nvfp4')][1]:5.1f}" if (v,'nvfp4') in d else ' '*14 for v in vs)
          + (f"{d[('head','bf16')][0]:7.1f}/{d[('head','bf16')][1]:5.1f}" if ('head','bf16') in d else ''))
PY
echo "t=$(el)"
