// Per-target decoders of compressed panel rows (layout: compressed_matrix.h), shared by
// the compressed MatVec and MatMul. Each turns row k of one 32-column panel into the
// panel's kVecs f32 vectors (columns in order), exactly: bf16/f16 to the values of
// at() (widening is exact), q8_0/q4_0 to their small integers.
//   Bf16Rows: one 64-byte row is kVecs/2 vectors of u32 lanes; lane i holds column i
//             (low half) and column i + 16 (high half): a shift and a mask, no convert.
//   F16Rows:  F16C (hn::PromoteTo from float16_t).
//   Q8Quants: int8 → int32 (PromoteTo) → f32, without the scale.
//   Q4Quants: one 16-byte row zero-extended to int32 lanes; the low nibbles are columns
//             0..15, the high ones 16..31; q − 8 as f32 (a table lookup on AVX-512,
//             2^23 + u − (2^23 + 8) elsewhere),
//             without the scale.
// The column scales of a block are loaded apart (LoadColumnScales).
#if defined(KVRT_SIMD_COMPRESSED_ROWS_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef KVRT_SIMD_COMPRESSED_ROWS_INL_H_
#undef KVRT_SIMD_COMPRESSED_ROWS_INL_H_
#else
#define KVRT_SIMD_COMPRESSED_ROWS_INL_H_
#endif

#include <cstddef>
#include <cstdint>

#include "compressed_layout.h"
#include "hwy/highway.h"
#include "panel_columns-inl.h"

HWY_BEFORE_NAMESPACE();
namespace kvrt::simd::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

template <class D>
struct Bf16Rows {
  static constexpr size_t kVecs = PanelVectors<D>();
  const uint8_t* panel;  // row 0 of the panel
  size_t row_stride;     // bytes from one row of the panel to the next (its group's width)

  HWY_INLINE void Row(D d, size_t k, hn::Vec<D>* w) const {
    const hn::RebindToUnsigned<D> du;
    const size_t lanes = hn::Lanes(d);
    const auto* row = reinterpret_cast<const uint32_t*>(panel + k * row_stride);
    const auto high_half = hn::Set(du, 0xFFFF0000u);
    HWY_UNROLL(16)
    for (size_t v = 0; v < kVecs / 2; ++v) {
      const auto pair = hn::LoadU(du, row + v * lanes);
      w[v] = hn::BitCast(d, hn::ShiftLeft<16>(pair));
      w[v + kVecs / 2] = hn::BitCast(d, hn::And(pair, high_half));
    }
  }
};

template <class D>
struct F16Rows {
  static constexpr size_t kVecs = PanelVectors<D>();
  const uint8_t* panel;  // row 0 of the panel
  size_t row_stride;     // bytes from one row of the panel to the next

  HWY_INLINE void Row(D d, size_t k, hn::Vec<D>* w) const {
    const hn::Rebind<hwy::float16_t, D> dh;
    const size_t lanes = hn::Lanes(d);
    const auto* row = reinterpret_cast<const hwy::float16_t*>(panel + k * row_stride);
    HWY_UNROLL(16)
    for (size_t v = 0; v < kVecs; ++v) w[v] = hn::PromoteTo(d, hn::LoadU(dh, row + v * lanes));
  }
};

// The decoder of a bf16/f16 panel of the row layout.
template <template <class> class Rows, class D>
HWY_INLINE Rows<D> HalfRowsOf(const compressed::PanelRows& panel) {
  Rows<D> rows;
  rows.panel = panel.HalfRow(0);
  rows.row_stride = panel.width * compressed::kHalfRowBytes;
  return rows;
}

// Where a q8_0/q4_0 panel's scales and rows are: block b's scales at
// scales + b·block_stride, its row r at quants + b·block_stride + r·row_stride.
struct QuantPanel {
  const uint8_t* scales;
  const uint8_t* quants;
  size_t block_stride;
  size_t row_stride;

  QuantPanel() = default;
  QuantPanel(WeightType type, const compressed::PanelRows& panel)
      : scales(panel.Scales(type, 0)),
        quants(panel.QuantRow(type, 0)),
        block_stride(panel.width * compressed::QuantBlockBytes(type)),
        row_stride(panel.width * compressed::QuantRowBytes(type)) {}
  const uint8_t* Scales(size_t block) const { return scales + block * block_stride; }
  const uint8_t* Row(size_t block, size_t r) const {
    return quants + block * block_stride + r * row_stride;
  }
};

