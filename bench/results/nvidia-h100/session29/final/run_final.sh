#!/bin/bash
# Session 29: issue 21 in one run (device named by the bench header): the main job (every problem, graph and eager,
# peers in the same process), the packed API on the same four grouped cases, the grouped problems again (a second
# round for the last case's margin), and bench/overhead.py's host rows (G = 1 / 8 / 64, with the describe and the
# new read-only floors). Then the hook tests.
set -u
export OUT=${OUT:-/tmp/out} PYTHONUNBUFFERED=1 CMAKE_BUILD_PARALLEL_LEVEL=16 NVFP4_CUDA_ARCHS=90a
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
python3 -m pip install --no-build-isolation --no-deps -e . > $OUT/build.log 2>&1 || { grep -i error $OUT/build.log | head; exit 1; }
echo "built t=$(el)"
timeout 300 python3 -m nvfp4 bench --quiet --reps 20 --json $OUT/main_job.json > $OUT/main_job.txt 2>&1; echo "main job rc $? t=$(el)"
timeout 120 python3 -m nvfp4 bench --quiet --reps 20 --problems packed,grouped > $OUT/grouped_packed.txt 2>&1; echo "packed+grouped rc $? t=$(el)"
timeout 150 python3 bench/overhead.py --frameworks torch > $OUT/overhead.txt 2>&1; echo "overhead rc $? t=$(el)"
timeout 60 python3 -m pytest -q -p no:cacheprovider tests/test_validation.py -k "arrays_hook" > $OUT/hooks.txt 2>&1; tail -1 $OUT/hooks.txt
head -3 $OUT/main_job.txt
grep -E "^(grouped|packed)" $OUT/main_job.txt $OUT/grouped_packed.txt | cut -c1-140
grep -E "grouped|matmul|x \+ x|empty" $OUT/overhead.txt
