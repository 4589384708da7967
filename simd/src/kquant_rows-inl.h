// Per-target decoders of the K-quant panel rows (q4_k, q5_k, q6_k; layout:
// compressed_matrix.h) and of q5_0's, which are q5_k's, and the per-(sub-)block scales
// of every block-quantized type, shared by the compressed MatVec and MatMul.
//   Q4KQuants: q (0..15) as f32, the q4_0 nibble decoder without its offset.
//   Q3KQuants: q − 4 (q in 0..7) as f32, the q4_0 nibble decoder with offset 4.
//   Q2KQuants: q (0..3) as f32 from the panel row's uint64 of 2-bit quants: per vector
//              the 32-bit word holding its columns broadcast and shifted right by 2·lane,
//              then (AVX-512) a VPERMPS of the table i & 3, which reads only bits 3:0,
//              or elsewhere masked to 2 bits and ORed into the mantissa of 2^23.
//   Q5KQuants, Q50Quants, Q6KQuants (HighBitQuants): q (0..31), q − 16 (q in 0..31)
//              and q − 32 (q in 0..63) as f32, from a row's nibble (the low 4 bits, as
//              q4_0's) and its high bits (q5_k, q5_0: 1 a column, one word, column c at
//              bit c; q6_k: 2, a word per half panel,
//              column c at bits 2c): on AVX-512 two VPERMPS table lookups, nibble −
//              offset and 16·high, and an add; elsewhere the 5 or 6 bits ORed into the
//              mantissa of 2^23, then 2^23 + offset subtracted.
// The kernels apply the scales per sub-block (BlockScales): q8_0/q4_0/q5_0 d per 32 rows,
// q4_k and q5_k d·sc and dmin·m per 32 rows, q2_k the same per 16 rows, q6_k and q3_k
// d·sc per 16 rows.
#if defined(KVRT_SIMD_KQUANT_ROWS_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef KVRT_SIMD_KQUANT_ROWS_INL_H_
#undef KVRT_SIMD_KQUANT_ROWS_INL_H_
#else
#define KVRT_SIMD_KQUANT_ROWS_INL_H_
#endif

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "compressed_layout.h"
#include "compressed_rows-inl.h"
#include "hwy/highway.h"
#include "panel_columns-inl.h"

HWY_BEFORE_NAMESPACE();
namespace kvrt::simd::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

template <class D>
using Q4KQuants = NibbleQuants<D, CompressedFormat::kQ4_K, 0>;
// q3_k keeps its whole 3-bit quant in the nibble (compressed_matrix.h): q − 4.
template <class D>
using Q3KQuants = NibbleQuants<D, CompressedFormat::kQ3_K, 4>;

// q2_k's rows: 8 bytes a panel (a group's panels side by side, no lane order), column c
// at bits 2c of the little-endian uint64. Every panel is decoded from its own bytes;
// the kernels take the panel-by-panel path (QuantPanel::lane_order is false).
template <class D>
struct Q2KQuants {
  static constexpr CompressedFormat kType = CompressedFormat::kQ2_K;
  static constexpr size_t kVecs = PanelVectors<D>();
  using DU = hn::RebindToUnsigned<D>;

  // q for the 2-bit quant in bits 1:0 of every lane of `bits` (the bits above ignored).
  static HWY_INLINE hn::Vec<D> Values(D d, hn::Vec<DU> bits) {
#if HWY_TARGET == HWY_AVX3
    alignas(64) static constexpr float kTable[16] = {0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3};
    return hn::Vec<D>{_mm512_permutexvar_ps(bits.raw, hn::Load(d, kTable).raw)};
#else
    const DU du;
    const auto magic = hn::Or(hn::And(bits, hn::Set(du, 3)), hn::Set(du, 0x4B000000));
    return hn::Sub(hn::BitCast(d, magic), hn::Set(d, 8388608.0f));  // 2^23
#endif
  }

