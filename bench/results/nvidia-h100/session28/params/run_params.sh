#!/bin/bash
# Session 28: kernel parameter-block size against launch cost in a CUDA graph (param_probe.cu; ~20 s).
#   run(command="bash bench/results/nvidia-h100/session28/params/run_params.sh", kind="nvidia-h100-x1")
nvcc -arch=sm_90a -O2 -o /tmp/pp bench/results/nvidia-h100/session28/params/param_probe.cu && /tmp/pp | tee ${OUT:-/tmp}/params.txt
