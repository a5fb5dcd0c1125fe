#!/bin/bash
# Session 29: the main job with the interleaved harness (Timer.time_many), twice, and the packed + grouped problems.
set -u
export OUT=${OUT:-/tmp/out} PYTHONUNBUFFERED=1 CMAKE_BUILD_PARALLEL_LEVEL=16 NVFP4_CUDA_ARCHS=90a
python3 -m pip install --no-build-isolation --no-deps -e . > $OUT/build.log 2>&1 || { grep -i error $OUT/build.log | head; exit 1; }
for r in 1 2; do
  timeout 300 python3 -m nvfp4 bench --quiet --reps 20 --json $OUT/main_job_i$r.json > $OUT/main_job_i$r.txt 2>&1; echo "main job $r rc $?"
done
timeout 120 python3 -m nvfp4 bench --quiet --reps 20 --problems packed,grouped > $OUT/grouped_packed_i.txt 2>&1; echo "packed+grouped rc $?"
timeout 60 python3 -m pytest -q -p no:cacheprovider tests/test_timing.py 2>&1 | tail -1
head -2 $OUT/main_job_i1.txt | cut -c1-150
for f in $OUT/main_job_i1.txt $OUT/main_job_i2.txt $OUT/grouped_packed_i.txt; do echo "== $f"; grep -E "^(gemv|gemm|dual|grouped|packed) " $f | grep -E "nvfp4  |cuBLAS|grouped_mm" | cut -c1-128; done
grep -E "eager floor|ERROR|error" $OUT/main_job_i1.txt | head -5
