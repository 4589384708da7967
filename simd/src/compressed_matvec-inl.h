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
#include "kquant_rows-inl.h"
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
// Blocks of 32 rows the block-quantized kernel prefetches ahead.
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

// Panels kG.. of a lane-order row (q4_0, q5_0, q4_k, q5_k, q6_k) whose panels start at group
// panel kFirst, decoded with their shifts known at compile time (Q4Quants::DecodeLanes).
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

// Requests the bytes of one block of the panel group a kernel group starts in (with
// the group's super-block headers before a K-quant super-block's first block), a
// slice before each of the 32 rows of the block being read, so that the requests
// stay spread out (a burst of them fills the line-fill buffers and stalls).
struct QuantBlockPrefetch {
  const uint8_t* line = nullptr;
  const uint8_t* end = nullptr;
  size_t lines_per_row = 0;

  QuantBlockPrefetch() = default;  // asks for nothing
  // Block `block` of the group of `group` (whose first panel it describes) in `w`, of
  // `blocks` blocks. A block past the group's last is the bytes that follow it in
  // memory (the next group's first blocks, which the next kernel group of a task
  // reads), up to the end of the matrix.
  QuantBlockPrefetch(const CompressedMatrixView& w, const QuantPanel& group, size_t block, size_t blocks) {
    const size_t matrix_bytes = w.panels() * compressed::PanelBytes(w.type, w.rows);
    const size_t group_offset = static_cast<size_t>(group.group - w.data);
    size_t first = 0, bytes = group.block_stride;
    if (block < blocks) {
      first = static_cast<size_t>(group.Block(block) - w.data);
      if ((block & ((size_t{1} << group.block_shift) - 1)) == 0) {
        first -= group.blocks_offset;
        bytes += group.blocks_offset;
      }
    } else {
      first = group_offset + (blocks >> group.block_shift) * group.super_stride +
              (block - blocks) * group.block_stride;
    }
    if (first >= matrix_bytes) return;
    line = w.data + first;
    end = w.data + std::min(first + bytes, matrix_bytes);
    lines_per_row = (bytes / 64 + kQuantBlock - 1) / kQuantBlock;
  }
  HWY_INLINE void BeforeRow() {
    for (size_t i = 0; i < lines_per_row && line < end; ++i, line += 64) hwy::Prefetch(line);
  }
};

// The block-quantized types: block-scaled accumulation by sub-block (BlockScales: 32
// rows, 16 for q6_k, q3_k and q2_k). Per sub-block, one FMA chain over its rows in ascending k of
// x[k]·q (q8_0: q; q4_0: q − 8; q5_0: q − 16; q2_k, q4_k, q5_k: q; q6_k: q − 32; exact floats) from 0
// gives the partial sum P, and the column's accumulator becomes fma(scale, P, acc) (and
// for q2_k, q4_k and q5_k then acc − min·S fused), sub-blocks in ascending order from 0. One multiply per
// sub-block instead of per weight.
// kFirstLane ≥ 0: the kPanels are panels kFirstLane.. of one whole group in lane
// order, whose rows serve all of them from the same loads, decoded with shifts known
// at compile time (LaneOrderRowProducts); the arithmetic is the same.
template <template <class> class Quants, size_t kPanels, int kFirstLane, class D>
HWY_INLINE void BlockScaledMatVecPanels(D d, const CompressedMatrixView& w, const float* x,
                                        float* y, size_t first_panel) {
  constexpr size_t kVecs = PanelVectors<D>();
  using Q = Quants<D>;
  using Scale = BlockScales<Q::kType>;
  QuantPanel panel[kPanels];
  hn::Vec<D> acc[kPanels][kVecs];
  for (size_t g = 0; g < kPanels; ++g) {
    panel[g] = QuantPanel(Q::kType, compressed::RowsOfPanel(w, first_panel + g));
    for (size_t v = 0; v < kVecs; ++v) acc[g][v] = hn::Zero(d);
  }
  const size_t blocks = w.rows / kQuantBlock;
  for (size_t b = 0; b < blocks; ++b) {
    const size_t k0 = b * kQuantBlock;
    QuantBlockPrefetch next(w, panel[0], b + kQuantPrefetchBlocks, blocks);
    // A lane-order group's rows but the matrix's last are decoded by loads that may
    // reach a few bytes into the next row (NibbleBits::LaneOrder); the values are the
    // same.
    const size_t loaded_rows = kFirstLane >= 0 && b + 1 == blocks ? kQuantBlock - 1 : kQuantBlock;
    for (size_t s = 0; s < Scale::kSubBlocks; ++s) {
      hn::Vec<D> partial[kPanels][kVecs];
      for (size_t g = 0; g < kPanels; ++g) {
        for (size_t v = 0; v < kVecs; ++v) partial[g][v] = hn::Zero(d);
      }
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
      const size_t rows_begin = s * Scale::kSubRows, rows_end = rows_begin + Scale::kSubRows;
      const size_t loaded_end = std::min(rows_end, loaded_rows);
      for (size_t r = rows_begin; r < loaded_end; ++r) row_products(r, std::true_type());
      for (size_t r = loaded_end; r < rows_end; ++r) row_products(r, std::false_type());
      float sum = 0.0f;
      if constexpr (Scale::kHasMin) sum = compressed::SubBlockSum(x + k0 + rows_begin, Scale::kSubRows);
      for (size_t g = 0; g < kPanels; ++g) {
        hn::Vec<D> scale[kVecs];
        Scale::Scales(d, panel[g], b, s, scale);
        for (size_t v = 0; v < kVecs; ++v) acc[g][v] = hn::MulAdd(scale[v], partial[g][v], acc[g][v]);
        if constexpr (Scale::kHasMin) {
          hn::Vec<D> min[kVecs];
          Scale::Mins(d, panel[g], b, s, min);
          const auto sum_vector = hn::Set(d, sum);
          for (size_t v = 0; v < kVecs; ++v) acc[g][v] = hn::NegMulAdd(min[v], sum_vector, acc[g][v]);
        }
      }
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
  if constexpr (compressed::HasNibbleRows(Quants<D>::kType) && kPanels >= 2 &&
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
