#!/bin/bash
# Session 21: what in the kernel's surroundings costs the 5 points: k_real (the library's loop in the
# harness) at 132 / 128 CTAs, launched plainly / with the library's cluster and PDL attributes; then
# the library's tile kernel in session 20's diagnostic mode 4 (no loads, no barriers after the first
# ring pass), all at locked base clocks.
set -u
export OUT=${OUT:-/tmp/out} PYTHONUNBUFFERED=1 CMAKE_BUILD_PARALLEL_LEVEL=16 NVFP4_CUDA_ARCHS=90a
nvidia-smi --query-gpu=name --format=csv,noheader
nvcc -DNVFP4_BUILDING_LIBRARY -Icpp/include -Icpp/src -isystem extern/cutlass/include -gencode arch=compute_90a,code=sm_90a -O3 -std=c++17 --expt-relaxed-constexpr -Xcudafe=--diag_suppress=177 -lineinfo .scratch/s21/mb_real.cu -o /tmp/mb_real 2>&1 | grep -v C7519 | head -5
M=gpu__time_duration.sum,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,sm__cycles_elapsed.avg.per_second
for args in "1024 0 0" "1024 128 0" "1024 128 1" "1024 128 2" "512 128 2"; do
  timeout 60 ncu --clock-control base -k regex:k_real --launch-skip 1 --launch-count 1 --metrics $M /tmp/mb_real $args 2>&1 | grep -E "duration|hmma|ERR" | awk -v a="$args" '{print "real", a, $1, $NF}'
done
git apply .scratch/s20/diag_mode.patch && sed -i 's/constexpr int kDiagMode = 0;/constexpr int kDiagMode = 4;/' cpp/src/sm90/collective/mainloop_rs.cuh && grep -n "kDiagMode = " cpp/src/sm90/collective/mainloop_rs.cuh
python3 -m pip install --no-build-isolation --no-deps -e . > $OUT/build.log 2>&1 || { tail $OUT/build.log; exit 1; }
for spec in 1024x2048x65536 1024x2048x16384; do
timeout 90 ncu --clock-control base -k regex:"gemm_(persistent|predecoded|streamk)" --launch-skip 2 --launch-count 1 --metrics $M \
  python3 .scratch/next21/ncu_mainloop.py $spec 2>&1 | grep -E "duration|hmma|ERR|predecoded|persistent|backend|x" | awk -v s=$spec '{print "diag4", s, $0}' | cut -c1-200
done
git checkout cpp/src/sm90/collective/
