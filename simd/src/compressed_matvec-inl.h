// Per-target body of the compressed MatVec (compressed_matrix.h).
#if defined(KVRT_SIMD_COMPRESSED_MATVEC_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef KVRT_SIMD_COMPRESSED_MATVEC_INL_H_
#undef KVRT_SIMD_COMPRESSED_MATVEC_INL_H_
#else
#define KVRT_SIMD_COMPRESSED_MATVEC_INL_H_
#endif

#include <algorithm>
#include <cstddef>
#include <type_traits>

#include "compressed_layout.h"
#include "compressed_rows-inl.h"
#include "hwy/cache_control.h"
#include "hwy/highway.h"
#include "kvrt/simd/compressed_matrix.h"
#include "panel_columns-inl.h"

HWY_BEFORE_NAMESPACE();
namespace kvrt::simd::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Rows (of 64 bytes: one cache line per panel) the bf16/f16 kernel prefetches
// ahead of the row it reads: 1 KiB ahead in each of its panels, which speeds up the
// bf16/f16 decode of models whose weights come from memory (the quantized kernels
// gained nothing from it).
inline constexpr size_t kPrefetchRows = 16;
// Blocks of 32 rows the q8_0/q4_0 kernel prefetches ahead.
inline constexpr size_t kQuantPrefetchBlocks = 2;

// One row k of an exact-form group: each panel's row decoded (Rows::RowAt) and its
// products with xk added to the panel's chains.
template <template <class> class Rows, size_t kPanels, class D>
HWY_INLINE void ExactRowProducts(D d, const uint8_t* const (&row)[kPanels], hn::Vec<D> xk,
                                 hn::Vec<D> (&acc)[kPanels][PanelVectors<D>()]) {
  constexpr size_t kVecs = PanelVectors<D>();
  HWY_UNROLL(4)
  for (size_t g = 0; g < kPanels; ++g) {
    hn::Vec<D> wk[kVecs];
    Rows<D>::RowAt(d, row[g], wk);
    HWY_UNROLL(16)
    for (size_t v = 0; v < kVecs; ++v) acc[g][v] = hn::MulAdd(xk, wk[v], acc[g][v]);
  }
}

// bf16/f16, the exact form: y for the columns of kPanels consecutive panels from
// `first_panel`; every panel row is decoded once to the values of at() and contributes
// x[k]·W[k][n] to one FMA chain per column, in ascending k from 0, exactly as the f32
// MatVec (matvec-inl.h) does on the dequantized matrix.
//
// The row pointers advance by their strides, and the rows with a prefetch target
// inside this group's panels run in a loop of their own without bounds checks: with
// the row index, the strides and four bounds checks per row, g++ 12 kept the
// bookkeeping on the stack (the cached bf16 768x2048 matvec read 0.91 of the bytes
// an f16 one of the same size did).
template <template <class> class Rows, size_t kPanels, class D>
HWY_INLINE void ExactMatVecGroup(D d, const CompressedMatrixView& w, const float* x, float* y,
                                 size_t first_panel) {
  constexpr size_t kVecs = PanelVectors<D>();
  const uint8_t* row[kPanels];
  size_t stride[kPanels];
  hn::Vec<D> acc[kPanels][kVecs];
  for (size_t g = 0; g < kPanels; ++g) {
    const Rows<D> rows = HalfRowsOf<Rows, D>(compressed::RowsOfPanel(w, first_panel + g));
    row[g] = rows.panel;
    stride[g] = rows.row_stride;
    for (size_t v = 0; v < kVecs; ++v) acc[g][v] = hn::Zero(d);
  }
  const size_t ahead_rows = std::min(kPrefetchRows, w.rows);
  size_t k = 0;
  for (; k + ahead_rows < w.rows; ++k) {
    const auto xk = hn::Set(d, x[k]);
    for (size_t g = 0; g < kPanels; ++g) hwy::Prefetch(row[g] + kPrefetchRows * stride[g]);
    ExactRowProducts<Rows>(d, row, xk, acc);
    for (size_t g = 0; g < kPanels; ++g) row[g] += stride[g];
  }
  // The last rows' requests run on into the bytes that follow each panel's rows
  // (for the last panel, the next group's first rows, which the next kernel group of
  // a task reads), up to the end of the matrix.
  const uint8_t* const matrix_end = w.data + w.panels() * compressed::PanelBytes(w.type, w.rows);
  for (; k < w.rows; ++k) {
    const auto xk = hn::Set(d, x[k]);
    for (size_t g = 0; g < kPanels; ++g) {
      const uint8_t* ahead = row[g] + kPrefetchRows * stride[g];
      if (ahead < matrix_end) hwy::Prefetch(ahead);
    }
    ExactRowProducts<Rows>(d, row, xk, acc);
    for (size_t g = 0; g < kPanels; ++g) row[g] += stride[g];
  }
  for (size_t g = 0; g < kPanels; ++g) {
    const size_t first_col = (first_panel + g) * kCompressedPanelWidth;
    StorePanelRow<kVecs>(d, acc[g], std::min(kCompressedPanelWidth, w.cols - first_col),
                         y + first_col);
  }
}