// The 32 f16 column scales of a q8_0/q4_0 block (at the block's start), as f32.
template <class D>
HWY_INLINE void LoadColumnScales(D d, const uint8_t* block, hn::Vec<D>* scale) {
  constexpr size_t kVecs = PanelVectors<D>();
  const hn::Rebind<hwy::float16_t, D> dh;
  const size_t lanes = hn::Lanes(d);
  const auto* scales = reinterpret_cast<const hwy::float16_t*>(block);
  HWY_UNROLL(16)
  for (size_t v = 0; v < kVecs; ++v) scale[v] = hn::PromoteTo(d, hn::LoadU(dh, scales + v * lanes));
}

// The quantized types are decoded WITHOUT their scale: Decode() turns one row of a
// block into the small integers q (q8_0) or q − 8 (q4_0) as exact floats; the kernels
// apply the column scales once per block of 32 rows (block-scaled accumulation,
// compressed_matrix.h). QuantPanel above says where a block's scales and rows are.
template <class D>
struct Q8Quants {
  static constexpr WeightType kType = WeightType::kQ8_0;

  static HWY_INLINE void Decode(D d, const uint8_t* row, hn::Vec<D>* q) {
    constexpr size_t kVecs = PanelVectors<D>();
    const hn::RebindToSigned<D> di;
    const hn::Rebind<int8_t, D> di8;
    const size_t lanes = hn::Lanes(d);
    const auto* quants = reinterpret_cast<const int8_t*>(row);
    HWY_UNROLL(16)
    for (size_t v = 0; v < kVecs; ++v) {
      q[v] = hn::ConvertTo(d, hn::PromoteTo(di, hn::LoadU(di8, quants + v * lanes)));
    }
  }
};

// On AVX-512 a nibble indexes a one-vector table of the 16 values −8..7 (VPERMPS, no
// int→float conversion). VPERMPS reads only bits 3:0 of each index, so the low nibble
// needs no mask; Highway's TableLookupLanes requires in-range indices, hence the
// intrinsic. Elsewhere the nibble is ORed into the mantissa of 2^23 (below): the
// same exact values.
template <class D>
struct Q4Quants {
  static constexpr WeightType kType = WeightType::kQ4_0;

  static HWY_INLINE void Decode(D d, const uint8_t* row, hn::Vec<D>* q) {
    constexpr size_t kVecs = PanelVectors<D>();
    const hn::RebindToSigned<D> di;
    const hn::Rebind<uint8_t, D> du8;
    const size_t lanes = hn::Lanes(d);
    HWY_UNROLL(16)
    for (size_t v = 0; v < kVecs / 2; ++v) {
      const auto bytes = hn::PromoteTo(di, hn::LoadU(du8, row + v * lanes));
      const auto high = hn::ShiftRight<4>(bytes);
#if HWY_TARGET == HWY_AVX3
      const auto values = hn::Iota(d, -8.0f);
      q[v] = hn::Vec<D>{_mm512_permutexvar_ps(bytes.raw, values.raw)};
      q[v + kVecs / 2] = hn::Vec<D>{_mm512_permutexvar_ps(high.raw, values.raw)};
#else
      // A nibble u in the low mantissa bits of 2^23 is the float 2^23 + u, and
      // subtracting 2^23 + 8 leaves u − 8 exactly: an OR instead of a conversion,
      // which shares the FP add pipes with the subtraction. On a Zen 3 (AVX2) the
      // L2-resident q4_0 matvec ran 1.01–1.32× (median 1.11) as fast over 8 paired
      // runs, the matmul 1.05–1.12× over 3.
      const auto magic = hn::Set(di, 0x4B000000);
      const auto offset = hn::Set(d, 8388616.0f);  // 2^23 + 8
      q[v] = hn::Sub(hn::BitCast(d, hn::Or(hn::And(bytes, hn::Set(di, 0xF)), magic)), offset);
      q[v + kVecs / 2] = hn::Sub(hn::BitCast(d, hn::Or(high, magic)), offset);
#endif
    }
  }
};

}  // namespace kvrt::simd::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // KVRT_SIMD_COMPRESSED_ROWS_INL_H_ toggle
