#!/bin/bash
# Session 23, issue 22: the dense decode route choosing full (512 K) or fine (256 K) stages per shape
# (fine.patch = the working tree's change) against HEAD, graph + eager with cuBLAS, then decode tests.
set -u
export OUT=${OUT:-/tmp/out} PYTHONUNBUFFERED=1 CMAKE_BUILD_PARALLEL_LEVEL=16 NVFP4_CUDA_ARCHS=90a
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
SH=""
for m in 2 4 8 9 16 17 24 32; do SH="$SH,gemm:${m}x7168x7168"; done
for s in 4x4096x14336 16x4096x14336 24x4096x14336 4x14336x4096 16x14336x4096 4x4096x7168 16x4096x7168 8x5120x5120 16x6144x4096 \
         16x8192x8192 4x7168x2048 8x4096x4096 8x4096x8192 12x4096x6144 9x4096x1536 16x4096x1536 9x4096x2048 16x4096x2048 \
         16x5120x2048 16x4096x2560 9x6144x1536 2x4100x2080 24x7300x2080 28x4100x4096 9x4096x1024; do SH="$SH,gemm:$s"; done
SH=${SH#,}
build() { touch cpp/src/sm90/gemv/decode_plan.hpp cpp/src/sm90/gemv/decode_kernel.cuh cpp/src/sm90/gemv/decode_mma.cuh cpp/src/sm90/gemm_decode.cu; python3 -m pip install --no-build-isolation --no-deps -e . > $OUT/build_$1.log 2>&1 || { tail $OUT/build_$1.log; exit 1; }; echo "== $1 built t=$(el)"; }
b() { timeout 200 python3 -m nvfp4 bench --quiet --reps 10 --shapes $SH > $OUT/b_$1.txt 2>&1; echo "bench $1 rc $? t=$(el)"; }
build new; b new
timeout 240 python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_gpu_decode.py tests/test_gpu_packed_decode.py tests/test_gpu_dual_decode.py \
  > $OUT/tests_new.log 2>&1; echo "tests rc $? t=$(el)"; tail -1 $OUT/tests_new.log; grep -E "^FAILED" $OUT/tests_new.log | head -5
git apply -R .scratch/s23/fine.patch || exit 1
build head; b head
git apply .scratch/s23/fine.patch
python3 - <<'PY'
import os,re
o=os.environ['OUT']; rows={}
for v in ('head','new'):
    for l in open(f'{o}/b_{v}.txt'):
        if l.startswith('gemm') and (' nvfp4  ' in l or 'cuBLAS bf16' in l):
            f=l.split(); key=' '.join(f[1:4]); impl='bf16' if 'cuBLAS' in l else 'nvfp4'
            i=f.index('auto') if 'auto' in f else f.index('-')
            rows.setdefault(key,{})[(v,impl)]=(float(f[i+1]),float(f[i+2]), f[i+6] if impl=='nvfp4' else '')
print(f"{'shape':28s} {'head g/e':>12s} {'new g/e':>12s} {'new/head':>8s} {'t/SOL':>6s} {'bf16 g/e':>12s}")
for k,d in rows.items():
    h=d.get(('head','nvfp4')); n=d.get(('new','nvfp4')); c=d.get(('new','bf16'))
    if h and n: print(f"{k:28s} {h[0]:5.1f}/{h[1]:5.1f} {n[0]:5.1f}/{n[1]:5.1f} {n[0]/h[0]:8.3f} {n[2]:>6s} {c[0]:5.1f}/{c[1]:5.1f}")
PY
echo "t=$(el)"
