#!/bin/bash
# PREPARED IN SESSION 21, NOT RUN. Issue 22: the decode-regime kernels' shift pipes (gemv/decode_mma.cuh
# decode_word_scaled): HEAD (ptxas: shifts on the FMA pipe, IMAD.SHL / IMAD.HI), dk_alu (every shift SHF, ALU),
# dk_mix (q << 4 SHF, q << 1 and q >> 3 on FMA). SASS of gemm_decode.cu checked in session 21: same length
# (3568 instructions in gemm_decode_kernel<4>), 0 spills. Graph / eager with cuBLAS bf16, then the decode GPU
# tests on each variant. ~4-5 min.
#   run(command="bash .scratch/next22/run_decode_kernel_pipes.sh", carry=[".scratch/next22", "extern/cutlass"],
#       kind="nvidia-h100-x1", timeout_s=600)
set -u
export OUT=${OUT:-/tmp/out} PYTHONUNBUFFERED=1 CMAKE_BUILD_PARALLEL_LEVEL=16 NVFP4_CUDA_ARCHS=90a
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
F=cpp/src/sm90/gemv/decode_mma.cuh
SH=gemm:2x7168x7168,gemm:4x7168x7168,gemm:8x7168x7168,gemm:16x7168x7168,gemm:16x4096x14336,gemm:16x14336x4096,gemm:4x14336x4096,dual:4x4096x7168,dual:16x4096x7168
for v in head dk_alu dk_mix; do
  git checkout -q $F
  [ $v = head ] || git apply .scratch/next22/$v.patch || exit 1
  python3 -m pip install --no-build-isolation --no-deps -e . > $OUT/build_$v.log 2>&1 || { tail $OUT/build_$v.log; exit 1; }
  echo "== $v built t=$(el)"
  timeout 120 python3 -m nvfp4 bench --quiet --reps 20 --shapes $SH > $OUT/bench_$v.txt 2>&1
  grep -E "^(gemm|dual)" $OUT/bench_$v.txt | grep -E "nvfp4  |cuBLAS bf16" | cut -c1-120 | sed "s/^/$v /"
  timeout 120 python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_gpu_decode.py tests/test_gpu_dual_decode.py \
    tests/test_gpu_packed_decode.py > $OUT/tests_$v.log 2>&1; echo "$v tests rc $? t=$(el)"; tail -1 $OUT/tests_$v.log
done
git checkout -q $F
