// Per-target body of the compressed MatMul (compressed_matrix.h): the f32 MatMul's loop
// nest (matmul-inl.h) over panel K blocks decoded once per tile into a stack buffer.
#if defined(KVRT_SIMD_COMPRESSED_MATMUL_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef KVRT_SIMD_COMPRESSED_MATMUL_INL_H_
#undef KVRT_SIMD_COMPRESSED_MATMUL_INL_H_
#else
#define KVRT_SIMD_COMPRESSED_MATMUL_INL_H_
#endif

#include <algorithm>
#include <cstddef>
#include <type_traits>

#include "compressed_layout.h"
#include "compressed_rows-inl.h"
#include "hwy/highway.h"
#include "kquant_rows-inl.h"
#include "kvrt/simd/compressed_matrix.h"
#include "matmul-inl.h"
#include "panel_columns-inl.h"

HWY_BEFORE_NAMESPACE();
namespace kvrt::simd::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// A panel's K block [k0, k0 + depth) decoded for the micro-kernels, in the f32 panel
// layout: `values` [depth][32] (bf16/f16: at(); the quantized types their integers,
// e.g. q or q − 8) and, for the quantized types, `scales` [sub-blocks][32] (one row per
// 32 rows, per 16 for q6_k, q3_k and q2_k) and for q2_k, q4_k and q5_k `mins`
// [sub-blocks][32] (dmin·m).
struct DecodedBlock {
  static constexpr size_t kDepth = kDepthBlock<float>;  // 256 rows: a 32 KiB tile
  static_assert(kDepth % kSuperBlock == 0, "K blocks must hold whole (super-)blocks");
  HWY_ALIGN float values[kDepth * kCompressedPanelWidth];
  HWY_ALIGN float scales[kDepth / 16 * kCompressedPanelWidth];
  HWY_ALIGN float mins[kDepth / 16 * kCompressedPanelWidth];
};

// q2_k, q4_k, q5_k: the sub-block sums S of each row of an M block over one K block
// (compressed_layout.h, SubBlockSum), [rows][sub-blocks of the K block].
struct RowSums {
  static constexpr size_t kStride = DecodedBlock::kDepth / 16;
  float sums[kRowBlock * kStride];
};

template <template <class> class Rows, class D>
HWY_INLINE void DecodeHalfBlock(D d, const compressed::PanelRows& panel, size_t k0, size_t depth,
                                DecodedBlock& block) {
  constexpr size_t kVecs = PanelVectors<D>();
  const size_t lanes = hn::Lanes(d);
  const Rows<D> rows = HalfRowsOf<Rows, D>(panel);
  for (size_t k = 0; k < depth; ++k) {
    hn::Vec<D> wk[kVecs];
    rows.Row(d, k0 + k, wk);
    for (size_t v = 0; v < kVecs; ++v) hn::Store(wk[v], d, block.values + k * kCompressedPanelWidth + v * lanes);
  }
}

template <template <class> class Quants, class D>
HWY_INLINE void DecodeQuantBlock(D d, const compressed::PanelRows& rows, size_t k0, size_t depth,
                                 DecodedBlock& block) {
  constexpr size_t kVecs = PanelVectors<D>();
  const size_t lanes = hn::Lanes(d);
  using Q = Quants<D>;
  using Scale = BlockScales<Q::kType>;
  const QuantPanel panel(Q::kType, rows);
  for (size_t b = 0; b < depth / kQuantBlock; ++b) {
    const size_t quant_block = k0 / kQuantBlock + b;
    for (size_t r = 0; r < kQuantBlock; ++r) {
      hn::Vec<D> q[kVecs];
      Q::Decode(d, panel, quant_block, r, q);
      float* out = block.values + (b * kQuantBlock + r) * kCompressedPanelWidth;
      for (size_t v = 0; v < kVecs; ++v) hn::Store(q[v], d, out + v * lanes);
    }
    for (size_t s = 0; s < Scale::kSubBlocks; ++s) {
      hn::Vec<D> scale[kVecs];
      Scale::Scales(d, panel, quant_block, s, scale);
      float* out = block.scales + (b * Scale::kSubBlocks + s) * kCompressedPanelWidth;
      for (size_t v = 0; v < kVecs; ++v) hn::Store(scale[v], d, out + v * lanes);
    }
    if constexpr (Scale::kHasMin) {
      for (size_t s = 0; s < Scale::kSubBlocks; ++s) {
        hn::Vec<D> min[kVecs];
        Scale::Mins(d, panel, quant_block, s, min);
        float* out = block.mins + (b * Scale::kSubBlocks + s) * kCompressedPanelWidth;
        for (size_t v = 0; v < kVecs; ++v) hn::Store(min[v], d, out + v * lanes);
      }
    }
  }
}

