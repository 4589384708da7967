// Per-target decoders of compressed panel rows (layout: compressed_matrix.h), shared by
// the compressed MatVec and MatMul. Each turns row k of one 32-column panel into the
// panel's kVecs f32 vectors (columns in order), exactly: bf16/f16 to the values of
// at() (widening is exact), q8_0/q4_0 to their small integers.
//   Bf16Rows: one 64-byte row is kVecs/2 vectors of u32 lanes; lane i holds column i
//             (low half) and column i + 16 (high half): a shift and a mask, no convert.
//   F16Rows:  F16C (hn::PromoteTo from float16_t).
//   Q8Quants: int8 → int32 (PromoteTo) → f32, without the scale.
//   Q4Quants: q − 8 as f32 (a table lookup on AVX-512, 2^23 + u − (2^23 + 8)
//             elsewhere), without the scale. A panel of a whole group reads its byte
//             of every 32-bit lane of the group's lane-order row (a shift per half;
//             a kernel that reads several panels of the row loads it once; the
//             AVX-512 matvec instead loads it again at the byte's offset). A
//             panel of a smaller group zero-extends its 16 bytes to int32 lanes: the
//             low nibbles are columns 0..15, the high ones 16..31.
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

  HWY_INLINE void Row(D d, size_t k, hn::Vec<D>* w) const { RowAt(d, panel + k * row_stride, w); }
  // The row whose bytes start at `bytes`.
  static HWY_INLINE void RowAt(D d, const uint8_t* bytes, hn::Vec<D>* w) {
    const hn::RebindToUnsigned<D> du;
    const size_t lanes = hn::Lanes(d);
    const auto* row = reinterpret_cast<const uint32_t*>(bytes);
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

  HWY_INLINE void Row(D d, size_t k, hn::Vec<D>* w) const { RowAt(d, panel + k * row_stride, w); }
  // The row whose bytes start at `bytes`.
  static HWY_INLINE void RowAt(D d, const uint8_t* bytes, hn::Vec<D>* w) {
    const hn::Rebind<hwy::float16_t, D> dh;
    const size_t lanes = hn::Lanes(d);
    const auto* row = reinterpret_cast<const hwy::float16_t*>(bytes);
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
// scales + b·block_stride, row r of its group at rows + b·block_stride + r·row_stride,
// and the panel's own part of that row `index` panel rows further (q8_0, and q4_0 in
// a group of fewer than four) or, in a q4_0 lane-order row, byte `index` of each lane.
struct QuantPanel {
  const uint8_t* scales;
  const uint8_t* rows;
  size_t block_stride;
  size_t row_stride;
  size_t index;
  bool lane_order;  // q4_0 in a whole group (compressed_layout.h)

  QuantPanel() = default;
  QuantPanel(CompressedFormat type, const compressed::PanelRows& panel)
      : scales(panel.Scales(type, 0)),
        rows(panel.GroupRow(type, 0)),
        block_stride(panel.width * compressed::QuantBlockBytes(type)),
        row_stride(panel.width * compressed::QuantRowBytes(type)),
        index(panel.index),
        lane_order(type == CompressedFormat::kQ4_0 && panel.LaneOrder()) {}
  const uint8_t* Scales(size_t block) const { return scales + block * block_stride; }
  const uint8_t* GroupRow(size_t block, size_t r) const {
    return rows + block * block_stride + r * row_stride;
  }
  // The panel's own bytes of a row (not for a lane-order row).
  const uint8_t* Row(size_t block, size_t r, CompressedFormat type) const {
    return GroupRow(block, r) + index * compressed::QuantRowBytes(type);
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

// The quantized types are decoded WITHOUT their scale: Decode() turns row r of block
// b of a panel into the small integers q (q8_0) or q − 8 (q4_0) as exact floats; the
// kernels apply the column scales once per block of 32 rows (block-scaled
// accumulation, compressed_matrix.h). QuantPanel above says where a block's scales and
// rows are.
template <class D>
struct Q8Quants {
  static constexpr CompressedFormat kType = CompressedFormat::kQ8_0;

  static HWY_INLINE void Decode(D d, const QuantPanel& panel, size_t b, size_t r, hn::Vec<D>* q) {
    constexpr size_t kVecs = PanelVectors<D>();
    const hn::RebindToSigned<D> di;
    const hn::Rebind<int8_t, D> di8;
    const size_t lanes = hn::Lanes(d);
    const auto* quants = reinterpret_cast<const int8_t*>(panel.Row(b, r, kType));
    HWY_UNROLL(16)
    for (size_t v = 0; v < kVecs; ++v) {
      q[v] = hn::ConvertTo(d, hn::PromoteTo(di, hn::LoadU(di8, quants + v * lanes)));
    }
  }
};

// On AVX-512 a nibble indexes a one-vector table of the 16 values −8..7 (VPERMPS, no
// int→float conversion). VPERMPS reads only bits 3:0 of each index, so a nibble
// shifted to the bottom of its lane needs no mask; Highway's TableLookupLanes requires
// in-range indices, hence the intrinsic. Elsewhere the nibble is masked and ORed into
// the mantissa of 2^23 (below): the same exact values.
template <class D>
struct Q4Quants {
  static constexpr CompressedFormat kType = CompressedFormat::kQ4_0;
  static constexpr size_t kVecs = PanelVectors<D>();
  using DU = hn::RebindToUnsigned<D>;

  // u − 8 for the nibble u in bits 3:0 of every lane of `bits`: the bits above are
  // ignored, or (kMask false, not on AVX-512) known to be zero.
  template <bool kMask = true>
  static HWY_INLINE hn::Vec<D> Nibbles(D d, hn::Vec<DU> bits) {
#if HWY_TARGET == HWY_AVX3
    return hn::Vec<D>{_mm512_permutexvar_ps(bits.raw, hn::Iota(d, -8.0f).raw)};
#else
    // A nibble u in the low mantissa bits of 2^23 is the float 2^23 + u, and
    // subtracting 2^23 + 8 leaves u − 8 exactly: an OR instead of a conversion,
    // which shares the FP add pipes with the subtraction. On AVX2 this made the
    // q4_0 matvec and matmul faster than converting the nibble.
    const DU du;
    const auto nibble = kMask ? hn::And(bits, hn::Set(du, 0xF)) : bits;
    const auto magic = hn::Or(nibble, hn::Set(du, 0x4B000000));
    return hn::Sub(hn::BitCast(d, magic), hn::Set(d, 8388616.0f));  // 2^23 + 8
#endif
  }

  // Panel kIndex of a lane-order row: lane j's byte kIndex is columns j and j + 16.
  // AVX-512 (and the one-lane scalar target) shifts that byte down for each half.
  // Elsewhere one in-block byte shuffle (VPSHUFB) zero-extends it first, as the
  // widening load of a smaller group's row does: on AVX2 that beats shifting and
  // masking each half out of the whole lane, though AVX2 stays a little slower than
  // with each panel's 16 bytes apart, the price of AVX-512's single load (figures in
  // docs/performance/design_measurements.md).
  //
  // kByteLoads (the matvec on AVX-512): the row is loaded again kIndex bytes further,
  // which puts byte kIndex of every lane at its bottom, so the low nibbles need no
  // shift (VPERMPS ignores the bits above) and the high ones one shift of 4: four
  // fewer shifts a row of a group, where shifts and VPERMPS compete for the same
  // pipes, which makes the matvec faster from cache (and slightly from memory). The
  // load reaches kIndex bytes past the row: the caller never asks for it on the last
  // row of a group (which may be the last bytes of the matrix).
  template <size_t kIndex, bool kByteLoads = false>
  static HWY_INLINE void DecodeLanes(D d, const uint8_t* row, hn::Vec<D>* q) {
    const DU du;
    const auto* lanes = reinterpret_cast<const uint32_t*>(row);
#if HWY_TARGET != HWY_AVX3 && HWY_TARGET != HWY_SCALAR
    const hn::Repartition<uint8_t, DU> du8;
    constexpr uint8_t kZero = 0x80;  // TableLookupBytesOr0: this index gives 0
    alignas(16) static constexpr uint8_t kByteOfEachLane[16] = {
        kIndex,     kZero, kZero, kZero, 4 + kIndex,  kZero, kZero, kZero,
        8 + kIndex, kZero, kZero, kZero, 12 + kIndex, kZero, kZero, kZero};
    const auto byte_of_each_lane = hn::LoadDup128(du8, kByteOfEachLane);
#endif
#if HWY_TARGET == HWY_AVX3
    if constexpr (kByteLoads) {
      const auto* moved = reinterpret_cast<const uint32_t*>(row + kIndex);
      HWY_UNROLL(16)
      for (size_t v = 0; v < kVecs / 2; ++v) {
        const auto bytes = hn::LoadU(du, moved + v * hn::Lanes(du));
        q[v] = Nibbles(d, bytes);
        q[v + kVecs / 2] = Nibbles(d, hn::ShiftRight<4>(bytes));
      }
      return;
    }
#endif
    HWY_UNROLL(16)
    for (size_t v = 0; v < kVecs / 2; ++v) {
      const auto bytes = hn::LoadU(du, lanes + v * hn::Lanes(du));
#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_SCALAR
      q[v] = Nibbles(d, hn::ShiftRight<8 * kIndex>(bytes));
      q[v + kVecs / 2] = Nibbles(d, hn::ShiftRight<8 * kIndex + 4>(bytes));
#else
      const auto byte = hn::BitCast(du, hn::TableLookupBytesOr0(hn::BitCast(du8, bytes), byte_of_each_lane));
      q[v] = Nibbles(d, byte);
      q[v + kVecs / 2] = Nibbles<false>(d, hn::ShiftRight<4>(byte));
#endif
    }
  }

  static HWY_INLINE void Decode(D d, const QuantPanel& panel, size_t b, size_t r, hn::Vec<D>* q) {
    if (panel.lane_order) {
      const uint8_t* row = panel.GroupRow(b, r);
      switch (panel.index) {
        case 0: return DecodeLanes<0>(d, row, q);
        case 1: return DecodeLanes<1>(d, row, q);
        case 2: return DecodeLanes<2>(d, row, q);
        default: return DecodeLanes<3>(d, row, q);
      }
    }
    const hn::RebindToSigned<D> di;
    const hn::Rebind<uint8_t, D> du8;
    const uint8_t* row = panel.Row(b, r, kType);
    HWY_UNROLL(16)
    for (size_t v = 0; v < kVecs / 2; ++v) {
      const auto bytes = hn::BitCast(DU(), hn::PromoteTo(di, hn::LoadU(du8, row + v * hn::Lanes(d))));
      q[v] = Nibbles(d, bytes);
      q[v + kVecs / 2] = Nibbles<false>(d, hn::ShiftRight<4>(bytes));
    }
  }
};

}  // namespace kvrt::simd::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // KVRT_SIMD_COMPRESSED_ROWS_INL_H_ toggle
