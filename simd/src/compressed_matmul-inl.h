// Per-target body of the compressed MatMul (compressed_matrix.h): the f32 MatMul's loop
// nest and micro-kernel (matmul-inl.h) over panel K blocks dequantized once per tile.
#if defined(KVRT_SIMD_COMPRESSED_MATMUL_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef KVRT_SIMD_COMPRESSED_MATMUL_INL_H_
#undef KVRT_SIMD_COMPRESSED_MATMUL_INL_H_
#else
#define KVRT_SIMD_COMPRESSED_MATMUL_INL_H_
#endif

#include <algorithm>
#include <cstddef>

#include "compressed_rows-inl.h"
#include "hwy/highway.h"
#include "kvrt/simd/compressed_matrix.h"
#include "matmul-inl.h"
#include "panel_columns-inl.h"

HWY_BEFORE_NAMESPACE();
namespace kvrt::simd::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Rows [k0, k0 + depth) of one panel dequantized into tile[depth][32] (the f32 panel
// layout), with the values of at().
template <template <class> class Rows, class D>
HWY_INLINE void DequantizePanelRows(D d, const uint8_t* panel, size_t k0, size_t depth,
                                    float* HWY_RESTRICT tile) {
  constexpr size_t kVecs = PanelVectors<D>();
  const size_t lanes = hn::Lanes(d);
  Rows<D> rows;
  rows.panel = panel;
  for (size_t k = k0; k < k0 + depth; ++k) {
    if (k % Rows<D>::kBlockRows == 0) rows.LoadScales(d, k);
    hn::Vec<D> wk[kVecs];
    rows.Row(d, k, wk);
    float* out = tile + (k - k0) * kCompressedPanelWidth;
    HWY_UNROLL(16)
    for (size_t v = 0; v < kVecs; ++v) hn::Store(wk[v], d, out + v * lanes);
  }
}

// Loop nest of MatMulPanels (matmul-inl.h): M blocks → K blocks in ascending order →
// panels → row tiles, with each panel's K block dequantized into a 32 KiB stack tile
// before its row tiles reuse it (once per M block of up to 256 rows). The tile is f32
// in the f32 panel layout, so every C[m][n] is the f32 kernel's single ascending FMA
// chain over the dequantized weights.
template <template <class> class Rows, class D>
HWY_INLINE void CompressedMatMulPanels(D d, const float* a, size_t lda, size_t m,
                                       const CompressedMatrixView& w, float* c, size_t ldc,
                                       size_t panel_begin, size_t panel_end) {
  constexpr size_t kWidth = kCompressedPanelWidth;
  constexpr size_t kRows = TileRows<D>();
  constexpr size_t kDepth = kDepthBlock<float>;
  static_assert(kWidth == kPanelWidth<float>, "the tile is an f32 panel");
  static_assert(kDepth % kQuantBlock == 0, "K blocks must hold whole scale blocks");
  HWY_ALIGN float tile[kDepth * kWidth];
  const size_t depth_total = w.rows;
  for (size_t m0 = 0; m0 < m; m0 += kRowBlock) {
    const size_t rows = std::min(kRowBlock, m - m0);
    // K = 0 still runs one (empty) block, which stores zeros like the twin.
    size_t k0 = 0;
    do {
      const size_t depth = std::min(kDepth, depth_total - k0);
      const bool continue_c = k0 > 0;
      for (size_t p = panel_begin; p < panel_end; ++p) {
        const size_t col0 = p * kWidth;
        const size_t valid = std::min(kWidth, w.cols - col0);
        DequantizePanelRows<Rows>(d, w.panel(p), k0, depth, tile);
        const float* a_block = a + m0 * lda + k0;
        float* c_block = c + m0 * ldc + col0;
        size_t r = 0;
        for (; r + kRows <= rows; r += kRows) {
          MatMulTile<kRows>(d, a_block + r * lda, lda, tile, depth, continue_c, valid,
                            c_block + r * ldc, ldc);
        }
        if (r < rows) {
          MatMulRemainderTile<kRows - 1>(d, rows - r, a_block + r * lda, lda, tile, depth,
                                         continue_c, valid, c_block + r * ldc, ldc);
        }
      }
      k0 += depth;
    } while (k0 < depth_total);
  }
}

}  // namespace kvrt::simd::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // KVRT_SIMD_COMPRESSED_MATMUL_INL_H_ toggle