  static HWY_INLINE void Decode(D d, const QuantPanel& panel, size_t b, size_t r, hn::Vec<D>* q) {
    const DU du;
    const size_t lanes = hn::Lanes(du);
    uint32_t words[2];
    std::memcpy(words, panel.Row(b, r, kType), sizeof(words));
    const auto lane_shift = hn::ShiftLeft<1>(hn::Iota(du, 0));  // 2·lane
    HWY_UNROLL(16)
    for (size_t v = 0; v < kVecs; ++v) {
      // Columns v·lanes.. start at bit 2·v·lanes; 16 columns a word.
      const size_t first_bit = 2 * v * lanes;
      const auto shift = hn::Add(lane_shift, hn::Set(du, static_cast<uint32_t>(first_bit % 32)));
      q[v] = Values(d, hn::Set(du, words[first_bit / 32]) >> shift);
    }
  }
};

// A row's quants from its nibble (the low 4 bits, as q4_0's) and its high bits after
// the group's nibbles: q5_k and q5_0 1 bit a column (q in 0..31, as is or less kOffset
// = 16), q6_k 2 bits (q in 0..63, less kOffset = 32). kBits, the high bits per column, follows from the layout.
template <class D, CompressedFormat kFormat, int kOffset>
struct HighBitQuants {
  static constexpr CompressedFormat kType = kFormat;
  static constexpr size_t kVecs = PanelVectors<D>();
  static constexpr size_t kBits = compressed::HighBytes(kFormat) * 8 / kCompressedPanelWidth;
  static_assert(kBits == 1 || kBits == 2, "q5_k, q5_0, q5_1 or q6_k");
  using DU = hn::RebindToUnsigned<D>;
  using Bits = NibbleBits<D>;

  // q − kOffset from the low 4 bits in bits 3:0 of `low` (the bits above ignored, or
  // with kMaskLow false and not on AVX-512 zero) and the high bits in bits kBits−1:0
  // of `high` (the bits above ignored).
  template <bool kMaskLow = true>
  static HWY_INLINE hn::Vec<D> Values(D d, hn::Vec<DU> low, hn::Vec<DU> high) {
#if HWY_TARGET == HWY_AVX3
    // VPERMPS reads bits 3:0 of the index: the high bits' table repeats every 2^kBits.
    alignas(64) static constexpr std::array<float, 16> kSixteens = [] {
      std::array<float, 16> table{};
      for (size_t i = 0; i < table.size(); ++i) {
        table[i] = static_cast<float>(16 * (i % (size_t{1} << kBits)));
      }
      return table;
    }();
    const auto nibble = _mm512_permutexvar_ps(low.raw, hn::Iota(d, static_cast<float>(-kOffset)).raw);
    const auto top = _mm512_permutexvar_ps(high.raw, hn::Load(d, kSixteens.data()).raw);
    return hn::Add(hn::Vec<D>{nibble}, hn::Vec<D>{top});
#else
    // The 4 + kBits bits ORed into the mantissa of 2^23, then 2^23 + kOffset subtracted.
    const DU du;
    const auto nibble = kMaskLow ? hn::And(low, hn::Set(du, 0xF)) : low;
    const auto top = hn::ShiftLeft<4>(hn::And(high, hn::Set(du, (1u << kBits) - 1)));
    const auto magic = hn::Or(hn::Or(nibble, top), hn::Set(du, 0x4B000000));
    return hn::Sub(hn::BitCast(d, magic), hn::Set(d, 8388608.0f + kOffset));  // 2^23 + kOffset
#endif
  }

