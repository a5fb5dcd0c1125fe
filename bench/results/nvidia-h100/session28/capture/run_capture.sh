#!/bin/bash
# PREPARED IN SESSION 28, NOT RUN (~3 min): what the graph memory nodes cost. Under stream capture the library's
# cached-mode scratch is a graph allocation per call (cpp/src/workspace_cache.cpp: cudaMallocAsync + cudaFreeAsync
# inside the capture), so every captured call that needs a workspace (pre-decoded gemm, dual, grouped, packed MoE)
# adds a MemAlloc and a MemFree node around its kernels, and consecutive calls' kernels are no longer direct
# (programmatic) neighbours in the graph. capture_probe.patch (scratch, env-gated: NVFP4_PROBE_CAPTURE_BUFFER=1)
# gives every capture one plain buffer per stream instead (unsafe in general; enough to time). Same build, bench
# processes interleaved: base, probe, base, probe. If the probe rows are faster, the graph timings (and users'
# captured graphs) pay for the memory nodes and a graph-owned buffer per capture (a cudaUserObject that frees it
# with the graph) is the design to build. Then the variance probe (listpacked/variance_probe.py).
#   run(command="bash bench/results/nvidia-h100/session28/capture/run_capture.sh", carry=["extern/cutlass"], kind="nvidia-h100-x1")
set -u
export OUT=${OUT:-/tmp/out} PYTHONUNBUFFERED=1 CMAKE_BUILD_PARALLEL_LEVEL=16 NVFP4_CUDA_ARCHS=90a
D=bench/results/nvidia-h100/session28/capture
git apply $D/capture_probe.patch || exit 1
python3 -m pip install --no-build-isolation --no-deps -e . > $OUT/build.log 2>&1 || { grep error $OUT/build.log | head; exit 1; }
S=gemm:128x4096x7168,grouped:128+384x4096x1536,packed:128+384x4096x1536,grouped:192+320x3072x4096,dual:256x4096x7168,gemm:128x7168x2048,gemm:4x7168x7168
for r in 1 2; do
  for mode in base probe; do
    if [ $mode = probe ]; then export NVFP4_PROBE_CAPTURE_BUFFER=1; else unset NVFP4_PROBE_CAPTURE_BUFFER; fi
    timeout 90 python3 -m nvfp4 bench --quiet --reps 20 --shapes gemm:128x4096x7168,$S > $OUT/b_${mode}_$r.txt 2>&1
    grep -E "nvfp4 +auto" $OUT/b_${mode}_$r.txt | sed "s/^/$mode$r /"
  done
done
unset NVFP4_PROBE_CAPTURE_BUFFER
timeout 120 python3 bench/results/nvidia-h100/session28/listpacked/variance_probe.py 2>&1 | tee $OUT/variance.txt
git apply -R $D/capture_probe.patch
