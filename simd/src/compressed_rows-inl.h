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

// Where a quantized panel's blocks of 32 rows are: block b's scale area at
// Scales(b), row r of its group at GroupRow(b, r), and the panel's own part of that
// row `index` panel rows further (q8_0, and the nibbles of a group of fewer than four)
// or, in a lane-order row, byte `index` of each lane. A K-quant's blocks sit 8 to a
// super-block behind the super-block's headers (Header(b): this panel's).
struct QuantPanel {
  const uint8_t* group;
  size_t super_stride;   // one super-block of the group (q8_0/q4_0: one block)
  size_t blocks_offset;  // the group's headers before the first block of a super-block
  size_t block_stride;   // one block of the group
  size_t row_stride;     // one row of the group
  size_t index;
  size_t header_offset;  // this panel's header within the group's headers
  size_t block_shift;    // log2 of the blocks per super-block (0 or 3)
  size_t rows_offset;    // the group's scale areas before a block's rows
  size_t scale_area;     // one panel's scale area (q4_1/q5_1: d and m, 128 bytes)
  size_t high_offset;    // q5_k, q6_k: this panel's high bits within a row of the group
  bool lane_order;       // nibbles of a whole group (compressed_layout.h)

  QuantPanel() = default;
  QuantPanel(CompressedFormat type, const compressed::PanelRows& panel)
      : group(panel.group),
        super_stride(panel.width * compressed::SuperBlockBytes(type)),
        blocks_offset(panel.width * compressed::HeaderBytes(type)),
        block_stride(panel.width * compressed::QuantBlockBytes(type)),
        row_stride(panel.width * compressed::QuantRowBytes(type)),
        index(panel.index),
        header_offset(panel.index * compressed::HeaderBytes(type)),
        block_shift(compressed::IsKQuant(type) ? 3 : 0),
        rows_offset(panel.width * compressed::ScaleAreaBytes(type)),
        scale_area(compressed::ScaleAreaBytes(type)),
        high_offset(panel.width * compressed::kQ4RowBytes + panel.index * compressed::HighBytes(type)),
        lane_order(compressed::HasNibbleRows(type) && panel.LaneOrder()) {
    static_assert(compressed::kSuperBlockBlocks == size_t{1} << 3, "block_shift");
  }
  const uint8_t* Block(size_t block) const {
    return group + (block >> block_shift) * super_stride + blocks_offset +
           (block & ((size_t{1} << block_shift) - 1)) * block_stride;
  }
  const uint8_t* Header(size_t block) const {
    return group + (block >> block_shift) * super_stride + header_offset;
  }
  const uint8_t* Scales(size_t block) const { return Block(block) + index * scale_area; }
  const uint8_t* GroupRow(size_t block, size_t r) const {
    return Block(block) + rows_offset + r * row_stride;
  }
  // The panel's own bytes of a row (q8_0, q2_k; for the others its nibbles, in a group
  // of fewer than four).
  const uint8_t* Row(size_t block, size_t r, CompressedFormat type) const {
    const size_t bytes = compressed::HasNibbleRows(type) ? compressed::kQ4RowBytes : compressed::QuantRowBytes(type);
    return GroupRow(block, r) + index * bytes;
  }
  // q5_k, q6_k: the panel's 4 or 8 bytes of high bits of a row, after the group's
  // nibbles (compressed::PanelRows::HighBits).
  const uint8_t* HighBits(size_t block, size_t r) const {
    return GroupRow(block, r) + high_offset;
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

// The raw bits of a row's nibbles for the decoders below: for vector v (< kVecs/2) of
// a panel, `low` holds in bits 3:0 of lane i the nibble of column v·lanes + i and
// `high` that of column 16 + v·lanes + i. The bits above are not cleared where the
// decoders ignore them (kHighClean says whether `high`'s are zero).
//
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
// load reaches kIndex bytes past the row's nibbles: the caller never asks for it on
// the last row of a q4_0/q4_k group (which may be the last bytes of the matrix).
template <class D>
struct NibbleBits {
  using DU = hn::RebindToUnsigned<D>;
  using VU = hn::Vec<DU>;
  static constexpr bool kHighClean = HWY_TARGET != HWY_AVX3 && HWY_TARGET != HWY_SCALAR;

  template <size_t kIndex, bool kByteLoads>
  static HWY_INLINE void LaneOrder(const uint8_t* row, size_t v, VU& low, VU& high) {
    const DU du;
#if HWY_TARGET == HWY_AVX3
    if constexpr (kByteLoads) {
      const auto* moved = reinterpret_cast<const uint32_t*>(row + kIndex);
      low = hn::LoadU(du, moved + v * hn::Lanes(du));
      high = hn::ShiftRight<4>(low);
      return;
    }
#endif
    const auto bytes = hn::LoadU(du, reinterpret_cast<const uint32_t*>(row) + v * hn::Lanes(du));
#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_SCALAR
    low = hn::ShiftRight<8 * kIndex>(bytes);
    high = hn::ShiftRight<8 * kIndex + 4>(bytes);
#else
    const hn::Repartition<uint8_t, DU> du8;
    constexpr uint8_t kZero = 0x80;  // TableLookupBytesOr0: this index gives 0
    alignas(16) static constexpr uint8_t kByteOfEachLane[16] = {
        kIndex,     kZero, kZero, kZero, 4 + kIndex,  kZero, kZero, kZero,
        8 + kIndex, kZero, kZero, kZero, 12 + kIndex, kZero, kZero, kZero};
    low = hn::BitCast(du, hn::TableLookupBytesOr0(hn::BitCast(du8, bytes), hn::LoadDup128(du8, kByteOfEachLane)));
    high = hn::ShiftRight<4>(low);
#endif
  }

  // A panel's own 16 bytes (a group of fewer than four): zero-extended, so `high` is clean.
  static HWY_INLINE void Apart(const uint8_t* row, size_t v, VU& low, VU& high) {
    const hn::RebindToSigned<D> di;
    const hn::Rebind<uint8_t, D> du8;
    low = hn::BitCast(DU(), hn::PromoteTo(di, hn::LoadU(du8, row + v * hn::Lanes(di))));
    high = hn::ShiftRight<4>(low);
  }
};

// On AVX-512 a nibble indexes a one-vector table of the 16 values −8..7 (VPERMPS, no
// int→float conversion). VPERMPS reads only bits 3:0 of each index, so a nibble
// shifted to the bottom of its lane needs no mask; Highway's TableLookupLanes requires
// in-range indices, hence the intrinsic. Elsewhere the nibble is masked and ORed into
// the mantissa of 2^23 (below): the same exact values.
//
// NibbleQuants serves q4_0 (kOffset 8: q − 8) and q4_k (kOffset 0: q itself), whose
// rows are the same nibbles, and iq4_nl, whose nibble indexes ggml's kvalues_iq4nl
// instead (kOffset unused): on AVX-512 the same VPERMPS with that table; elsewhere a
// byte lookup (PSHUFB) of t + 128 (1..241, a byte) ORed into the mantissa of 2^23, less
// 2^23 + 128: t exactly, for the cost of one lookup and one OR more than q4_0.
template <class D, CompressedFormat kFormat, int kOffset>
struct NibbleQuants {
  static constexpr CompressedFormat kType = kFormat;
  static constexpr size_t kVecs = PanelVectors<D>();
  using DU = hn::RebindToUnsigned<D>;
  using Bits = NibbleBits<D>;

  // u − kOffset for the nibble u in bits 3:0 of every lane of `bits`: the bits above
  // are ignored, or (kMask false, not on AVX-512) known to be zero.
  template <bool kMask = true>
  static HWY_INLINE hn::Vec<D> Nibbles(D d, hn::Vec<DU> bits) {
    if constexpr (kFormat == CompressedFormat::kIQ4_NL || kFormat == CompressedFormat::kIQ4_XS) {
      return TableNibbles<kMask>(d, bits);
    }
#if HWY_TARGET == HWY_AVX3
    return hn::Vec<D>{_mm512_permutexvar_ps(bits.raw, hn::Iota(d, static_cast<float>(-kOffset)).raw)};
#else
    // A nibble u in the low mantissa bits of 2^23 is the float 2^23 + u, and
    // subtracting 2^23 + kOffset leaves u − kOffset exactly: an OR instead of a
    // conversion, which shares the FP add pipes with the subtraction. On AVX2 this
    // made the q4_0 matvec and matmul faster than converting the nibble.
    const DU du;
    const auto nibble = kMask ? hn::And(bits, hn::Set(du, 0xF)) : bits;
    const auto magic = hn::Or(nibble, hn::Set(du, 0x4B000000));
    return hn::Sub(hn::BitCast(d, magic), hn::Set(d, 8388608.0f + kOffset));  // 2^23 + kOffset
#endif
  }

  // iq4_nl: kvalues_iq4nl[u] for the nibble u in bits 3:0 of every lane of `bits`, the
  // bits above ignored or (kMask false, not on AVX-512) zero.
  template <bool kMask>
  static HWY_INLINE hn::Vec<D> TableNibbles(D d, hn::Vec<DU> bits) {
#if HWY_TARGET == HWY_AVX3
    alignas(64) static constexpr float kTable[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                                     1,    13,   25,  38,  53,  69,  89,  113};
    return hn::Vec<D>{_mm512_permutexvar_ps(bits.raw, hn::Load(d, kTable).raw)};
#elif HWY_TARGET == HWY_SCALAR
    return hn::Set(d, static_cast<float>(compressed::kIQ4NLValues[hn::GetLane(bits) & 0xF]));
#else
    const DU du;
    const hn::Repartition<uint8_t, DU> du8;
    // t + 128 per nibble; the three upper index bytes of a lane get 0x80, which the
    // lookup turns into 0, so the lane is the byte t + 128 alone.
    alignas(16) static constexpr uint8_t kBiased[16] = {1,   24,  45,  63,  79,  93,  106, 118,
                                                        129, 141, 153, 166, 181, 197, 217, 241};
    const auto nibble = kMask ? hn::And(bits, hn::Set(du, 0xF)) : bits;
    const auto index = hn::Or(nibble, hn::Set(du, 0x80808000u));
    const auto biased = hn::BitCast(du, hn::TableLookupBytesOr0(hn::LoadDup128(du8, kBiased),
                                                                hn::BitCast(du8, index)));
    const auto magic = hn::Or(biased, hn::Set(du, 0x4B000000));
    return hn::Sub(hn::BitCast(d, magic), hn::Set(d, 8388608.0f + 128.0f));  // 2^23 + 128
#endif
  }

  // Panel kIndex of a lane-order row (NibbleBits::LaneOrder).
  template <size_t kIndex, bool kByteLoads = false>
  static HWY_INLINE void DecodeLanes(D d, const uint8_t* row, hn::Vec<D>* q) {
    HWY_UNROLL(16)
    for (size_t v = 0; v < kVecs / 2; ++v) {
      hn::Vec<DU> low, high;
      Bits::template LaneOrder<kIndex, kByteLoads>(row, v, low, high);
      q[v] = Nibbles(d, low);
      q[v + kVecs / 2] = Nibbles<!Bits::kHighClean>(d, high);
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
    const uint8_t* row = panel.Row(b, r, kType);
    HWY_UNROLL(16)
    for (size_t v = 0; v < kVecs / 2; ++v) {
      hn::Vec<DU> low, high;
      Bits::Apart(row, v, low, high);
      q[v] = Nibbles(d, low);
      q[v + kVecs / 2] = Nibbles<false>(d, high);
    }
  }
};
template <class D>
using Q4Quants = NibbleQuants<D, CompressedFormat::kQ4_0, 8>;
template <class D>
using IQ4NLQuants = NibbleQuants<D, CompressedFormat::kIQ4_NL, 0>;
// iq4_xs: iq4_nl's rows, scaled per block by d·sc (BlockScales).
template <class D>
using IQ4XSQuants = NibbleQuants<D, CompressedFormat::kIQ4_XS, 0>;

}  // namespace kvrt::simd::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // KVRT_SIMD_COMPRESSED_ROWS_INL_H_ toggle
