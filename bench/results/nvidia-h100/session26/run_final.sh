#!/bin/bash
# Session 26 call 7: the redrawn decode bounds (decode_weights_fit after the 32-token tile's byte-wise decode):
# default routes against NVFP4_DECODE_MAX=1 on the boundary shapes; test_gpu_decode; the decode suite (fp8 peer).
set -u
export OUT=${OUT:-/tmp/out} PYTHONUNBUFFERED=1 CMAKE_BUILD_PARALLEL_LEVEL=16 NVFP4_CUDA_ARCHS=90a
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
N=.scratch/next26
git apply $N/decode_env.patch || exit 1
python3 -m pip install --no-build-isolation --no-deps -e . > $OUT/build.log 2>&1 || { tail $OUT/build.log; exit 1; }
echo "built t=$(el)"
SH=""
for nk in 7168x7168 14336x4096 7168x4096 4096x7168 4096x4096 14336x2048 14336x7168 4096x14336; do for m in 17 24 25 32; do SH="$SH,gemm:${m}x${nk}"; done; done
SH=${SH#,}
timeout 100 python3 -m nvfp4 bench --quiet --reps 5 --shapes $SH > $OUT/b_route.txt 2>&1; echo "route rc $? t=$(el)"
NVFP4_DECODE_MAX=1 timeout 100 python3 -m nvfp4 bench --quiet --reps 5 --shapes $SH > $OUT/b_tiled.txt 2>&1; echo "tiled rc $? t=$(el)"
NVFP4_DECODE_MAX=32 timeout 100 python3 -m nvfp4 bench --quiet --reps 5 --shapes $SH > $OUT/b_decode.txt 2>&1; echo "decode rc $? t=$(el)"
python3 - $OUT/b_route.txt $OUT/b_tiled.txt $OUT/b_decode.txt <<'PY' | tee $OUT/route3.txt
import re, sys
def rows(p):
    d = {}
    for l in open(p):
        m = re.match(r"gemm\s+M=(\d+) N=(\d+) K=(\d+)\s+nvfp4\s+auto\s+([\d.]+)\s+([\d.]+)", l)
        if m: d[tuple(map(int, m.groups()[:3]))] = (float(m[4]), float(m[5]))
    return d
r, t, d = (rows(p) for p in sys.argv[1:4])
print(f"{'M':>3} {'N':>6} {'K':>6}  default g/e     tiled g/e     decode g/e   default/best")
for k in sorted(r, key=lambda k: (k[1], k[2], k[0])):
    best = min(t.get(k, (1e9,))[0], d.get(k, (1e9,))[0])
    print(f"{k[0]:>3} {k[1]:>6} {k[2]:>6}  {r[k][0]:6.1f}/{r[k][1]:6.1f} {t[k][0]:6.1f}/{t[k][1]:6.1f} {d[k][0]:6.1f}/{d[k][1]:6.1f}  {r[k][0] / best:5.2f}")
PY
timeout 150 python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_gpu_decode.py > $OUT/tests.log 2>&1
echo "tests rc $? t=$(el)"; tail -1 $OUT/tests.log; grep -E "^FAILED|^ERROR" $OUT/tests.log | head -8
timeout 200 python3 bench/run.py --suites decode --max-minutes 3 --reps 5 --no-plots --out $OUT/suite > $OUT/suite.log 2>&1
echo "suite rc $? t=$(el)"; grep -E "^\s*(gemm|\|)" $OUT/suite.log | head -5
git apply -R $N/decode_env.patch
