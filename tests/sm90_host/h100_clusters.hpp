// The H100's cluster table for the decode plans' tests (MmaKernelInfo::cluster_ctas, plan.hpp):
// CTAs that run at once in clusters of s CTAs when p CTAs fit on an SM, as
// cudaOccupancyMaxActiveClusters x s reported on an NVIDIA H100 80GB HBM3 (132 SMs, CUDA 13;
// session 22, bench/results/nvidia-h100/session22/occupancy_table.txt; the same for 32- and
// 256-thread blocks; each CTA's shared memory a multiple of the 128-byte allocation unit, as
// kernel_info.hpp query_cluster_ctas sizes it). Column s = 1 is not read by the plan.
#pragma once

#include "sm90/gemv/plan.hpp"

inline void h100_cluster_table(nvfp4::sm90::gemv_detail::MmaKernelInfo& info) {
  static const int t[9][9] = {
      {0},
      {0, 132, 132, 117, 120, 110, 102, 105, 120},
      {0, 264, 264, 237, 248, 235, 234, 224, 240},
      {0, 396, 396, 372, 368, 345, 372, 329, 360},
      {0, 528, 528, 489, 496, 470, 474, 483, 496},
      {0, 660, 660, 609, 616, 620, 606, 588, 616},
      {0, 792, 792, 744, 744, 730, 744, 707, 736},
      {0, 924, 924, 861, 864, 855, 846, 868, 856},
      {0, 1056, 1056, 981, 992, 965, 978, 973, 992},
  };
  for (int p = 1; p <= 8; ++p)
    for (int s = 1; s <= 8; ++s) info.cluster_ctas[p][s] = t[p][s];
}

// Resident clusters of s CTAs when one CTA takes a whole SM (the fused dual and grouped kernels'
// DeviceNumbers::clusters; s < 2: no limit). The GPC sizes vary from chip to chip (the library asks
// the device at run time); these (18 x5, 16 x2, 10) give what session 28 measured on an H100 80GB
// HBM3: 66 clusters of 2, 30 of 4, 15 of 8 (bench/results/nvidia-h100/session28/call5/probe.txt).
inline int h100_full_sm_clusters(int s) { return s < 2 ? 1 << 20 : 5 * (18 / s) + 2 * (16 / s) + 10 / s; }