// Panels kG.. of a lane-order q4_0 row whose panels start at group panel kFirst,
// decoded with their shifts known at compile time (Q4Quants::DecodeLanes).
// kByteLoads: Q4Quants::DecodeLanes reading past the row (never on a group's last).
template <class Q, size_t kFirst, size_t kG, bool kByteLoads, size_t kPanels, size_t kVecs, class D>
HWY_INLINE void DecodeLaneOrderRow(D d, const uint8_t* row, hn::Vec<D> (&q)[kPanels][kVecs]) {
  if constexpr (kG < kPanels) {
    Q::template DecodeLanes<kFirst + kG, kByteLoads>(d, row, q[kG]);
    DecodeLaneOrderRow<Q, kFirst, kG + 1, kByteLoads>(d, row, q);
  }
}

// One lane-order row's products with x[k] (xk) added to the kPanels' partial sums.
// AVX-512 decodes every panel first, then multiplies, which is faster than panel by
// panel. With 16 registers (AVX2) the decoded panels would spill, which costs far
// more, so each panel is decoded, then multiplied.
template <class Q, size_t kFirst, size_t kG, bool kByteLoads, size_t kPanels, size_t kVecs, class D>
HWY_INLINE void LaneOrderRowProducts(D d, const uint8_t* row, hn::Vec<D> xk,
                                     hn::Vec<D> (&partial)[kPanels][kVecs]) {
#if HWY_TARGET == HWY_AVX3
  static_assert(kG == 0, "all panels at once");
  hn::Vec<D> q[kPanels][kVecs];
  DecodeLaneOrderRow<Q, kFirst, 0, kByteLoads>(d, row, q);
  HWY_UNROLL(4)
  for (size_t g = 0; g < kPanels; ++g) {
    HWY_UNROLL(16)
    for (size_t v = 0; v < kVecs; ++v) partial[g][v] = hn::MulAdd(xk, q[g][v], partial[g][v]);
  }
#else
  if constexpr (kG < kPanels) {
    hn::Vec<D> q[kVecs];
    Q::template DecodeLanes<kFirst + kG>(d, row, q);
    HWY_UNROLL(16)
    for (size_t v = 0; v < kVecs; ++v) partial[kG][v] = hn::MulAdd(xk, q[v], partial[kG][v]);
    LaneOrderRowProducts<Q, kFirst, kG + 1, kByteLoads>(d, row, xk, partial);
  }
#endif
}

// Requests the bytes of one block of the panel group a kernel group starts in, a
// slice before each of the 32 rows of the block being read, so that the requests
// stay spread out (a burst of them fills the line-fill buffers and stalls).
struct QuantBlockPrefetch {
  const uint8_t* line = nullptr;
  const uint8_t* end = nullptr;
  size_t lines_per_row = 0;

  QuantBlockPrefetch() = default;  // asks for nothing
  // Block `block` of the group of `rows` in `w`, whose blocks are `block_stride` bytes.
  // A block past the group's last is the bytes that follow it in memory (the next
  // group's first block, which the next kernel group of a task reads), up to the end
  // of the matrix.
  QuantBlockPrefetch(const CompressedMatrixView& w, const compressed::PanelRows& rows,
                     size_t block_stride, size_t block)
      : lines_per_row((block_stride / 64 + kQuantBlock - 1) / kQuantBlock) {
    const size_t matrix_bytes = w.panels() * compressed::PanelBytes(w.type, w.rows);
    const size_t first = static_cast<size_t>(rows.group - w.data) + block * block_stride;
    if (first >= matrix_bytes) return;
    line = w.data + first;
    end = w.data + std::min(first + block_stride, matrix_bytes);
  }
  HWY_INLINE void BeforeRow() {
    for (size_t i = 0; i < lines_per_row && line < end; ++i, line += 64) hwy::Prefetch(line);
  }
};

