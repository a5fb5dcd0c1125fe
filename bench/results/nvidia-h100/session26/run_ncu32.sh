#!/bin/bash
# Session 26 call 4: the 32-token tile at M = 4 (7168^2) under ncu, program-order listing with stalls.
set -u
export OUT=${OUT:-/tmp/out} PYTHONUNBUFFERED=1 CMAKE_BUILD_PARALLEL_LEVEL=16 NVFP4_CUDA_ARCHS=90a
N=.scratch/next26
git apply $N/decode_env.patch || exit 1
python3 -m pip install --no-build-isolation --no-deps -e . > /tmp/build.log 2>&1 || { tail /tmp/build.log; exit 1; }
NVFP4_DECODE_MAX=1 timeout 150 ncu --kernel-name "regex:predecoded_kernel" --launch-skip 2 --launch-count 1 --set full --import-source yes \
  -f -o /tmp/t32 python3 $N/ncu_tiles.py 4 7168 7168 > /tmp/ncu.log 2>&1; echo "ncu rc $?"
ncu --import /tmp/t32.ncu-rep --page source --csv --print-source sass > /tmp/t32_src.csv 2>/dev/null
python3 $N/ncu_listing.py /tmp/t32_src.csv > $OUT/t32_listing.txt
ncu --import /tmp/t32.ncu-rep --page details --csv > $OUT/t32_details.csv 2>/dev/null
ncu --import /tmp/t32.ncu-rep --page raw --csv > /tmp/raw.csv 2>/dev/null; python3 - <<'PY' > $OUT/t32_raw_sel.txt
import csv
r = list(csv.reader(open('/tmp/raw.csv')))
for h, u, v in zip(r[0], r[1], r[2]):
    if any(s in h for s in ('smsp__pcsamp', 'dram__bytes', 'sm__throughput', 'launch__', 'gpc__cycles_elapsed.max', 'sm__cycles_active', 'smsp__warps_active', 'l1tex__t_bytes', 'lts__t_bytes')):
        print(h, u, v)
PY
wc -l $OUT/*; git apply -R $N/decode_env.patch
