#!/usr/bin/env bash
# Session 30 call 4: the K-split reduction's DSMEM part: batched loads (256), contiguous ownership
# (1024), both (1280), own-CTA loads (128); SASS of the reduction.
set -uo pipefail
D=bench/results/nvidia-h100/session30/abl
git apply --check $D/abl.patch 2>/dev/null && git apply $D/abl.patch
STEPS=build bash tools/device_run.sh || exit 1
so=$(find build -name "libnvfp4*.so*" -type f | head -1); echo "lib: $so"
cuobjdump -sass -fun '_ZN5nvfp44sm9011gemv_detail18gemm_decode_kernelILi1ELb1ELi8EEEvNS1_10DecodeArgsE' "$so" > $OUT/sass_nt1_fine.txt 2>&1
grep -n "UCGABAR\|MAPA\|LD\.E\|LDS\|LD " $OUT/sass_nt1_fine.txt | tail -60 > $OUT/sass_reduce_lines.txt
python3 $D/ablate.py 7168x7168,4096x14336,14336x4096 2,4,8,16 0,256,1024,1280,128,0 2>&1 | tee $OUT/reduce_dsmem.txt
