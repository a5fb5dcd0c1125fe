#!/bin/bash
# PREPARED IN SESSION 28, NOT RUN (~6 min): what the graph memory nodes cost, and the design that removes them. Under stream capture the library's
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
# The design itself (capture_owned.patch, also PREPARED, NOT RUN; compiled, host code only): one buffer per
# (thread, device, capture, stream) owned by the captured graph through a cudaUserObject whose destructor queues it
# for cudaFree at the next acquire outside a capture. Its tests (graph capture, replays, two streams in one
# capture, torch.compile / JAX command buffers), then the same rows.
git apply $D/capture_owned.patch || exit 1
python3 -m pip install --no-build-isolation --no-deps -e . > $OUT/build_owned.log 2>&1 || { grep error $OUT/build_owned.log | head; exit 1; }
timeout 300 python3 -m pytest -q -p no:cacheprovider tests/test_gpu_host_path.py tests/test_torch_ops.py \
  tests/test_gpu_grouped_persistent.py tests/test_jax_ffi.py tests/test_gpu_frameworks.py 2>&1 | tail -4 | tee $OUT/tests_owned.txt
for r in 1 2; do
  timeout 90 python3 -m nvfp4 bench --quiet --reps 20 --shapes gemm:128x4096x7168,$S > $OUT/b_owned_$r.txt 2>&1
  grep -E "nvfp4 +auto" $OUT/b_owned_$r.txt | sed "s/^/owned$r /"
done
git apply -R $D/capture_owned.patch
