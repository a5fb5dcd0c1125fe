#!/bin/bash
# Session 26 call 5: the byte-wise word decode (decode_word_scaled) in the tiled GEMMs' fragments
# (wordscaled.patch, applied in the tree as sent) against HEAD's pair decode: A (HEAD), B (patch), A again.
set -u
export OUT=${OUT:-/tmp/out} PYTHONUNBUFFERED=1 CMAKE_BUILD_PARALLEL_LEVEL=16 NVFP4_CUDA_ARCHS=90a
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
N=.scratch/next26
git apply $N/decode_env.patch || exit 1
build() { python3 -m pip install --no-build-isolation --no-deps -e . > $OUT/build_$1.log 2>&1 || { tail $OUT/build_$1.log; exit 1; }; echo "== $1 built t=$(el)"; }
SH="gemm:4x7168x7168,gemm:32x7168x7168,gemm:64x7168x7168,gemm:32x4096x14336,gemm:96x7168x7168,gemm:256x7168x7168,gemm:1024x7168x7168,gemm:4096x7168x7168,gemm:4096x4096x4096,gemm:2048x14336x4096,dual:64x4096x7168,dual:256x4096x7168,dual:512x4096x7168"
bench() { NVFP4_DECODE_MAX=1 timeout 150 python3 -m nvfp4 bench --quiet --reps 10 --shapes $SH > $OUT/b_$1.txt 2>&1; echo "bench $1 rc $? t=$(el)"; }
git apply -R $N/wordscaled.patch || exit 1
build A; bench A1
git apply $N/wordscaled.patch || exit 1
build B; bench B
so=$(find build -name 'libnvfp4*.so*' | head -1); echo "lib $so"
python3 tools/check_wgmma_sass.py $so > $OUT/check_sass.txt 2>&1; echo "check_wgmma_sass rc $?"; tail -5 $OUT/check_sass.txt
timeout 200 python3 -m pytest -q -m gpu -p no:cacheprovider -x tests/test_gpu_gemm.py tests/test_gpu_dual_fused.py tests/test_gpu_precision.py > $OUT/tests.log 2>&1
echo "tests rc $? t=$(el)"; tail -1 $OUT/tests.log; grep -E "^FAILED" $OUT/tests.log | head -5
git apply -R $N/wordscaled.patch; build A2; bench A2
python3 - $OUT/b_A1.txt $OUT/b_B.txt $OUT/b_A2.txt <<'PY'
import re, sys
def rows(p):
    d = {}
    for l in open(p):
        m = re.match(r"(\w+)\s+(M=\S+ N=\S+ K=\S+(?: L=\S+)?)\s+nvfp4\s+\S+\s+([\d.]+)\s+([\d.]+)", l)
        c = re.match(r"(\w+)\s+(M=\S+ N=\S+ K=\S+(?: L=\S+)?)\s+cuBLAS bf16\s+-\s+([\d.]+)\s+([\d.]+)", l)
        if m: d[(m[1], m[2])] = (float(m[3]), float(m[4]))
        if c: d[(c[1], c[2], 'cub')] = (float(c[3]), float(c[4]))
    return d
a1, b, a2 = (rows(p) for p in sys.argv[1:4])
print(f"{'shape':34s} {'A1 g/e':>13s} {'B g/e':>13s} {'A2 g/e':>13s}  B/A  cuBLAS A1/B/A2")
for k in a1:
    if len(k) == 3 or k not in b or k not in a2: continue
    cb = [x.get(k + ('cub',), (0, 0))[0] for x in (a1, b, a2)]
    am = (a1[k][0] + a2[k][0]) / 2
    print(f"{k[0] + ' ' + k[1]:34s} {a1[k][0]:6.1f}/{a1[k][1]:6.1f} {b[k][0]:6.1f}/{b[k][1]:6.1f} {a2[k][0]:6.1f}/{a2[k][1]:6.1f} {b[k][0] / am:5.3f}  {cb[0]:.1f}/{cb[1]:.1f}/{cb[2]:.1f}")
PY
git apply -R $N/decode_env.patch; echo "t=$(el)"
