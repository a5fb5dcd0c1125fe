#!/bin/bash
# PREPARED IN SESSION 23, NOT RUN. Issue 22: calibrate the decode shape model against forced launch shapes
# (force.patch: NVFP4_DECODE_FORCE="wt,kc,sc", a scratch hook in choose_decode_shape) on 7168^2, 4096x14336,
# 14336x4096 at M = 4 and 7168^2 at M = 16: fewer / longer CTAs (kc 1..2), more / shorter ones, both stage
# geometries. model_times.txt has the model's time of each (decode_shape_time, H100 table). Reading: if the
# measured µs follow CTA count more than stages per warp, per-CTA fixed costs (first load, cluster barriers,
# token decode) are what the model is missing. ~4 min.
#   run(command="bash .scratch/next24/run_force_sweep.sh", carry=[".scratch/next24", "extern/cutlass"], kind="nvidia-h100-x1")
set -u
export OUT=${OUT:-/tmp/out} PYTHONUNBUFFERED=1 CMAKE_BUILD_PARALLEL_LEVEL=16 NVFP4_CUDA_ARCHS=90a
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
git apply .scratch/next24/force.patch || exit 1
touch cpp/src/sm90/gemv/decode_plan.hpp cpp/src/sm90/gemm_decode.cu
python3 -m pip install --no-build-isolation --no-deps -e . > $OUT/build.log 2>&1 || { tail $OUT/build.log; git apply -R .scratch/next24/force.patch; exit 1; }
echo "built t=$(el)"
tr -d '{}' < .scratch/next24/force_shapes.inc | tr ',' ' ' | xargs -n 6 | while read M N K wt kc sc; do
  r=$(NVFP4_DECODE_FORCE="$wt,$kc,$sc" timeout 60 python3 -m nvfp4 bench --quiet --reps 10 --ceilings datasheet \
        --shapes gemm:${M}x${N}x${K} 2>&1 | grep -E "^gemm" | grep "nvfp4  " | awk '{print $7, $8, $12, $13}')
  echo "M=$M N=$N K=$K force $wt,$kc,$sc: graph/eager/t-SOL/check $r"
done | tee $OUT/force_sweep.txt
echo "t=$(el)"
git apply -R .scratch/next24/force.patch
paste -d'|' <(sed 's/: graph.*//' $OUT/force_sweep.txt) <(sed 's/.*graph\/eager\/t-SOL\/check //' $OUT/force_sweep.txt) \
  <(sed 's/.*: model //' .scratch/next24/model_times.txt) | column -t -s'|'
