#!/bin/bash
# PREPARED IN SESSION 23, NOT RUN. Issue 22: where the decode kernel's cycles go, per source line (ncu source
# counters + warp-state sampling) on 7168^2 M = 4 (fine stages, clusters of 4) and 4096x14336 M = 4 (full stages,
# clusters of 7). Build with -lineinfo so the SASS maps to decode_kernel.cuh / decode_mma.cuh lines. ~2-3 min.
#   run(command="bash .scratch/next24/run_ncu_source.sh", carry=[".scratch/next24", "extern/cutlass"], kind="nvidia-h100-x1")
set -u
export OUT=${OUT:-/tmp/out} PYTHONUNBUFFERED=1 CMAKE_BUILD_PARALLEL_LEVEL=16 NVFP4_CUDA_ARCHS=90a
export CMAKE_ARGS="${CMAKE_ARGS:-} -DCMAKE_CUDA_FLAGS=-lineinfo"
touch cpp/src/sm90/gemm_decode.cu
python3 -m pip install --no-build-isolation --no-deps -e . > $OUT/build.log 2>&1 || { tail $OUT/build.log; exit 1; }
timeout 300 ncu -k regex:gemm_decode_kernel --launch-count 2 --set full --import-source yes \
  --section SourceCounters --section WarpStateStats -o $OUT/decode_src python3 .scratch/next24/ncu_src.py > $OUT/ncu.log 2>&1
echo "ncu rc $?"; tail -3 $OUT/ncu.log
ncu --import $OUT/decode_src.ncu-rep --page details --section WarpStateStats --section SourceCounters > $OUT/details.txt 2>&1
grep -E "gemm_decode_kernel|Duration|Stall|stall|Warp Cycles" $OUT/details.txt | head -60
# per-line stalls (open decode_src.ncu-rep in Nsight Compute for the source view); top SASS lines by samples:
ncu --import $OUT/decode_src.ncu-rep --page source --csv --print-source sass > $OUT/source_sass.csv 2>&1; echo "source csv rc $?"
head -3 $OUT/source_sass.csv
