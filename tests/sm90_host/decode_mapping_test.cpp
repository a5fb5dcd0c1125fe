// CPU check of the decode GEMM kernel's data mapping (cpp/src/sm90/gemv/decode_kernel.cuh), no
// GPU: one warp task over one ring stage, emulated lane by lane. The weight words and scales a
// lane reads (chunk 4u + t of MMA rows g, g + 8), the token tile as decode_token_tile writes it
// ([chunk][token][4 x 16 B], word jw in slot jw ^ (chunk & 3)), the registers decode_step hands
// to each mma.m16n8k16 (a = {pair 2h of row g, of row g + 8, pair 2h + 1 of row g, of row g + 8},
// b = pairs 2h, 2h + 1 of token 8j + g), the MMA by CUTLASS's SM80_16x8x16 fragment layouts
// (cute/atom/mma_traits_sm80.hpp: A (T32,V8) stride ((32,1),(16,8,128)), B ((16,1),(8,64)), C
// ((32,1),(16,8))), and the lanes' outputs (rows g, g + 8 x tokens 8j + 2t, 2t + 1) against a
// direct float64 dot product; for 1, 2, 3, 4 and 8 token groups, stages of 16 and 8 chunks, full
// and partial (chunks past K zeroed as decode_step does). Values are exact in double. Prints "N passed, N failed".
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <random>
#include <vector>

#include "sm90/gemv/decode_plan.hpp"

#include "../host_check.hpp"

using namespace nvfp4::sm90::gemv_detail;

static double e2m1(int c) {
  static const double m[8] = {0, 0.5, 1, 1.5, 2, 3, 4, 6};
  return (c & 8 ? -1 : 1) * m[c & 7];
}
// fp4_decode.cuh decode_pair<P>(q, s): (nibble P, nibble P + 4) of q, times s.
static void pair(uint32_t q, int P, double s, double out[2]) {
  out[0] = e2m1((q >> (4 * P)) & 15) * s;
  out[1] = e2m1((q >> (4 * P + 16)) & 15) * s;
}

