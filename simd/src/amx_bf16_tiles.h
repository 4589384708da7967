// The bf16-activation product on AMX tiles (MatMulBf16Amx, bf16_activations.h), as a
// template over the tiles (amx_tiles.h): AmxTiles in the library, TileModel in the tests.
//
// A block of up to 32 rows × one kBf16Pairs panel (32 columns) keeps its four 16 × 16
// f32 C tiles in tmm0–3 (tmm0/1: rows 0–15, columns 0–15 / 16–31; tmm2/3: rows 16–31)
// for the whole of K. Each step over 16 pairs (32 of K) loads two A tiles (tmm4/5: 16
// rows × 16 pairs, 64 bytes a row, straight from the Bf16Rows) and two B tiles (tmm6/7:
// 16 pair rows × 16 columns, the two halves of the panel's 128-byte pair rows), and
// runs four TDPBF16PS: each B tile is used by 32 rows, each A tile by 32 columns.
//
// Remainders. Fewer rows than a block: tiles of fewer rows (the configuration is
// reloaded only when the block's shape changes, at most twice a call). K/2 not a
// multiple of 16: the last pairs of the block's rows and of the panel are copied into
// zero-padded tiles in memory, whose extra products are 0·0. Columns past w.cols in the
// last panel are computed from the zero padding of the layout and not stored.
//
// Why a row's bits do not depend on M, first_row or the panel range: each row of a C
// tile is its own accumulation over the same sequence of instructions (the same 16-pair
// steps, the same padded tail), whatever the tile's other rows hold or how many there are.
//
// The tiles are configured on entry and released (TILERELEASE) on exit, so a call leaves
// the thread's tile state as it found it.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "amx_tiles.h"
#include "kvrt/simd/bf16_activations.h"

