#!/bin/bash
# Session 28: the packed MoE kernel signals griddepcontrol.launch_dependents at its start (trigger_moe.patch, applied
# in the working tree this runs on). Patched build: grouped GPU tests, bench; then the patch reversed, rebuilt, bench;
# then patched again (second round, same machine) to see the run-to-run spread.
#   run(command="bash bench/results/nvidia-h100/session28/trigger/run_trigger.sh", carry=["extern/cutlass"], kind="nvidia-h100-x1")
set -u
export OUT=${OUT:-/tmp/out} PYTHONUNBUFFERED=1 CMAKE_BUILD_PARALLEL_LEVEL=16 NVFP4_CUDA_ARCHS=90a
D=bench/results/nvidia-h100/session28/trigger_moe
SHAPES=packed:64x256x512,packed:80+176+128+72+64+248+96+160x4096x7168,packed:40+76+168+72+164+148+196+160x7168x2048,packed:192+320x3072x4096,packed:128+384x4096x1536
build() { python3 -m pip install --no-build-isolation --no-deps -e . > $OUT/build_$1.log 2>&1 || { grep -E "error" $OUT/build_$1.log | head; exit 1; }; }
bench() { timeout 150 python3 -m nvfp4 bench --quiet --reps 20 --shapes $SHAPES > $OUT/bench_$1.txt 2>&1; grep -E "^packed" $OUT/bench_$1.txt | grep -v "G=1 " | sed "s/^/$1 /"; }
t0=$(date +%s)
build t1; echo "build $(( $(date +%s) - t0 )) s"
timeout 120 python3 -m pytest -q -p no:cacheprovider tests/test_gpu_grouped_persistent.py tests/test_gpu_packed_tiled.py 2>&1 | tail -2 | tee $OUT/tests.txt
bench t1
git apply -R $D/trigger_moe.patch || { echo "patch -R failed"; exit 1; }
build base; bench base
git apply $D/trigger_moe.patch
build t2; bench t2
echo "total $(( $(date +%s) - t0 )) s"
