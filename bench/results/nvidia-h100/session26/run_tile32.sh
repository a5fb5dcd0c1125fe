#!/bin/bash
# Session 26 call 6: the byte-wise decode in the 32-token tile only (tile32_bytewise.patch, in the tree as sent)
# against HEAD; per-function SASS diff; GPU tests of the changed kernels and of the redrawn decode routes.
set -u
export OUT=${OUT:-/tmp/out} PYTHONUNBUFFERED=1 CMAKE_BUILD_PARALLEL_LEVEL=16 NVFP4_CUDA_ARCHS=90a
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
N=.scratch/next26
build() { python3 -m pip install --no-build-isolation --no-deps -e . > $OUT/build_$1.log 2>&1 || { tail $OUT/build_$1.log; exit 1; }; echo "== $1 built t=$(el)"; }
SH="gemm:4x7168x7168,gemm:16x7168x7168,gemm:32x7168x7168,gemm:32x4096x14336,gemm:32x14336x4096,gemm:64x7168x7168,gemm:32x2048x16384,dual:32x4096x7168,dual:32x14336x4096"
bench() { NVFP4_DECODE_MAX=1 timeout 100 python3 -m nvfp4 bench --quiet --reps 10 --shapes $SH > $OUT/b_$1.txt 2>&1; echo "bench $1 rc $? t=$(el)"; }
sass() { cuobjdump -sass $(find build -name 'libnvfp4.so*' -type f | head -1) > /tmp/sass_$1.txt; python3 $N/sass_split.py /tmp/sass_$1.txt | sort -k3 > $OUT/sass_$1.md5; }
git apply -R $N/tile32_bytewise.patch || exit 1
git apply $N/decode_env.patch || exit 1
build A; bench A; sass A
git apply $N/tile32_bytewise.patch || exit 1
build C; bench C; sass C
echo "functions whose SASS differs:"; join -1 3 -2 3 $OUT/sass_A.md5 $OUT/sass_C.md5 | awk '$2 != $4 {print "  ", $1, $3, "->", $5}' | c++filt | cut -c1-200
python3 tools/check_wgmma_sass.py $(find build -name 'libnvfp4.so*' -type f | head -1) > $OUT/check_sass.txt 2>&1; echo "check_wgmma_sass rc $?"; grep -c FAIL $OUT/check_sass.txt
git apply -R $N/decode_env.patch
build C2
timeout 330 python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_gpu_gemm.py tests/test_gpu_dual_fused.py tests/test_gpu_decode.py tests/test_gpu_packed_decode.py tests/test_sass_wgmma.py > $OUT/tests.log 2>&1
echo "tests rc $? t=$(el)"; tail -1 $OUT/tests.log; grep -E "^FAILED|^ERROR" $OUT/tests.log | head -8
python3 - $OUT/b_A.txt $OUT/b_C.txt <<'PY'
import re, sys
def rows(p):
    d = {}
    for l in open(p):
        m = re.match(r"(\w+)\s+(M=\S+ N=\S+ K=\S+)\s+(nvfp4|cuBLAS bf16)\s+\S+\s+([\d.]+)\s+([\d.]+)", l)
        if m: d[(m[1], m[2], m[3])] = (float(m[4]), float(m[5]))
    return d
a, c = rows(sys.argv[1]), rows(sys.argv[2])
for k in a:
    if k in c: print(f"{k[0]} {k[1]:24s} {k[2]:12s} A {a[k][0]:6.1f}/{a[k][1]:6.1f}  C {c[k][0]:6.1f}/{c[k][1]:6.1f}  C/A {c[k][0] / a[k][0]:.3f}")
PY
echo "t=$(el)"
