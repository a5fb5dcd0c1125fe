#!/bin/bash
set -u
export OUT=${OUT:-/tmp/out} PYTHONUNBUFFERED=1 CMAKE_BUILD_PARALLEL_LEVEL=16 NVFP4_CUDA_ARCHS=90a
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
python3 -m pip install --no-build-isolation --no-deps -e . > $OUT/build_memo.log 2>&1 || { tail $OUT/build_memo.log; exit 1; }; echo "memo built t=$(el)"
python3 .scratch/s24/host_time.py | sed 's/^/[memo] /'
timeout 150 python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_gpu_decode.py > $OUT/tests_memo.log 2>&1; echo "memo tests rc $? t=$(el)"; tail -1 $OUT/tests_memo.log
git apply -R .scratch/s24/p/memo.patch || exit 1
touch cpp/src/sm90/gemm_decode.cu; python3 -m pip install --no-build-isolation --no-deps -e . > $OUT/build_head.log 2>&1; echo "head built t=$(el)"
python3 .scratch/s24/host_time.py | sed 's/^/[head] /'
git apply .scratch/s24/p/memo.patch
echo "t=$(el)"
