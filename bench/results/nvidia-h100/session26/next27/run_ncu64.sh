#!/bin/bash
# PREPARED IN SESSION 26, NOT RUN: the 64-token tile at M = 64 (7168^2; the 32-token tile's profile is session 26 call 4) under ncu, program-order listing with stalls.
#   run(command="bash bench/results/nvidia-h100/session26/next27/run_ncu64.sh", carry=["extern/cutlass"], kind="nvidia-h100-x1")  (~1.5 min)
set -u
export OUT=${OUT:-/tmp/out} PYTHONUNBUFFERED=1 CMAKE_BUILD_PARALLEL_LEVEL=16 NVFP4_CUDA_ARCHS=90a
N=bench/results/nvidia-h100/session26/next27  # this folder, as committed
H=bench/results/nvidia-h100/session26  # the session-26 helpers it shares
git apply $H/decode_env.patch || exit 1
python3 -m pip install --no-build-isolation --no-deps -e . > /tmp/build.log 2>&1 || { tail /tmp/build.log; exit 1; }
NVFP4_DECODE_MAX=1 timeout 150 ncu --kernel-name "regex:predecoded_kernel" --launch-skip 2 --launch-count 1 --set full --import-source yes \
  -f -o /tmp/t64 python3 bench/results/nvidia-h100/session25/next26/ncu_tiles.py 64 7168 7168 > /tmp/ncu.log 2>&1; echo "ncu rc $?"
ncu --import /tmp/t64.ncu-rep --page source --csv --print-source sass > /tmp/t64_src.csv 2>/dev/null
python3 $H/ncu_listing.py /tmp/t64_src.csv > $OUT/t64_listing.txt
ncu --import /tmp/t64.ncu-rep --page details --csv > $OUT/t64_details.csv 2>/dev/null
ncu --import /tmp/t64.ncu-rep --page raw --csv > /tmp/raw.csv 2>/dev/null; python3 - <<'PY' > $OUT/t64_raw_sel.txt
import csv
r = list(csv.reader(open('/tmp/raw.csv')))
for h, u, v in zip(r[0], r[1], r[2]):
    if any(s in h for s in ('smsp__pcsamp', 'dram__bytes', 'sm__throughput', 'launch__', 'gpc__cycles_elapsed.max', 'sm__cycles_active', 'smsp__warps_active', 'l1tex__t_bytes', 'lts__t_bytes')):
        print(h, u, v)
PY
wc -l $OUT/*; git apply -R $H/decode_env.patch
