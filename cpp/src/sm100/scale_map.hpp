// Index arithmetic of the scale preparation kernels (scales.cu, grouped.cu), as
// host+device functions so that tests/sm100_host runs the very same code on the CPU.
//
// The blocked layout (docs/design.md "Formats and layouts", formats.h blocked_sf_offset) seen as 32-bit words:
// a 512-byte tile holds 128 rows x 4 scale columns; the word of row r (4 consecutive
// scale columns) is word (r%32)*4 + (r%128)/32 of its tile. Tiles are ordered
// row-tile-major: tile = (r/128) * tiles_k + c/4.
#pragma once

#include <stdint.h>

#include "../common/formats.h"
#include "kernels.hpp"

namespace nvfp4::sm100 {

struct BlockedGeometry {
  int64_t kcols = 0;            // K/16 real scale columns
  int64_t tiles_k = 0;          // ceil(kcols/4)
  int64_t words_per_batch = 0;  // padded rows * tiles_k * 4 / 4
  int64_t bytes_per_batch = 0;
};

NVFP4_HD BlockedGeometry blocked_geometry(int64_t rows, int64_t K) {
  BlockedGeometry g;
  g.kcols = K / kSfVec;
  g.tiles_k = (g.kcols + 3) / 4;
  g.bytes_per_batch = blocked_sf_bytes(rows, K);
  g.words_per_batch = g.bytes_per_batch / 4;
  return g;
}

struct BlockedWord {
  int64_t word = 0;  // index of the 32-bit word within the batch
  int64_t row = 0;   // matrix row it holds
  int64_t col0 = 0;  // first of its 4 scale columns
};

NVFP4_HD BlockedWord blocked_word(const BlockedGeometry& g, int64_t word) {
  BlockedWord w;
  w.word = word;
  const int64_t tile = word >> 7;
  const int64_t in_tile = word & 127;
  w.row = (tile / g.tiles_k) * 128 + (in_tile & 3) * 32 + (in_tile >> 2);
  w.col0 = (tile % g.tiles_k) * 4;
  return w;
}

// The 4 scale bytes (columns col0..col0+3 of one row) of a source, little-endian in
// a word; columns >= kcols read as zero.
NVFP4_HD uint32_t read_scale_word(const ScaleSource& src, int64_t l, int64_t row, int64_t col0, int64_t kcols,
                                  int64_t K) {
  const uint8_t* base = src.data + l * src.batch_stride;
  const int64_t valid = kcols - col0 < 4 ? kcols - col0 : 4;
  uint32_t v = 0;
  if (src.layout == NVFP4_SF_LINEAR) {
    const uint8_t* p = base + row * src.row_stride + col0;
    for (int64_t i = 0; i < valid; ++i) v |= static_cast<uint32_t>(p[i]) << (8 * i);
  } else {
    // the 4 columns of a blocked word are contiguous and 4-byte aligned
    v = *reinterpret_cast<const uint32_t*>(base + blocked_sf_offset(row, col0, K));
    if (valid < 4) v &= (1u << (8 * valid)) - 1u;
  }
  return v;
}

// Word `bw` of batch l of a swizzle job's destination.
NVFP4_HD uint32_t gather_scale_word(const SwizzleJob& job, const BlockedGeometry& g, int64_t l, const BlockedWord& bw) {
  if (bw.row >= job.rows) return 0u;  // row padding
  return read_scale_word(job.src[0], l, bw.row, bw.col0, g.kcols, job.K);
}

// ---------------------------------------------------------------------------
// Packed (MoE) sfa: group g's rows [offsets[g], offsets[g+1]) of a linear
// (sum M_g, K/16) tensor become a blocked tensor of M_g rows starting at tile
// tile_base[g] of the destination (tile_base[g+1] - tile_base[g] = ceil(M_g/128) *
// tiles_k). Destination tile t belongs to the last g with tile_base[g] <= t.
// ---------------------------------------------------------------------------

// Largest g in [0, G) with tile_base[g] <= t (tile_base non-decreasing, tile_base[0] = 0).
NVFP4_HD int32_t group_of_tile(const int32_t* tile_base, int32_t G, int64_t t) {
  int32_t lo = 0, hi = G - 1;
  while (lo < hi) {
    const int32_t mid = (lo + hi + 1) / 2;
    if (tile_base[mid] <= t) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

// Group sizes from device offsets, clamped so that a malformed offsets array (not
// checked on the device: no host sync) can never address outside [0, total_M).
NVFP4_HD int32_t clamped_offset(const int32_t* offsets, int32_t g, int64_t total_M) {
  const int64_t o = offsets[g];
  return static_cast<int32_t>(o < 0 ? 0 : (o > total_M ? total_M : o));
}
NVFP4_HD int32_t group_rows(const int32_t* offsets, int32_t g, int64_t total_M) {
  const int32_t lo = clamped_offset(offsets, g, total_M);
  const int32_t hi = clamped_offset(offsets, g + 1, total_M);
  return hi > lo ? hi - lo : 0;
}

// tile_base[0..G]: prefix of ceil(M_g/128) * tiles_k (one thread; G = number of experts).
NVFP4_HD void packed_tile_prefix(const int32_t* offsets, int32_t G, int64_t total_M, int64_t tiles_k,
                                 int32_t* tile_base) {
  int64_t base = 0;
  for (int32_t g = 0; g < G; ++g) {
    tile_base[g] = static_cast<int32_t>(base);
    base += (group_rows(offsets, g, total_M) + 127) / 128 * tiles_k;
  }
  tile_base[G] = static_cast<int32_t>(base);
}

// Word `word` (over all groups) of the packed sfa destination; `tiles_total` =
// tile_base[G]. Returns false past the last group's tiles.
NVFP4_HD bool packed_sfa_word(const ScaleSource& src, const int32_t* offsets, const int32_t* tile_base, int32_t G,
                              int64_t total_M, int64_t K, int64_t word, uint32_t* value) {
  const int64_t t = word >> 7;
  if (t >= tile_base[G]) return false;
  const int32_t g = group_of_tile(tile_base, G, t);
  BlockedGeometry geo = blocked_geometry(1, K);
  const int64_t local_word = word - static_cast<int64_t>(tile_base[g]) * 128;
  const BlockedWord bw = blocked_word(geo, local_word);
  const int32_t rows = group_rows(offsets, g, total_M);
  *value = bw.row < rows ? read_scale_word(src, 0, clamped_offset(offsets, g, total_M) + bw.row, bw.col0, geo.kcols, K)
                         : 0u;
  return true;
}

}  // namespace nvfp4::sm100