namespace kvrt::simd::amx_bf16 {

inline constexpr size_t kTileRows = kTileMaxRows;       // rows of a C or A tile; pair rows of a B tile
inline constexpr size_t kTilePairs = kTileRowBytes / 4;  // pairs in a row of an A tile
inline constexpr size_t kTileColumns = kTileRowBytes / 4;  // f32 columns of a C tile
inline constexpr size_t kBlockRows = 2 * kTileRows;
inline constexpr size_t kPanelWords = kCompressedPanelWidth;  // 32-bit lanes in a pair row of a panel
static_assert(kPanelWords == 2 * kTileColumns, "a panel is two B tiles wide");

// The tiles of a block whose first row tile has `low` rows (1..16) and second `high`
// (0..16; 0 leaves tmm2, tmm3 and tmm5 unconfigured, and unused).
inline TileConfig BlockConfig(size_t low, size_t high) {
  TileConfig config;
  const auto set = [&](size_t tile, size_t rows) {
    config.rows[tile] = static_cast<uint8_t>(rows);
    config.bytes_per_row[tile] = kTileRowBytes;
  };
  for (size_t tile : {0, 1, 4}) set(tile, low);
  if (high != 0) {
    for (size_t tile : {2, 3, 5}) set(tile, high);
  }
  set(6, kTileRows);
  set(7, kTileRows);
  return config;
}

// C tile kTile (rows × 16 columns from column first_col) into c, whole tiles straight
// to c, the last panel's partial tile through a buffer.
template <int kTile, class Tiles>
void StoreTile(Tiles& tiles, size_t rows, size_t first_col, size_t cols, float* c, size_t ldc) {
  if (first_col >= cols) return;
  if (first_col + kTileColumns <= cols) return tiles.template Store<kTile>(c + first_col, ldc * sizeof(float));
  alignas(64) float tile[kTileRows][kTileColumns];
  tiles.template Store<kTile>(tile, sizeof(tile[0]));
  for (size_t r = 0; r < rows; ++r) std::memcpy(c + r * ldc + first_col, tile[r], (cols - first_col) * sizeof(float));
}

// Rows [0, low + high) of a block (a: its first activation row, a_tail: its last
// K/2 mod 16 pairs zero-padded to two A tiles) × panel `panel`, into c.
template <class Tiles>
void BlockPanel(Tiles& tiles, const uint32_t* a, size_t a_words, size_t low, size_t high,
                const CompressedMatrixView& w, size_t panel, const uint32_t* a_tail, float* c, size_t ldc) {
  const size_t pairs = w.rows / 2, steps = pairs / kTilePairs, tail = pairs % kTilePairs;
  const uint32_t* b = reinterpret_cast<const uint32_t*>(w.panel(panel));
  const size_t a_stride = a_words * sizeof(uint32_t), b_stride = kPanelWords * sizeof(uint32_t);
  const uint32_t* a_high = high != 0 ? a + kTileRows * a_words : a;  // read only when high != 0
  tiles.template Zero<0>();
  tiles.template Zero<1>();
  if (high != 0) {
    tiles.template Zero<2>();
    tiles.template Zero<3>();
  }
  const auto step = [&](const uint32_t* a_low_at, const uint32_t* a_high_at, size_t a_step_stride,
                        const uint32_t* b_at) {
    tiles.template Load<6>(b_at, b_stride);
    tiles.template Load<7>(b_at + kTileColumns, b_stride);
    tiles.template Load<4>(a_low_at, a_step_stride);
    tiles.template DotBf16<0, 4, 6>();
    tiles.template DotBf16<1, 4, 7>();
    if (high != 0) {
      tiles.template Load<5>(a_high_at, a_step_stride);
      tiles.template DotBf16<2, 5, 6>();
      tiles.template DotBf16<3, 5, 7>();
    }
  };
  for (size_t s = 0; s < steps; ++s) {
    step(a + s * kTilePairs, a_high + s * kTilePairs, a_stride, b + s * kTilePairs * kPanelWords);
  }
  if (tail != 0) {
    alignas(64) uint32_t b_tail[kTileRows][kPanelWords] = {};
    std::memcpy(b_tail, b + steps * kTilePairs * kPanelWords, tail * sizeof(b_tail[0]));
    step(a_tail, a_tail + kTileRows * kTilePairs, kTilePairs * sizeof(uint32_t), &b_tail[0][0]);
  }
  const size_t first_col = panel * kCompressedPanelWidth;
  StoreTile<0>(tiles, low, first_col, w.cols, c, ldc);
  StoreTile<1>(tiles, low, first_col + kTileColumns, w.cols, c, ldc);
  if (high != 0) {
    float* c_high = c + kTileRows * ldc;
    StoreTile<2>(tiles, high, first_col, w.cols, c_high, ldc);
    StoreTile<3>(tiles, high, first_col + kTileColumns, w.cols, c_high, ldc);
  }
}

// MatMulBf16Amx's work on `tiles` (the caller checked that they can be used).
template <class Tiles>
void MatMulBf16OnTiles(Tiles& tiles, const Bf16Rows& a, size_t first_row, size_t m, const CompressedMatrixView& w,
                       float* c, size_t ldc, size_t panel_begin, size_t panel_end) {
  const size_t a_words = a.pairs_per_row();
  const size_t pairs = w.rows / 2, tail = pairs % kTilePairs, tail_start = pairs - tail;
  size_t configured_low = 0, configured_high = 0;
  for (size_t r = 0; r < m; r += kBlockRows) {
    const size_t rows = std::min(kBlockRows, m - r);
    const size_t low = std::min(kTileRows, rows), high = rows - low;
    if (low != configured_low || high != configured_high) {
      tiles.Configure(BlockConfig(low, high));
      configured_low = low;
      configured_high = high;
    }
    const uint32_t* block = a.pairs + (first_row + r) * a_words;
    alignas(64) uint32_t a_tail[kBlockRows][kTilePairs] = {};
    if (tail != 0) {
      for (size_t i = 0; i < rows; ++i) std::memcpy(a_tail[i], block + i * a_words + tail_start, tail * sizeof(uint32_t));
    }
    for (size_t p = panel_begin; p < panel_end; ++p) {
      BlockPanel(tiles, block, a_words, low, high, w, p, &a_tail[0][0], c + r * ldc, ldc);
    }
  }
  tiles.Release();
}

}  // namespace kvrt::simd::amx_bf16