// q8_0/q4_0, block-scaled accumulation: per block b of 32 rows, one FMA chain over its
// rows in ascending k of x[k]·q (q8_0: q; q4_0: q − 8; exact floats) from 0 gives the
// partial sum P_b, and the column's accumulator becomes fma(d_b, P_b, acc), blocks in
// ascending order from 0. One multiply per 32 weights instead of per weight.
// kFirstLane ≥ 0: the kPanels are panels kFirstLane.. of one whole q4_0 group, whose
// lane-order rows serve all of them from the same loads, decoded with shifts known
// at compile time (LaneOrderRowProducts); the arithmetic is the same.
template <template <class> class Quants, size_t kPanels, int kFirstLane, class D>
HWY_INLINE void BlockScaledMatVecPanels(D d, const CompressedMatrixView& w, const float* x,
                                        float* y, size_t first_panel) {
  constexpr size_t kVecs = PanelVectors<D>();
  using Q = Quants<D>;
  const compressed::PanelRows first = compressed::RowsOfPanel(w, first_panel);
  QuantPanel panel[kPanels];
  hn::Vec<D> acc[kPanels][kVecs];
  for (size_t g = 0; g < kPanels; ++g) {
    panel[g] = QuantPanel(Q::kType, compressed::RowsOfPanel(w, first_panel + g));
    for (size_t v = 0; v < kVecs; ++v) acc[g][v] = hn::Zero(d);
  }
  const size_t blocks = w.rows / kQuantBlock;
  for (size_t b = 0; b < blocks; ++b) {
    const size_t k0 = b * kQuantBlock;
    hn::Vec<D> partial[kPanels][kVecs];
    for (size_t g = 0; g < kPanels; ++g) {
      for (size_t v = 0; v < kVecs; ++v) partial[g][v] = hn::Zero(d);
    }
    QuantBlockPrefetch next(w, first, panel[0].block_stride, b + kQuantPrefetchBlocks);
    // One row's products: lane order (kFirstLane ≥ 0) with kByteLoads as asked, or
    // panel by panel.
    const auto row_products = [&](size_t r, auto byte_loads) HWY_ATTR {
      const auto xk = hn::Set(d, x[k0 + r]);
      next.BeforeRow();
      if constexpr (kFirstLane >= 0) {
        LaneOrderRowProducts<Q, kFirstLane, 0, decltype(byte_loads)::value>(d, panel[0].GroupRow(b, r), xk,
                                                                            partial);
      } else {
        HWY_UNROLL(4)
        for (size_t g = 0; g < kPanels; ++g) {
          hn::Vec<D> q[kVecs];
          Q::Decode(d, panel[g], b, r, q);
          HWY_UNROLL(16)
          for (size_t v = 0; v < kVecs; ++v) partial[g][v] = hn::MulAdd(xk, q[v], partial[g][v]);
        }
      }
    };
    // A lane-order group's rows but its last are decoded by loads that reach a few
    // bytes into the next row (Q4Quants::DecodeLanes); the values are the same.
    const size_t loaded_rows = kFirstLane >= 0 && b + 1 == blocks ? kQuantBlock - 1 : kQuantBlock;
    for (size_t r = 0; r < loaded_rows; ++r) row_products(r, std::true_type());
    if (loaded_rows < kQuantBlock) row_products(kQuantBlock - 1, std::false_type());
    for (size_t g = 0; g < kPanels; ++g) {
      hn::Vec<D> scale[kVecs];
      LoadColumnScales(d, panel[g].Scales(b), scale);
      for (size_t v = 0; v < kVecs; ++v) acc[g][v] = hn::MulAdd(scale[v], partial[g][v], acc[g][v]);
    }
  }
  for (size_t g = 0; g < kPanels; ++g) {
    const size_t first_col = (first_panel + g) * kCompressedPanelWidth;
    StorePanelRow<kVecs>(d, acc[g], std::min(kCompressedPanelWidth, w.cols - first_col),
                         y + first_col);
  }
}

template <template <class> class Quants, size_t kPanels, class D>
HWY_INLINE void BlockScaledMatVecGroup(D d, const CompressedMatrixView& w, const float* x,
                                       float* y, size_t first_panel) {
  // A kernel group of 4 (AVX3) or 2 (AVX2) panels that starts at the first or third
  // panel of a lane-order group lies inside it.
  constexpr size_t kGroupPanels = compressed::kGroupPanels;
  if constexpr (Quants<D>::kType == CompressedFormat::kQ4_0 && kPanels >= 2 &&
                kGroupPanels % kPanels == 0) {
    const compressed::PanelRows first = compressed::RowsOfPanel(w, first_panel);
    if (first.LaneOrder() && first.index == 0) {
      return BlockScaledMatVecPanels<Quants, kPanels, 0>(d, w, x, y, first_panel);
    }
    if constexpr (kPanels == 2) {
      if (first.LaneOrder() && first.index == 2) {
        return BlockScaledMatVecPanels<Quants, kPanels, 2>(d, w, x, y, first_panel);
      }
    }
  }
  BlockScaledMatVecPanels<Quants, kPanels, -1>(d, w, x, y, first_panel);
}

// Groups of about eight accumulators (4 panels on AVX3, 2 on AVX2, 1 on the scalar
// target), then one smaller group for the rest of the range. Each column's
// arithmetic is the same in a group of any size.
template <template <class> class Rows, bool kBlockScaled, class D>
HWY_INLINE void CompressedMatVecPanels(D d, const CompressedMatrixView& w, const float* x,
                                       float* y, size_t panel_begin, size_t panel_end) {
  constexpr size_t kGroup = std::max<size_t>(1, 8 / PanelVectors<D>());
  ForPanelGroups<kGroup>(panel_begin, panel_end, [&](size_t p, auto panels) {
    if constexpr (kBlockScaled) {
      BlockScaledMatVecGroup<Rows, decltype(panels)::value>(d, w, x, y, p);
    } else {
      ExactMatVecGroup<Rows, decltype(panels)::value>(d, w, x, y, p);
    }
  });
}

}  // namespace kvrt::simd::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // KVRT_SIMD_COMPRESSED_MATVEC_INL_H_ toggle