// The bytes of the group decoded next (rows [k0, k0 + depth) of the panel group that
// starts at panel p), asked into L2 a few lines before each row tile of the current
// block: the compressed panels stream from memory once per M block, and a block's first
// touch would otherwise stall the decode loop, whose few instructions per byte cannot
// hide the latency. A group's rows are interleaved, so its panels' K blocks are one
// region; each of the current group's W panels asks for its slice `slice` of W of it.
// Spread over the tiles, the requests never fill the core's line-fill buffers (a burst
// of 256 prefetches stalls, and may be dropped).
struct NextBlockPrefetch {
  const uint8_t* line = nullptr;
  const uint8_t* end = nullptr;
  size_t lines_per_tile = 0;

  NextBlockPrefetch() = default;
  NextBlockPrefetch(const CompressedMatrixView& w, size_t p, size_t k0, size_t depth, size_t tiles,
                    size_t slice, size_t slices) {
    const compressed::PanelRows rows = compressed::RowsOfPanel(w, p);
    const uint8_t* first = rows.group + rows.width * compressed::PanelBytes(w.type, k0);
    const size_t lines = rows.width * (compressed::PanelBytes(w.type, k0 + depth) -
                                       compressed::PanelBytes(w.type, k0)) / 64;
    line = first + slice * lines / slices * 64;
    end = first + (slice + 1) * lines / slices * 64;
    const size_t mine = static_cast<size_t>(end - line) / 64;
    lines_per_tile = (mine + tiles - 1) / tiles;
  }
  HWY_INLINE void BeforeTile() {
    for (size_t i = 0; i < lines_per_tile && line < end; ++i, line += 64) __builtin_prefetch(line, 0, 2);
  }
};

// Rows of the block-scaled register tile.
// - 32 registers (AVX3): the accumulators and partial sums of every row stay in
//   registers (2·kRows·kVecs), plus the panel row and a broadcast: 6 rows × 2 vectors
//   (24 + 3 of 32).
// - 16 registers (AVX2, the scalar targets): that rule leaves 1 row, whose panel-row
//   loads outnumber its FMAs. Instead the partial sums (kRows·kVecs), one broadcast per
//   row and one panel vector fill the registers, and the accumulators, touched once
//   per 32 rows of K, may live on the stack: 3 rows × 4 vectors on AVX2, which brings
//   the q8_0 prefill matmul close to the f32 one's speed; 1, 2, 4 and 5 rows are
//   slower (figures in docs/performance/design_measurements.md).
template <class D>
constexpr size_t BlockScaledTileRows() {
  constexpr size_t kVecs = PanelVectors<D>();
  if constexpr (HWY_MAX_BYTES >= 64) return std::max<size_t>(1, (32 - 8) / (2 * kVecs));
  return std::max<size_t>(1, (16 - 1) / (kVecs + 1));
}

