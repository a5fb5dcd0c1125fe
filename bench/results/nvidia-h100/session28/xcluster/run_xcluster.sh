#!/bin/bash
# Session 28: cluster-decoded tokens in the grouped list kernel (xcluster.patch = the change against 6f543c0's cpp/).
# Patched tree first: build, GPU tests of the grouped kernels, compute-sanitizer on the new instance, SASS of it, bench;
# then the patch reversed (the baseline), rebuilt, the same bench.
#   run(command="bash bench/results/nvidia-h100/session28/xcluster/run_xcluster.sh", carry=["extern/cutlass"], kind="nvidia-h100-x1")
set -u
export OUT=${OUT:-/tmp/out} PYTHONUNBUFFERED=1 CMAKE_BUILD_PARALLEL_LEVEL=16 NVFP4_CUDA_ARCHS=90a
D=bench/results/nvidia-h100/session28/xcluster
SHAPES=grouped:64x256x512,grouped:192+320x3072x4096,grouped:128+384x4096x1536,grouped:128+384x4096x3072,grouped:256+256x4096x2048,grouped:64+64+64+64+64+64+64+64x2048x1024,grouped:128+384x4096x1536
build() { python3 -m pip install --no-build-isolation --no-deps -e . > $OUT/build_$1.log 2>&1 || { grep -E "error" $OUT/build_$1.log | head; exit 1; }; }
bench() { timeout 200 python3 -m nvfp4 bench --quiet --reps 20 --shapes $SHAPES > $OUT/bench_$1.txt 2>&1; grep -E "^grouped" $OUT/bench_$1.txt | sed "s/^/$1 /"; }
t0=$(date +%s)
build x; echo "build x $(( $(date +%s) - t0 )) s"
timeout 240 python3 -m pytest -q -x -p no:cacheprovider tests/test_gpu_grouped_persistent.py tests/test_gpu_grouped_gemm.py 2>&1 | tail -4 | tee $OUT/tests.txt
for tool in memcheck racecheck synccheck; do
  timeout 120 compute-sanitizer --tool $tool --error-exitcode 9 python3 $D/san_xcluster.py > $OUT/san_$tool.log 2>&1
  echo "$tool exit $? : $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $OUT/san_$tool.log | tail -1)"; tail -1 $OUT/san_$tool.log
done
so=$(find build -name "_nvfp4*.so" -o -name "libnvfp4*.so" | head -1); cuobjdump -sass $so 2>/dev/null > /tmp/all.sass
awk '/Function : .*grouped_gemm_kernelILb0ELb1E/{f=1} /Function : /{if(!/ILb0ELb1E/)f=0} f' /tmp/all.sass > $OUT/xcluster.sass
echo "SASS of <false,true>: $(wc -l < $OUT/xcluster.sass) lines, HGMMA $(grep -c HGMMA $OUT/xcluster.sass), LDL/STL $(grep -cE 'LDL|STL' $OUT/xcluster.sass), UCGABAR $(grep -c UCGABAR $OUT/xcluster.sass)"
bench x
git apply -R $D/xcluster.patch || { echo "patch -R failed"; exit 1; }
build base; echo "build base done $(( $(date +%s) - t0 )) s"
bench base
git apply $D/xcluster.patch
echo "total $(( $(date +%s) - t0 )) s"