  // The high bits of vector v of half h of a row whose panel's high-bit bytes are at
  // `high_bytes`: lane i gets those of column c = 16h + v·lanes + i at its bottom, the
  // little-endian word that holds them shifted right by kBits·c mod 32 (q5_k, q5_0: one word,
  // bit c; q6_k: a word per half, bits 2·(c mod 16)).
  static HWY_INLINE hn::Vec<DU> HighBits(const uint8_t* high_bytes, size_t h, size_t v) {
    const DU du;
    const size_t first_bit = kBits * (h * kCompressedPanelWidth / 2 + v * hn::Lanes(du));
    uint32_t word;
    std::memcpy(&word, high_bytes + first_bit / 32 * sizeof(word), sizeof(word));
    // kBits·i for kBits 1 or 2.
    const auto lane_bits = hn::ShiftLeft<kBits - 1>(hn::Iota(du, 0));
    const auto shift = hn::Add(lane_bits, hn::Set(du, static_cast<uint32_t>(first_bit % 32)));
    return hn::Set(du, word) >> shift;
  }

  // Panel kIndex of a lane-order row (NibbleBits::LaneOrder; a byte load past the
  // nibbles stays inside the row, whose high bits follow).
  template <size_t kIndex, bool kByteLoads = false>
  static HWY_INLINE void DecodeLanes(D d, const uint8_t* row, hn::Vec<D>* q) {
    const uint8_t* high_bytes = row + compressed::kGroupPanels * compressed::kQ4RowBytes +
                                kIndex * compressed::HighBytes(kType);
    HWY_UNROLL(16)
    for (size_t v = 0; v < kVecs / 2; ++v) {
      hn::Vec<DU> low, high;
      Bits::template LaneOrder<kIndex, kByteLoads>(row, v, low, high);
      q[v] = Values(d, low, HighBits(high_bytes, 0, v));
      q[v + kVecs / 2] = Values<!Bits::kHighClean>(d, high, HighBits(high_bytes, 1, v));
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
    const uint8_t* high_bytes = panel.HighBits(b, r);
    HWY_UNROLL(16)
    for (size_t v = 0; v < kVecs / 2; ++v) {
      hn::Vec<DU> low, high;
      Bits::Apart(row, v, low, high);
      q[v] = Values(d, low, HighBits(high_bytes, 0, v));
      q[v + kVecs / 2] = Values<false>(d, high, HighBits(high_bytes, 1, v));
    }
  }
};
template <class D>
using Q5KQuants = HighBitQuants<D, CompressedFormat::kQ5_K, 0>;
template <class D>
using Q6KQuants = HighBitQuants<D, CompressedFormat::kQ6_K, 32>;
// q5_0's rows are q5_k's with ggml's offset: q − 16, scaled by q4_0's f16 d per block.
template <class D>
using Q50Quants = HighBitQuants<D, CompressedFormat::kQ5_0, 16>;
// q4_1's and q5_1's rows are q4_k's and q5_k's (q itself), scaled by an f16 d and
// shifted by an f16 m per block (BlockScales).
template <class D>
using Q41Quants = NibbleQuants<D, CompressedFormat::kQ4_1, 0>;
template <class D>
using Q51Quants = HighBitQuants<D, CompressedFormat::kQ5_1, 0>;

// How a block-quantized type's sub-blocks are scaled (compressed_matrix.h, MatVec):
// after the partial sums P of a sub-block of kSubRows rows, acc = fma(scale, P, acc),
// and for kHasMin (q2_k, q4_k, q5_k, q4_1, q5_1) then acc = acc − min·S fused, S the
// sub-block's Σx (SubBlockSum); q4_1's and q5_1's min is −m, so that the step adds m·S.
template <CompressedFormat kType>
struct BlockScales {
  static constexpr size_t kSubRows = compressed::ScaleSubRows(kType);
  static constexpr size_t kSubBlocks = kQuantBlock / kSubRows;  // per block of 32 rows
  static constexpr bool kHasMin = compressed::HasMin(kType) || compressed::HasBlockMin(kType);

