// MatMulBf16Amx (bf16_activations.h): the tile kernel of amx_bf16_tiles.h on the
// CPU's tiles, where amx.h finds them usable; and the tiles' peak probe (amx.h).
#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "amx_bf16_tiles.h"
#include "amx_tiles.h"
#include "kvrt/simd/amx.h"
#include "kvrt/simd/bf16_activations.h"

namespace kvrt::simd {

bool MatMulBf16Amx(const Bf16Rows& a, size_t first_row, size_t m, const CompressedMatrixView& w, float* c,
                   size_t ldc, size_t panel_begin, size_t panel_end) {
#if defined(__x86_64__)
  if (!AmxBf16Available()) return false;
  AmxTiles tiles;
  amx_bf16::MatMulBf16OnTiles(tiles, a, first_row, m, w, c, ldc, panel_begin, panel_end);
  return true;
#else
  (void)a, (void)first_row, (void)m, (void)w, (void)c, (void)ldc, (void)panel_begin, (void)panel_end;
  return false;
#endif
}

size_t RunAmxBf16DotProbe(size_t rounds, float* sink) {
#if defined(__x86_64__)
  if (!AmxBf16Available()) return 0;
  AmxTiles tiles;
  tiles.Configure(amx_bf16::BlockConfig(kTileMaxRows, kTileMaxRows));
  alignas(64) uint32_t ones[kTileMaxRows][kTileRowBytes / 4];  // bf16 pairs (1, 1)
  std::fill(&ones[0][0], &ones[0][0] + kTileMaxRows * kTileRowBytes / 4, 0x3F803F80u);
  tiles.Load<4>(ones, kTileRowBytes);
  tiles.Load<5>(ones, kTileRowBytes);
  tiles.Load<6>(ones, kTileRowBytes);
  tiles.Load<7>(ones, kTileRowBytes);
  tiles.Zero<0>();
  tiles.Zero<1>();
  tiles.Zero<2>();
  tiles.Zero<3>();
  for (size_t i = 0; i < rounds; ++i) {  // four independent accumulators
    tiles.DotBf16<0, 4, 6>();
    tiles.DotBf16<1, 4, 7>();
    tiles.DotBf16<2, 5, 6>();
    tiles.DotBf16<3, 5, 7>();
  }
  alignas(64) float c[kTileMaxRows][kTileRowBytes / 4];
  tiles.Store<0>(c, kTileRowBytes);
  tiles.Release();
  *sink += c[0][0];
  constexpr size_t kFlopsPerDot = 2 * kTileMaxRows * (kTileRowBytes / 4) * (kTileRowBytes / 2);
  return rounds * 4 * kFlopsPerDot;
#else
  (void)rounds, (void)sink;
  return 0;
#endif
}

}  // namespace kvrt::simd
