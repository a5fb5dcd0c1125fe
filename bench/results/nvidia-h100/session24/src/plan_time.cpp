#include <chrono>
#include "../../tests/sm90_host/gemm_plan_fixtures.hpp"
int main() {
  const GemmDeviceNumbers d = h100();
  struct S { int64_t M, N, K; } ss[] = {{4, 7168, 7168}, {128, 7168, 16384}, {256, 4096, 7168}, {4096, 4096, 4096}, {64, 7168, 7168}, {129, 7168, 7168}};
  for (auto s : ss) {
    const GemmProblem p = dense(s.M, s.N, s.K);
    const int n = 100000; volatile long sink = 0;
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < n; ++i) sink += plan_gemm(p, d, size_t(1) << 30).grid[0];
    auto t1 = std::chrono::steady_clock::now();
    printf("plan_gemm %lldx%lldx%lld: %.0f ns\n", (long long)s.M, (long long)s.N, (long long)s.K, std::chrono::duration<double, std::nano>(t1 - t0).count() / n);
  }
}