static void run(int nt8, int SC, int nc, std::mt19937& rng) {
  const int MP = 8 * nt8, K = SC * 32, rows = 16;
  std::vector<uint8_t> W(rows * K / 2), X(MP * K / 2);
  std::vector<double> sw(rows * K / 16), sx(MP * K / 16);
  for (auto& b : W) b = static_cast<uint8_t>(rng());
  for (auto& b : X) b = static_cast<uint8_t>(rng());
  for (auto& s : sw) s = ldexp(1.0, static_cast<int>(rng() % 9) - 4);
  for (auto& s : sx) s = ldexp(1.0, static_cast<int>(rng() % 9) - 4);
  const int kvalid = nc * 32;  // the stage's chunks that exist
  std::vector<double> ref(rows * MP, 0.0);
  for (int i = 0; i < rows; ++i)
    for (int m = 0; m < MP; ++m) {
      double a = 0;
      for (int k = 0; k < kvalid; ++k) {
        const int wc = (W[i * K / 2 + k / 2] >> (4 * (k & 1))) & 15, xc = (X[m * K / 2 + k / 2] >> (4 * (k & 1))) & 15;
        a += e2m1(wc) * sw[i * K / 16 + k / 16] * e2m1(xc) * sx[m * K / 16 + k / 16];
      }
      ref[i * MP + m] = a;
    }
  // token tile: 16 B slots of 4 pairs (8 values)
  std::vector<double> tok(static_cast<size_t>(SC) * MP * 32);
  for (int c = 0; c < SC; ++c)
    for (int m = 0; m < MP; ++m)
      for (int jw = 0; jw < 4; ++jw) {
        uint32_t q;
        memcpy(&q, &X[m * K / 2 + c * 16 + 4 * jw], 4);
        const double s = sx[m * K / 16 + 2 * c + (jw >= 2)];
        for (int p = 0; p < 4; ++p) {
          double v[2];
          pair(q, p, s, v);
          const int slot = jw ^ (c & 3);
          tok[((c * MP + m) * 4 + slot) * 8 + 2 * p] = v[0];
          tok[((c * MP + m) * 4 + slot) * 8 + 2 * p + 1] = v[1];
        }
      }
  std::vector<double> acc(32 * nt8 * 4, 0.0);
  for (int u = 0; u < SC / 4; ++u) {
    if (4 * u >= nc) continue;  // the kernel skips steps wholly past K
    for (int jw = 0; jw < 4; ++jw)
      for (int h = 0; h < 2; ++h)
        for (int j = 0; j < nt8; ++j) {
          double A[32][8], B[32][4];
          for (int lane = 0; lane < 32; ++lane) {
            const int g = lane >> 2, t = lane & 3, c = 4 * u + t;
            const bool live = c < nc;
            uint32_t x, y;
            memcpy(&x, &W[g * K / 2 + c * 16 + 4 * jw], 4);
            memcpy(&y, &W[(g + 8) * K / 2 + c * 16 + 4 * jw], 4);
            const double sa = live ? sw[g * K / 16 + 2 * c + (jw >> 1)] : 0.0;
            const double sb = live ? sw[(g + 8) * K / 16 + 2 * c + (jw >> 1)] : 0.0;
            double f[4][2], e[4][2];
            for (int p = 0; p < 4; ++p) {
              pair(x, p, sa, f[p]);
              pair(y, p, sb, e[p]);
            }
            double* r = A[lane];
            r[0] = f[2 * h][0], r[1] = f[2 * h][1], r[2] = e[2 * h][0], r[3] = e[2 * h][1];
            r[4] = f[2 * h + 1][0], r[5] = f[2 * h + 1][1], r[6] = e[2 * h + 1][0], r[7] = e[2 * h + 1][1];
            const double* bq = &tok[((c * MP + 8 * j + g) * 4 + (jw ^ t)) * 8];
            for (int i = 0; i < 4; ++i) B[lane][i] = live ? bq[4 * h + i] : 0.0;
          }
          // CUTLASS SM80_16x8x16 layouts: A (m, k) offset m + 16 k; B (n, k) offset n + 8 k
          double Am[16][16], Bm[8][16];
          for (int lane = 0; lane < 32; ++lane) {
            const int t0 = lane & 3, t1 = lane >> 2;
            for (int v = 0; v < 8; ++v) {
              const int off = 32 * t0 + t1 + 16 * (v & 1) + 8 * ((v >> 1) & 1) + 128 * (v >> 2);
              Am[off % 16][off / 16] = A[lane][v];
            }
            for (int v = 0; v < 4; ++v) {
              const int off = 16 * t0 + t1 + 8 * (v & 1) + 64 * (v >> 1);
              Bm[off % 8][off / 8] = B[lane][v];
            }
          }
          for (int lane = 0; lane < 32; ++lane) {
            const int t0 = lane & 3, t1 = lane >> 2;
            for (int v = 0; v < 4; ++v) {  // C (m, n) offset m + 16 n
              const int off = 32 * t0 + t1 + 16 * (v & 1) + 8 * (v >> 1);
              const int mr = off % 16, nn = off / 16;
              double s = 0;
              for (int k = 0; k < 16; ++k) s += Am[mr][k] * Bm[nn][k];
              acc[(lane * nt8 + j) * 4 + v] += s;
            }
          }
        }
  }
  // the kernel's output mapping: lane (g, t), register i -> row g (+8), token 8j + 2t (+1)
  double maxerr = 0;
  for (int lane = 0; lane < 32; ++lane)
    for (int j = 0; j < nt8; ++j)
      for (int i = 0; i < 4; ++i) {
        const int g = lane >> 2, t = lane & 3;
        const int row = i < 2 ? g : g + 8, m = 8 * j + 2 * t + (i & 1);
        maxerr = fmax(maxerr, fabs(acc[(lane * nt8 + j) * 4 + i] - ref[row * MP + m]));
      }
  CHECK(maxerr == 0.0, "nt8 %d, stage of %d chunks, %d live: max error %g", nt8, SC, nc, maxerr);
}

int main() {
  std::mt19937 rng(22);
  for (int nt8 : {1, 2, 3, 4, 8})
    for (int sc : {kMmaSC, kDecodeFineSC})  // full and fine stages (decode_plan.hpp)
      for (int nc : {sc, 1, 3, 7, sc - 3}) run(nt8, sc, nc, rng);
  return check_summary();
}