  // The column scales of sub-block s of block b as f32: q8_0/q4_0/q5_0/q4_1/q5_1/iq4_nl the f16 d,
  // the K-quants and iq4_xs d·sc (exact products).
  template <class D>
  static HWY_INLINE void Scales(D d, const QuantPanel& panel, size_t b, size_t s, hn::Vec<D>* scale) {
    if constexpr (!compressed::IsKQuant(kType)) {
      return LoadColumnScales(d, panel.Scales(b), scale);
    } else {
      hn::Vec<D> super[PanelVectors<D>()];
      LoadColumnScales(d, panel.Header(b), super);
      // q6_k's, q3_k's and iq4_xs's scale bytes are signed, q4_k's and q5_k's not.
      // q2_k's scale is the low nibble of its sub-block's byte.
      constexpr bool kSigned = compressed::HasSignedScales16(kType) || kType == CompressedFormat::kIQ4_XS;
      constexpr ScaleBits kBits = kType == CompressedFormat::kQ2_K ? ScaleBits::kLowNibble
                                  : kSigned                        ? ScaleBits::kSigned
                                                                   : ScaleBits::kByte;
      ScaleBytes<kBits>(d, panel.Scales(b) + s * kCompressedPanelWidth, super, scale);
    }
  }
  // The column minimums subtracted per sub-block s of block b: q2_k, q4_k, q5_k dmin·m
  // (q4_k, q5_k: the m bytes after the sc bytes; q2_k: the high nibbles of sub-block s's
  // bytes); q4_1, q5_1 −m (the f16 m after the block's d, negated: exact; their only
  // sub-block is the block, s = 0).
  template <class D>
  static HWY_INLINE void Mins(D d, const QuantPanel& panel, size_t b, size_t s, hn::Vec<D>* min) {
    static_assert(kHasMin, "q2_k, q4_k, q5_k, q4_1 and q5_1 only");
    if constexpr (compressed::HasBlockMin(kType)) {
      LoadColumnScales(d, panel.Scales(b) + compressed::kScaleBytes, min);
      for (size_t v = 0; v < PanelVectors<D>(); ++v) min[v] = hn::Neg(min[v]);
      return;
    }
    hn::Vec<D> super[PanelVectors<D>()];
    LoadColumnScales(d, panel.Header(b) + compressed::kScaleBytes, super);
    if constexpr (kType == CompressedFormat::kQ2_K) {
      ScaleBytes<ScaleBits::kHighNibble>(d, panel.Scales(b) + s * kCompressedPanelWidth, super, min);
    } else {
      ScaleBytes<ScaleBits::kByte>(d, panel.Scales(b) + kCompressedPanelWidth, super, min);
    }
  }

 private:
  // What a scale byte holds: an unsigned or signed byte, or q2_k's 4-bit sc (low) or m (high).
  enum class ScaleBits { kByte, kSigned, kLowNibble, kHighNibble };
  // out[v] = super[v]·float(the scale of each column's byte).
  template <ScaleBits kBits, class D>
  static HWY_INLINE void ScaleBytes(D d, const uint8_t* bytes, const hn::Vec<D>* super, hn::Vec<D>* out) {
    constexpr size_t kVecs = PanelVectors<D>();
    const hn::RebindToSigned<D> di;
    const size_t lanes = hn::Lanes(d);
    HWY_UNROLL(16)
    for (size_t v = 0; v < kVecs; ++v) {
      hn::Vec<decltype(di)> integers;
      if constexpr (kBits == ScaleBits::kSigned) {
        const hn::Rebind<int8_t, D> di8;
        integers = hn::PromoteTo(di, hn::LoadU(di8, reinterpret_cast<const int8_t*>(bytes) + v * lanes));
      } else {
        const hn::Rebind<uint8_t, D> du8;
        integers = hn::BitCast(di, hn::PromoteTo(hn::RebindToUnsigned<D>(), hn::LoadU(du8, bytes + v * lanes)));
        if constexpr (kBits == ScaleBits::kLowNibble) integers = hn::And(integers, hn::Set(di, 0xF));
        if constexpr (kBits == ScaleBits::kHighNibble) integers = hn::ShiftRight<4>(integers);
      }
      out[v] = hn::Mul(super[v], hn::ConvertTo(d, integers));
    }
  }
};

}  // namespace kvrt::simd::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // KVRT_SIMD_KQUANT_ROWS_INL_H_ toggle
