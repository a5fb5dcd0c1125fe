// Exact e2m1 -> fp16 decoding for the sm90a GEMM, and the K permutation it implies.
//
// Decode (integer only, docs/design.md "Backends"): a nibble s|e1 e0 m placed with its
// sign at fp16 bit 15 and its magnitude bits at fp16 bits 11..9 is the fp16 number
// e2m1_value * 2^-14 exactly (codes 0/1 land on fp16 subnormals). Two shifts + two
// LOP3 give two values from the nibbles p and p+4 of a 32-bit word: shifting the
// word left by 12-4p brings nibble p to bits 12..15 and nibble p+4 to bits 28..31,
// i.e. the top of each 16-bit half, so bit 15/31 is the sign; shifting it left by
// 9-4p puts the magnitude at 9..11 / 25..27 (see e2m1x2_to_f16x2_scaled for which
// pipe each shift runs on, and why). Multiplying by the fp16 block scale (HMUL2) is exact
// (docs/design.md "Numerics": every e2m1*e4m3*2^-14 is an fp16 value), so each operand
// carries a factor 2^-14 that the epilogue folds back into alpha (2^28 for the product).
//
// K permutation: the pair decoded from nibbles (p, p+4) of a word is not two
// adjacent K elements, so both operands use the same permutation of K inside a
// 128-element K block (a dot product does not care about the order of its terms).
// Physical element e = 32t + 8i + p (+4 for the high half), with t = 16-byte chunk of
// the row's 64 packed bytes, i = 32-bit word in that chunk, p = 0..3, is placed at
// logical k = 8c + 2t (+1), c = 4i + p. The wgmma register fragment of thread
// (row g, quad t) at k-step s, slot j holds logical k = 16s + 8j + 2t, i.e. chunk
// c = 2s + j: its data all come from the thread's own 16-byte chunk t of the row,
// with one block scale per 16 elements (word i uses scale 2t + i/2).
#pragma once

#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <stdint.h>