// The block-scaled micro-kernel: C[0..kRows)[0..valid) continued over `depth` rows
// (whole blocks of 32): per sub-block, one FMA chain of A[r][k]·q from 0 per element,
// then acc = fma(scale, partial, acc) (and for q2_k, q4_k, q5_k acc − min·S fused, S from
// `sums`, row r's of sub-block s of block b at sums[r·RowSums::kStride + b·kSubBlocks +
// s]), the arithmetic of BlockScaledMatVecPanels.
// Not inlined into the loop nest: its 24 accumulators and partial sums use 27 of the
// 32 registers, and inlined into the one function that holds every type's decoder,
// g++ 12 spilled a panel row on every k, which cost the q8_0 and q4_0 prefill about
// 40 % of its speed; a call per tile costs nothing measurable.
template <class Scale, size_t kRows, class D>
HWY_NOINLINE void BlockScaledMatMulTile(D d, const float* a, size_t lda, const DecodedBlock& block,
                                        size_t depth, bool continue_c, size_t valid, float* c,
                                        size_t ldc, const float* sums) {
  constexpr size_t kWidth = kCompressedPanelWidth;
  constexpr size_t kVecs = PanelVectors<D>();
  const size_t lanes = hn::Lanes(d);
  hn::Vec<D> acc[kRows][kVecs];
  for (size_t r = 0; r < kRows; ++r) {
    if (continue_c) {
      LoadPanelRow<kVecs>(d, c + r * ldc, valid, acc[r]);
    } else {
      for (size_t v = 0; v < kVecs; ++v) acc[r][v] = hn::Zero(d);
    }
  }
  for (size_t b = 0; b < depth / kQuantBlock; ++b) {
    for (size_t s = 0; s < Scale::kSubBlocks; ++s) {
      hn::Vec<D> partial[kRows][kVecs];
      for (size_t r = 0; r < kRows; ++r) {
        for (size_t v = 0; v < kVecs; ++v) partial[r][v] = hn::Zero(d);
      }
      const size_t k_begin = b * kQuantBlock + s * Scale::kSubRows;
      for (size_t k = k_begin; k < k_begin + Scale::kSubRows; ++k) {
        const float* q_row = block.values + k * kWidth;
        hn::Vec<D> q[kVecs];
        HWY_UNROLL(16)
        for (size_t v = 0; v < kVecs; ++v) q[v] = hn::Load(d, q_row + v * lanes);
        HWY_UNROLL(16)
        for (size_t r = 0; r < kRows; ++r) {
          const auto a_rk = hn::Set(d, a[r * lda + k]);
          HWY_UNROLL(16)
          for (size_t v = 0; v < kVecs; ++v) partial[r][v] = hn::MulAdd(a_rk, q[v], partial[r][v]);
        }
      }
      const float* scale_row = block.scales + (b * Scale::kSubBlocks + s) * kWidth;
      HWY_UNROLL(16)
      for (size_t v = 0; v < kVecs; ++v) {
        const auto scale = hn::Load(d, scale_row + v * lanes);
        HWY_UNROLL(16)
        for (size_t r = 0; r < kRows; ++r) acc[r][v] = hn::MulAdd(scale, partial[r][v], acc[r][v]);
      }
      if constexpr (Scale::kHasMin) {
        const size_t sub = b * Scale::kSubBlocks + s;
        const float* min_row = block.mins + sub * kWidth;
        HWY_UNROLL(16)
        for (size_t v = 0; v < kVecs; ++v) {
          const auto min = hn::Load(d, min_row + v * lanes);
          HWY_UNROLL(16)
          for (size_t r = 0; r < kRows; ++r) {
            acc[r][v] = hn::NegMulAdd(min, hn::Set(d, sums[r * RowSums::kStride + sub]), acc[r][v]);
          }
        }
      }
    }
  }
  for (size_t r = 0; r < kRows; ++r) StorePanelRow<kVecs>(d, acc[r], valid, c + r * ldc);
}

// The row tile of either micro-kernel with exactly `rows` (< full tile) rows; Scale is
// the block-scaled kernel's BlockScales, void for the exact one.
template <class Scale, size_t kRows, class D>
HWY_INLINE void CompressedRemainderTile(D d, size_t rows, const float* a, size_t lda,
                                        const DecodedBlock& block, size_t depth, bool continue_c,
                                        size_t valid, float* c, size_t ldc, const float* sums) {
  if constexpr (kRows > 0) {
    if (rows != kRows) {
      return CompressedRemainderTile<Scale, kRows - 1>(d, rows, a, lda, block, depth, continue_c,
                                                       valid, c, ldc, sums);
    }
    if constexpr (!std::is_void_v<Scale>) {
      BlockScaledMatMulTile<Scale, kRows>(d, a, lda, block, depth, continue_c, valid, c, ldc, sums);
    } else {
      MatMulTile<kRows>(d, a, lda, block.values, depth, continue_c, valid, c, ldc);
    }
  }
}

// The scale policy of a kernel's decoder: BlockScales of a quantized type, void for
// bf16/f16.
template <template <class> class Rows, bool kBlockScaled, class D>
struct ScaleOf {
  using type = void;
};
template <template <class> class Rows, class D>
struct ScaleOf<Rows, true, D> {
  using type = BlockScales<Rows<D>::kType>;
};

