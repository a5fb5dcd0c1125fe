#!/bin/bash
# Session 21: per-instruction warp stall samples (ncu SourceCounters) of the library's tile kernel
# (1024x2048x65536, normal build) and of the same loop in the harness (k_real), locked base clocks;
# CSV per SASS line under $OUT.
set -u
export OUT=${OUT:-/tmp/out} PYTHONUNBUFFERED=1 CMAKE_BUILD_PARALLEL_LEVEL=16 NVFP4_CUDA_ARCHS=90a
nvcc -DNVFP4_BUILDING_LIBRARY -Icpp/include -Icpp/src -isystem extern/cutlass/include -gencode arch=compute_90a,code=sm_90a -O3 -std=c++17 --expt-relaxed-constexpr -Xcudafe=--diag_suppress=177 -lineinfo .scratch/s21/mb_real.cu -o /tmp/mb_real 2>&1 | grep -v C7519 | head -5
S="--section SourceCounters --section WarpStateStats --metrics sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,gpu__time_duration.sum"
timeout 120 ncu --clock-control base -k regex:k_real --launch-skip 1 --launch-count 1 $S -o /tmp/rep_real /tmp/mb_real 512 128 2 > $OUT/ncu_real.log 2>&1
python3 -m pip install --no-build-isolation --no-deps -e . > $OUT/build.log 2>&1 || { tail $OUT/build.log; exit 1; }
timeout 180 ncu --clock-control base -k regex:"gemm_(persistent|predecoded|streamk)" --launch-skip 2 --launch-count 1 $S -o /tmp/rep_kernel \
  python3 .scratch/next21/ncu_mainloop.py 1024x2048x65536 > $OUT/ncu_kernel.log 2>&1
for r in real kernel; do
  ncu --import /tmp/rep_$r.ncu-rep --page source --csv --print-source sass > $OUT/src_$r.csv 2>$OUT/src_$r.err
  ncu --import /tmp/rep_$r.ncu-rep --page details 2>&1 | grep -E "hmma|duration|Warp Cycles|Stall" | head -20
  ls -la $OUT/src_$r.csv; head -c 600 $OUT/src_$r.csv; echo
done