namespace nvfp4::sm90 {

// Pair (nibble p, nibble p+4) of `q` as an fp16x2 (low half = nibble p), each
// value = e2m1 * 2^-14. P is a compile-time constant 0..3.
// Which pipe each shift runs on is fixed here, not left to ptxas: the sign's shift is a
// funnel shift (SHF, ALU pipe), the magnitude's a multiply by 2^(9-4P) (IMAD, FMA pipe,
// beside the HMUL2 and the promotion's FADD), so a block's decode burst loads both pipes.
// Left to ptxas, every shift became IMAD.SHL inside the GEMM kernels and the consumer loop
// kept the tensor pipe 81.7-82.0% busy against 86.9% with this split (H100, locked clocks;
// the GEMM kernels 2.8-3.7% faster). tools/check_wgmma_sass.py flags a decode loop whose
// shifts lean to one pipe; the other splits measured are in bench/NOTES.md session 21.
template <int P>
__device__ __forceinline__ uint32_t e2m1x2_to_f16x2_scaled(uint32_t q) {
  if constexpr (P == 3) {
    return (q & 0x80008000u) | ((q >> 3) & 0x0E000E00u);
  } else {
    uint32_t sign, mag;
    asm("shf.l.clamp.b32 %0, %1, %2, %3;" : "=r"(sign) : "r"(0u), "r"(q), "n"(12 - 4 * P));  // q << (12 - 4P)
    asm("mul.lo.u32 %0, %1, %2;" : "=r"(mag) : "r"(q), "n"(1u << (9 - 4 * P)));          // q << (9 - 4P)
    return (sign & 0x80008000u) | (mag & 0x0E000E00u);
  }
}

// Two e4m3 bytes (low byte first) -> fp16x2 (exact; NaN stays NaN).
__device__ __forceinline__ uint32_t e4m3x2_to_f16x2(uint32_t two_bytes) {
  const __half2_raw h = __nv_cvt_fp8x2_to_halfraw2(static_cast<__nv_fp8x2_storage_t>(two_bytes & 0xFFFFu),
                                                   __NV_E4M3);
  return static_cast<uint32_t>(h.x) | (static_cast<uint32_t>(h.y) << 16);
}
__device__ __forceinline__ uint32_t bcast_lo(uint32_t h2) { return __byte_perm(h2, 0, 0x1010); }
__device__ __forceinline__ uint32_t bcast_hi(uint32_t h2) { return __byte_perm(h2, 0, 0x3232); }

__device__ __forceinline__ uint32_t hmul2_u32(uint32_t a, uint32_t b) {
  uint32_t d;
  asm("mul.rn.f16x2 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
  return d;
}

// Decoded, scaled pair P of word q with fp16x2 scale (s, s).
template <int P>
__device__ __forceinline__ uint32_t decode_pair(uint32_t q, uint32_t scale2) {
  return hmul2_u32(e2m1x2_to_f16x2_scaled<P>(q), scale2);
}

// The four decoded, scaled pairs of word q (f[p] = decode_pair<p>(q, scale2), bit for bit)
// with the shifts and masks shared between the pairs: e holds in byte j the fp16 high byte
// (sign at bit 7, e1 e0 m at bits 1..3) of the low nibble of byte j (nibble 2j), o that of
// the high nibble (2j + 1); pair p (nibbles p, p + 4) is bytes p >> 1 and 2 + (p >> 1) of e
// (p even) or o (p odd) in the high byte of each half: one PRMT (bytes 0, 2) or one LOP3
// (bytes 1, 3). 11 integer instructions per word instead of 15 (4 x decode_pair), 8 of them on
// the ALU pipe instead of 9, 3 on the FMA pipe instead of 6 (the left shifts are IMAD.SHL, the
// right shift a multiply-high), so both pipes get fewer (checked against decode_pair on all
// 2^32 words; bench/NOTES.md "Decode kernel instruction count"). The decode kernel's fragments
// and the 32-token tile's (decode_w_fragments<true>) come from it.
__device__ __forceinline__ uint32_t mulhi_u32(uint32_t a, uint32_t b) {
  uint32_t d;
  asm("mul.hi.u32 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
  return d;
}
__device__ __forceinline__ void decode_word_scaled(uint32_t q, uint32_t scale2, uint32_t (&f)[4]) {
  const uint32_t e = ((q << 4) & 0x80808080u) | ((q << 1) & 0x0E0E0E0Eu);
  const uint32_t o = (q & 0x80808080u) | (mulhi_u32(q, 1u << 29) & 0x0E0E0E0Eu);  // q >> 3
  f[0] = hmul2_u32(__byte_perm(e, 0u, 0x2404), scale2);  // bytes 0, 2 of e: nibbles 0, 4
  f[1] = hmul2_u32(__byte_perm(o, 0u, 0x2404), scale2);  // nibbles 1, 5
  f[2] = hmul2_u32(e & 0xFF00FF00u, scale2);              // bytes 1, 3 of e: nibbles 2, 6
  f[3] = hmul2_u32(o & 0xFF00FF00u, scale2);              // nibbles 3, 7
}

// Weight fragments of one 128-K block for thread (row g, quad t) of an RS wgmma
// m64nNk16: `a`, `b` = the thread's 16 packed bytes (chunk t) of rows g and g+8,
// `sa`, `sb` = their two e4m3 scales (columns 2t, 2t+1). f[4ks + j] = register j of
// k-step ks (chunks c = 2ks for j = 0,1 and 2ks+1 for j = 2,3: word ks/2, pairs
// 2(ks&1) and 2(ks&1)+1).
// kByteWise: decode_word_scaled (the same bits, 4 fewer instructions per word, its shifts on the
// FMA pipe) instead of the pinned SHF / IMAD split of decode_pair. Only the 32-token tile takes
// it: there two consumer warps per scheduler leave the decode latency-bound (ncu: ~240
// instructions per warp and block, a warp eligible in 40% of the scheduler cycles, SM busy 31%);
// where the tile is wider the tensor work hides the decode and the pipe split wins. H100, session 26, same call, graph µs,
// split -> byte-wise: 32-token tile 7168^2 M = 4 / 32 22.9 / 23.4 -> 21.1 / 21.4, 4096x14336 M = 32
// 28.8 -> 26.7; wider tiles slower (64 x 7168^2 25.1 -> 26.4, 96 x 27.5 -> 29.6, 1024 x 7168^2
// 182.5 -> 196.8, dual 512x4096x7168 107.1 -> 115.4).
template <bool kByteWise = false>
__device__ __forceinline__ void decode_w_fragments(const uint4& a, const uint4& b, uint32_t sa, uint32_t sb,
                                                   uint32_t (&f)[32]) {
  const uint32_t ha = e4m3x2_to_f16x2(sa), hb = e4m3x2_to_f16x2(sb);
  const uint32_t sa2[2] = {bcast_lo(ha), bcast_hi(ha)};
  const uint32_t sb2[2] = {bcast_lo(hb), bcast_hi(hb)};
  const uint32_t qa[4] = {a.x, a.y, a.z, a.w};
  const uint32_t qb[4] = {b.x, b.y, b.z, b.w};
#pragma unroll
  for (int w = 0; w < 4; ++w) {
    if constexpr (kByteWise) {
      uint32_t fa[4], fb[4];
      decode_word_scaled(qa[w], sa2[w >> 1], fa);
      decode_word_scaled(qb[w], sb2[w >> 1], fb);
#pragma unroll
      for (int p = 0; p < 4; ++p) {
        f[8 * w + 2 * p] = fa[p];
        f[8 * w + 2 * p + 1] = fb[p];
      }
    } else {
      f[8 * w + 0] = decode_pair<0>(qa[w], sa2[w >> 1]);
      f[8 * w + 1] = decode_pair<0>(qb[w], sb2[w >> 1]);
      f[8 * w + 2] = decode_pair<1>(qa[w], sa2[w >> 1]);
      f[8 * w + 3] = decode_pair<1>(qb[w], sb2[w >> 1]);
      f[8 * w + 4] = decode_pair<2>(qa[w], sa2[w >> 1]);
      f[8 * w + 5] = decode_pair<2>(qb[w], sb2[w >> 1]);
      f[8 * w + 6] = decode_pair<3>(qa[w], sa2[w >> 1]);
      f[8 * w + 7] = decode_pair<3>(qb[w], sb2[w >> 1]);
    }
  }
}

// 64 consecutive K elements of one row (the words 2h, 2h+1 of each 16-byte chunk t of a
// 128-K block: q[t][0..1]) -> logical chunks 8h .. 8h+7 (8 fp16 each, 16 bytes): out[j]
// = chunk 8h + j. sc2[t] = (s, s), the scale of physical block 2t + h.
__device__ __forceinline__ void decode_x_half(const uint32_t (&q)[4][2], const uint32_t (&sc2)[4], uint4 (&out)[8]) {
#pragma unroll
  for (int wl = 0; wl < 2; ++wl) {
#define DECODE_XCHUNK(P)                              \
  out[4 * wl + P].x = decode_pair<P>(q[0][wl], sc2[0]); \
  out[4 * wl + P].y = decode_pair<P>(q[1][wl], sc2[1]); \
  out[4 * wl + P].z = decode_pair<P>(q[2][wl], sc2[2]); \
  out[4 * wl + P].w = decode_pair<P>(q[3][wl], sc2[3]);
    DECODE_XCHUNK(0)
    DECODE_XCHUNK(1)
    DECODE_XCHUNK(2)
    DECODE_XCHUNK(3)
#undef DECODE_XCHUNK
  }
}

}  // namespace nvfp4::sm90
