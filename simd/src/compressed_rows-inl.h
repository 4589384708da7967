// Per-target decoders of compressed panel rows (layout: compressed_matrix.h), shared by
// the compressed MatVec and MatMul. Each turns row k of one 32-column panel into the
// panel's kVecs f32 vectors (columns in order), with exactly the values of at():
// widening bf16/f16 is exact, and q·d, (q − 8)·d are exact products.
//   Bf16Rows: one 64-byte row is kVecs/2 vectors of u32 lanes; lane i holds column i
//             (low half) and column i + 16 (high half): a shift and a mask, no convert.
//   F16Rows:  F16C (hn::PromoteTo from float16_t).
//   Q8Rows:   int8 → int32 (PromoteTo) → f32, times the block's column scales.
//   Q4Rows:   one 16-byte row zero-extended to int32 lanes; the low nibbles are columns
//             0..15, the high ones 16..31; float(q) − 8 (exact), times the scales.
// Quantized decoders carry the 32 column scales of the current block (LoadScales at
// every k % 32 == 0); kBlockRows is the number of rows they stay valid for.
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
  static constexpr size_t kBlockRows = 1;  // no scales: any row count
  static constexpr size_t kVecs = PanelVectors<D>();
  const uint8_t* panel;

  HWY_INLINE void LoadScales(D, size_t) {}
  HWY_INLINE void Row(D d, size_t k, hn::Vec<D>* w) const {
    const hn::RebindToUnsigned<D> du;
    const size_t lanes = hn::Lanes(d);
    const auto* row = reinterpret_cast<const uint32_t*>(panel + k * compressed::kHalfRowBytes);
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
  static constexpr size_t kBlockRows = 1;
  static constexpr size_t kVecs = PanelVectors<D>();
  const uint8_t* panel;

  HWY_INLINE void LoadScales(D, size_t) {}
  HWY_INLINE void Row(D d, size_t k, hn::Vec<D>* w) const {
    const hn::Rebind<hwy::float16_t, D> dh;
    const size_t lanes = hn::Lanes(d);
    const auto* row = reinterpret_cast<const hwy::float16_t*>(panel + k * compressed::kHalfRowBytes);
    HWY_UNROLL(16)
    for (size_t v = 0; v < kVecs; ++v) w[v] = hn::PromoteTo(d, hn::LoadU(dh, row + v * lanes));
  }
};

// The 32 f16 column scales at the start of the q8_0/q4_0 block holding row k.
template <class D>
HWY_INLINE void LoadColumnScales(D d, WeightType type, const uint8_t* panel, size_t k,
                                 hn::Vec<D>* scale) {
  constexpr size_t kVecs = PanelVectors<D>();
  const hn::Rebind<hwy::float16_t, D> dh;
  const size_t lanes = hn::Lanes(d);
  const auto* scales =
      reinterpret_cast<const hwy::float16_t*>(panel + compressed::QuantBlockOffset(type, k));
  HWY_UNROLL(16)
  for (size_t v = 0; v < kVecs; ++v) scale[v] = hn::PromoteTo(d, hn::LoadU(dh, scales + v * lanes));
}

template <class D>
struct Q8Rows {
  static constexpr size_t kBlockRows = kQuantBlock;
  static constexpr size_t kVecs = PanelVectors<D>();
  const uint8_t* panel;
  hn::Vec<D> scale[kVecs];

  HWY_INLINE void LoadScales(D d, size_t k) { LoadColumnScales(d, WeightType::kQ8_0, panel, k, scale); }
  HWY_INLINE void Row(D d, size_t k, hn::Vec<D>* w) const {
    const hn::RebindToSigned<D> di;
    const hn::Rebind<int8_t, D> di8;
    const size_t lanes = hn::Lanes(d);
    const auto* row = reinterpret_cast<const int8_t*>(panel + compressed::Q8RowOffset(k));
    HWY_UNROLL(16)
    for (size_t v = 0; v < kVecs; ++v) {
      const auto q = hn::PromoteTo(di, hn::LoadU(di8, row + v * lanes));
      w[v] = hn::Mul(hn::ConvertTo(d, q), scale[v]);
    }
  }
};

template <class D>
struct Q4Rows {
  static constexpr size_t kBlockRows = kQuantBlock;
  static constexpr size_t kVecs = PanelVectors<D>();
  const uint8_t* panel;
  hn::Vec<D> scale[kVecs];

  HWY_INLINE void LoadScales(D d, size_t k) { LoadColumnScales(d, WeightType::kQ4_0, panel, k, scale); }
  HWY_INLINE void Row(D d, size_t k, hn::Vec<D>* w) const {
    const hn::RebindToSigned<D> di;
    const hn::Rebind<uint8_t, D> du8;
    const size_t lanes = hn::Lanes(d);
    const uint8_t* row = panel + compressed::Q4RowOffset(k);
    const auto low_nibble = hn::Set(di, 0xF);
    const auto eight = hn::Set(d, 8.0f);
    HWY_UNROLL(16)
    for (size_t v = 0; v < kVecs / 2; ++v) {
      const auto bytes = hn::PromoteTo(di, hn::LoadU(du8, row + v * lanes));
      const auto low = hn::Sub(hn::ConvertTo(d, hn::And(bytes, low_nibble)), eight);
      const auto high = hn::Sub(hn::ConvertTo(d, hn::ShiftRight<4>(bytes)), eight);
      w[v] = hn::Mul(low, scale[v]);
      w[v + kVecs / 2] = hn::Mul(high, scale[v + kVecs / 2]);
    }
  }
};

}  // namespace kvrt::simd::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // KVRT_SIMD_COMPRESSED_ROWS_INL_H_ toggle
