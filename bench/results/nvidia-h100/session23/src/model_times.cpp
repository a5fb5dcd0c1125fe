// Session 24 prep: the shape model's time (decode_plan.hpp decode_shape_time, H100 table) of the forced shapes
// in run_force_sweep.sh, to set beside their measured µs. g++ -std=c++17 -Icpp/src -Icpp/include
#include <cstdio>
#include "sm90/gemv/decode_plan.hpp"
#include "../../tests/sm90_host/h100_clusters.hpp"
using namespace nvfp4::sm90::gemv_detail;
static MmaKernelInfo mk(int regs) {
  MmaKernelInfo i; i.regs = regs; i.smem_per_sm = 233472; i.regs_per_sm = 65536; i.static_smem = 0;
  i.max_smem_block = 232448; h100_cluster_table(i); return i;
}
int main() {
  struct Row { int M; long N, K; int wt, kc, sc; } rows[] = {
#include "force_shapes.inc"
  };
  for (const Row& r : rows) {
    const int nt8 = decode_nt8(r.M);
    const MmaKernelInfo full = mk(nt8 == 1 ? 79 : nt8 == 2 ? 106 : nt8 == 3 ? 117 : 126),
                        fine = mk(nt8 == 1 ? 79 : nt8 == 2 ? 93 : nt8 == 3 ? 110 : 123);
    const long tasks = (r.N + 127) / 128 * 8;
    const int nchunks = static_cast<int>(r.K / 32);
    const DecodeShape s{r.wt, r.kc, r.sc};
    const MmaKernelInfo& info = r.sc == kMmaSC ? full : fine;
    const double t = decode_shape_time(info, nt8, nchunks, tasks, 1, 132, s);
    const DecodeLaunch d = decode_launch(info, s, nt8, nchunks, tasks, 1, 132);
    const DecodeShape pick = choose_decode_shape(full, nt8, nchunks, tasks, 1, 132, &fine);
    printf("M=%d N=%ld K=%ld force %d,%d,%d: model %.2f ctas %ld per_sm %d spc %d%s\n", r.M, r.N, r.K, r.wt, r.kc, r.sc,
           t, (long)d.ctas, mma_ctas_per_sm(info, d.warps, d.smem_launch), d.stages_per_cta,
           pick.wt == r.wt && pick.kc == r.kc && pick.sc == r.sc ? "  (the model's pick)" : "");
  }
}
