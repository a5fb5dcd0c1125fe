#include <chrono>
#include <cstdio>
#include "sm90/gemv/decode_plan.hpp"
#include "../../tests/sm90_host/h100_clusters.hpp"
using namespace nvfp4::sm90::gemv_detail;
static MmaKernelInfo mk(int regs) { MmaKernelInfo i; i.regs = regs; i.smem_per_sm = 233472; i.regs_per_sm = 65536; i.static_smem = 0; i.max_smem_block = 232448; h100_cluster_table(i); return i; }
int main() {
  const MmaKernelInfo full = mk(106), fine = mk(93);
  static int kern;
  DecodePlanKey key; key.device = 0; key.kernel = &kern; key.nt8 = 2; key.nchunks = 224; key.sm_count = 132; key.tasks_per_batch = 448; key.L = 1;
  const int n = 200000; volatile long sink = 0;
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < n; ++i) sink += decode_plan_launch(full, &fine, 2, 224, 448, 1, 132).ctas;
  auto t1 = std::chrono::steady_clock::now();
  for (int i = 0; i < n; ++i) { DecodeLaunch d; decode_plan_memo(key, &d, [&](DecodeLaunch* o) { *o = decode_plan_launch(full, &fine, 2, 224, 448, 1, 132); return true; }); sink += d.ctas; }
  auto t2 = std::chrono::steady_clock::now();
  printf("direct %.0f ns, memo hit %.1f ns per call\n", std::chrono::duration<double, std::nano>(t1 - t0).count() / n, std::chrono::duration<double, std::nano>(t2 - t1).count() / n);
}
