// Per-target body of MatMul (matmul.h).
#if defined(KVRT_SIMD_MATMUL_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef KVRT_SIMD_MATMUL_INL_H_
#undef KVRT_SIMD_MATMUL_INL_H_
#else
#define KVRT_SIMD_MATMUL_INL_H_
#endif

#include <algorithm>
#include <cstddef>

#include "hwy/cache_control.h"
#include "hwy/highway.h"
#include "kvrt/simd/packed_matrix.h"
#include "panel_columns-inl.h"

HWY_BEFORE_NAMESPACE();
namespace kvrt::simd::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Rows of the register tile: as many as fit ~16 accumulators on AVX-512 (32 vector
// registers: 16 accumulators + 2 panel vectors + broadcasts), ~12 on 16-register
// targets. AVX3: 8 rows × 2 vectors; AVX2: 3 × 4; scalar: 1 × NR.
template <class D>
constexpr size_t TileRows() {
  constexpr size_t kAccumulators = HWY_MAX_BYTES >= 64 ? 16 : 12;
  return std::max<size_t>(1, kAccumulators / PanelVectors<D>());
}

// Cache blocks. A K block of one panel (kDepthBlock × NR values, 32 KiB) stays in
// the 48 KiB L1 while the tiles of an M block reuse it; the M block of A
// (kRowBlock × kDepthBlock: 256 KiB f32, 512 KiB f64) stays in the 2 MiB L2 while it
// is reused for every panel of the range.
template <class T>
inline constexpr size_t kDepthBlock = 32 * 1024 / (kPanelWidth<T> * sizeof(T));
inline constexpr size_t kRowBlock = 256;

// C[0..kRows)[0..valid) (row stride ldc) continued over `depth` more k: the tile is
// loaded from C (or starts at zero for the first K block), accumulates
// A[r][k]·W[k][·] for k in order, and is stored back. Storing and reloading a float
// rounds nothing, so across K blocks each element is a single ascending FMA chain.
//
// With `prefetch` (the first tile of a K block, the one that brings it from
// memory) rows are prefetched kPrefetchRows ahead, past the block's end into
// `after` (the weights the loop reads next; none after the last). With few
// rows per block (a decode step of several sequences) the FMAs per weight row are
// too few to keep enough loads in flight, and the block's 32 KiB jumps between
// panels defeat the hardware's stream prefetch.
inline constexpr size_t kPrefetchRows = 32;  // 4 KiB ahead of an f32 panel

template <size_t kRows, class D, typename T = hn::TFromD<D>>
HWY_INLINE void MatMulTile(D d, const T* a, size_t lda, const T* panel_rows, size_t depth,
                           bool continue_c, size_t valid, T* c, size_t ldc,
                           bool prefetch = false, const T* after = nullptr) {
  constexpr size_t kWidth = kPanelWidth<T>;
  constexpr size_t kVecs = PanelVectors<D>();
  constexpr size_t kLineElements = 64 / sizeof(T);
  const size_t lanes = hn::Lanes(d);
  hn::Vec<D> acc[kRows][kVecs];
  for (size_t r = 0; r < kRows; ++r) {
    if (continue_c) {
      LoadPanelRow<kVecs>(d, c + r * ldc, valid, acc[r]);
    } else {
      for (size_t v = 0; v < kVecs; ++v) acc[r][v] = hn::Zero(d);
    }
  }
  for (size_t k = 0; k < depth; ++k) {
    const T* w_row = panel_rows + k * kWidth;
    if (prefetch) {
      const T* ahead = k + kPrefetchRows < depth ? w_row + kPrefetchRows * kWidth
                       : after != nullptr        ? after + (k + kPrefetchRows - depth) * kWidth
                                                 : nullptr;
      if (ahead != nullptr) {
        for (size_t e = 0; e < kWidth; e += kLineElements) hwy::Prefetch(ahead + e);
      }
    }
    hn::Vec<D> w[kVecs];
    HWY_UNROLL(16)
    for (size_t v = 0; v < kVecs; ++v) w[v] = hn::LoadU(d, w_row + v * lanes);
    HWY_UNROLL(16)
    for (size_t r = 0; r < kRows; ++r) {
      const auto a_rk = hn::Set(d, a[r * lda + k]);
      HWY_UNROLL(16)
      for (size_t v = 0; v < kVecs; ++v) acc[r][v] = hn::MulAdd(a_rk, w[v], acc[r][v]);
    }
  }
  for (size_t r = 0; r < kRows; ++r) StorePanelRow<kVecs>(d, acc[r], valid, c + r * ldc);
}

// The last rows % TileRows rows of an M block, with a tile of exactly `rows` rows.
template <size_t kRows, class D, typename T = hn::TFromD<D>>
HWY_INLINE void MatMulRemainderTile(D d, size_t rows, const T* a, size_t lda,
                                    const T* panel_rows, size_t depth, bool continue_c,
                                    size_t valid, T* c, size_t ldc, bool prefetch,
                                    const T* after) {
  if constexpr (kRows > 0) {
    if (rows == kRows) {
      MatMulTile<kRows>(d, a, lda, panel_rows, depth, continue_c, valid, c, ldc, prefetch, after);
    } else {
      MatMulRemainderTile<kRows - 1>(d, rows, a, lda, panel_rows, depth, continue_c, valid, c,
                                     ldc, prefetch, after);
    }
  }
}

// Loop nest: M blocks → K blocks in ascending order → panels of the range → row tiles.
// Only the K-block order matters for the numerics, and it is fixed.
template <class D, typename T = hn::TFromD<D>>
HWY_INLINE void MatMulPanels(D d, const T* a, size_t lda, size_t m, const PackedMatrixView<T>& w,
                             T* c, size_t ldc, size_t panel_begin, size_t panel_end) {
  constexpr size_t kWidth = kPanelWidth<T>;
  constexpr size_t kRows = TileRows<D>();
  const size_t depth_total = w.rows;
  for (size_t m0 = 0; m0 < m; m0 += kRowBlock) {
    const size_t rows = std::min(kRowBlock, m - m0);
    // K = 0 still runs one (empty) block, which stores zeros like the twin.
    size_t k0 = 0;
    do {
      const size_t depth = std::min(kDepthBlock<T>, depth_total - k0);
      const bool continue_c = k0 > 0;
      for (size_t p = panel_begin; p < panel_end; ++p) {
        const size_t col0 = p * kWidth;
        const size_t valid = std::min(kWidth, w.cols - col0);
        const T* panel_rows = w.panel(p) + k0 * kWidth;
        const T* a_block = a + m0 * lda + k0;
        T* c_block = c + m0 * ldc + col0;
        // What this loop reads after the block: the next panel's, or the first
        // panel's next K block.
        const T* after = p + 1 < panel_end       ? w.panel(p + 1) + k0 * kWidth
                         : k0 + depth < depth_total ? w.panel(panel_begin) + (k0 + depth) * kWidth
                                                    : nullptr;
        size_t r = 0;
        for (; r + kRows <= rows; r += kRows) {
          MatMulTile<kRows>(d, a_block + r * lda, lda, panel_rows, depth, continue_c, valid,
                            c_block + r * ldc, ldc, r == 0, after);
        }
        if (r < rows) {
          MatMulRemainderTile<kRows - 1>(d, rows - r, a_block + r * lda, lda, panel_rows, depth,
                                         continue_c, valid, c_block + r * ldc, ldc, r == 0, after);
        }
      }
      k0 += depth;
    } while (k0 < depth_total);
  }
}

}  // namespace kvrt::simd::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // KVRT_SIMD_MATMUL_INL_H_ toggle