// Loop nest of MatMulPanels (matmul-inl.h): M blocks → K blocks in ascending order →
// panels → row tiles, each panel's K block decoded into a stack DecodedBlock (36 KiB,
// with room for q2_k's minimums per 16 rows) once per M block (up to 256 rows of A) and
// reused by every row tile. bf16/f16 run the f32 micro-kernel on the dequantized values;
// the quantized types the block-scaled one (q2_k, q4_k and q5_k with their rows'
// sub-block sums, computed once per M block and K block). Storing
// and reloading C between K blocks rounds nothing, so every C[m][n] is computed by the
// same operations as MatVec on row m.
template <template <class> class Rows, bool kBlockScaled, class D>
HWY_INLINE void CompressedMatMulPanels(D d, const float* a, size_t lda, size_t m,
                                       const CompressedMatrixView& w, float* c, size_t ldc,
                                       size_t panel_begin, size_t panel_end) {
  using Scale = typename ScaleOf<Rows, kBlockScaled, D>::type;
  constexpr size_t kWidth = kCompressedPanelWidth;
  constexpr size_t kRows = kBlockScaled ? BlockScaledTileRows<D>() : TileRows<D>();
  static_assert(kWidth == kPanelWidth<float>, "decoded blocks are f32 panels");
  constexpr bool kRowSums = [] {
    if constexpr (kBlockScaled) return Scale::kHasMin;
    return false;
  }();
  DecodedBlock block;
  RowSums row_sums;
  const size_t depth_total = w.rows;
  for (size_t m0 = 0; m0 < m; m0 += kRowBlock) {
    const size_t rows = std::min(kRowBlock, m - m0);
    // K = 0 still runs one (empty) block, which stores zeros like the twin.
    size_t k0 = 0;
    do {
      const size_t depth = std::min(DecodedBlock::kDepth, depth_total - k0);
      const bool continue_c = k0 > 0;
      if constexpr (kRowSums) {
        for (size_t r = 0; r < rows; ++r) {
          for (size_t sub = 0; sub < depth / Scale::kSubRows; ++sub) {
            row_sums.sums[r * RowSums::kStride + sub] =
                compressed::SubBlockSum(a + (m0 + r) * lda + k0 + sub * Scale::kSubRows, Scale::kSubRows);
          }
        }
      }
      for (size_t p = panel_begin; p < panel_end; ++p) {
        const size_t col0 = p * kWidth;
        const size_t valid = std::min(kWidth, w.cols - col0);
        if constexpr (kBlockScaled) {
          DecodeQuantBlock<Rows>(d, compressed::RowsOfPanel(w, p), k0, depth, block);
        } else {
          DecodeHalfBlock<Rows>(d, compressed::RowsOfPanel(w, p), k0, depth, block);
        }
        // The group decoded next: the next group's, or the first group's next K block.
        const size_t tiles = (rows + kRows - 1) / kRows;
        const compressed::PanelRows current = compressed::RowsOfPanel(w, p);
        const size_t next_group = p - current.index + current.width;
        NextBlockPrefetch next;
        if (next_group < panel_end) {
          next = NextBlockPrefetch(w, next_group, k0, depth, tiles, current.index, current.width);
        } else if (k0 + depth < depth_total) {
          next = NextBlockPrefetch(w, panel_begin, k0 + depth,
                                   std::min(DecodedBlock::kDepth, depth_total - k0 - depth), tiles,
                                   current.index, current.width);
        }
        const float* a_block = a + m0 * lda + k0;
        float* c_block = c + m0 * ldc + col0;
        size_t r = 0;
        for (; r + kRows <= rows; r += kRows) {
          next.BeforeTile();
          CompressedRemainderTile<Scale, kRows>(d, kRows, a_block + r * lda, lda, block, depth,
                                                continue_c, valid, c_block + r * ldc, ldc,
                                                row_sums.sums + r * RowSums::kStride);
        }
        if (r < rows) {
          next.BeforeTile();
          CompressedRemainderTile<Scale, kRows - 1>(d, rows - r, a_block + r * lda, lda, block,
                                                    depth, continue_c, valid, c_block + r * ldc,
                                                    ldc, row_sums.sums + r * RowSums::kStride);
        }
      }
      k0 += depth;
    } while (k0 < depth_total);
  }
}

}  // namespace kvrt::simd::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // KVRT_SIMD_COMPRESSED_MATMUL_INL_H_ toggle
