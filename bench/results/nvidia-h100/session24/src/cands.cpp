#include <cstdio>
#include <vector>
#include <algorithm>
#include "sm90/gemv/decode_plan.hpp"
#include "../../tests/sm90_host/h100_clusters.hpp"
using namespace nvfp4::sm90::gemv_detail;
static MmaKernelInfo mk(int regs) {
  MmaKernelInfo i; i.regs = regs; i.smem_per_sm = 233472; i.regs_per_sm = 65536; i.static_smem = 0;
  i.max_smem_block = 232448; h100_cluster_table(i); return i;
}
int main(int argc, char** argv) {
  int M = atoi(argv[1]); long N = atol(argv[2]), K = atol(argv[3]);
  const int nt8 = decode_nt8(M);
  const MmaKernelInfo full = mk(nt8 == 1 ? 79 : nt8 == 2 ? 106 : nt8 == 3 ? 117 : 126),
                      fine = mk(nt8 == 1 ? 79 : nt8 == 2 ? 93 : nt8 == 3 ? 110 : 123);
  const long tasks = (N + 127) / 128 * 8; const int nchunks = K / 32;
  struct C { double t; int wt, kc, sc; long ctas; int ps, spc; };
  std::vector<C> v;
  for (int sc : {8, 16}) for (int wt = 1; wt <= 8; ++wt) for (int kc = 1; kc <= 8; ++kc) {
    const MmaKernelInfo& info = sc == kMmaSC ? full : fine;
    DecodeShape s{wt, kc, sc};
    double t = decode_shape_time(info, nt8, nchunks, tasks, 1, 132, s);
    if (!(t > 0) || t > 1e30) continue;
    DecodeLaunch d = decode_launch(info, s, nt8, nchunks, tasks, 1, 132);
    v.push_back({t, wt, kc, sc, (long)d.ctas, mma_ctas_per_sm(info, d.warps, d.smem_launch), d.stages_per_cta});
  }
  std::sort(v.begin(), v.end(), [](auto& a, auto& b) { return a.t < b.t; });
  const DecodeShape pick = choose_decode_shape(full, nt8, nchunks, tasks, 1, 132, &fine);
  printf("M=%d N=%ld K=%ld pick %d,%d,%d\n", M, N, K, pick.wt, pick.kc, pick.sc);
  for (size_t i = 0; i < v.size() && i < 10; ++i) printf("  %.2f wt %d kc %d sc %d ctas %ld per_sm %d spc %d\n", v[i].t, v[i].wt, v[i].kc, v[i].sc, v[i].ctas, v[i].ps, v[i].spc);
}
