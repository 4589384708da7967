// Per-target body of the int8-activation kernel (int8_activations.h).
#if defined(KVRT_SIMD_INT8_MATMUL_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef KVRT_SIMD_INT8_MATMUL_INL_H_
#undef KVRT_SIMD_INT8_MATMUL_INL_H_
#else
#define KVRT_SIMD_INT8_MATMUL_INL_H_
#endif

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "compressed_layout.h"
#include "compressed_rows-inl.h"
#include "hwy/cache_control.h"
#include "hwy/highway.h"
#include "kvrt/simd/int8_activations.h"
#include "panel_columns-inl.h"

HWY_BEFORE_NAMESPACE();
namespace kvrt::simd::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// One quad (4 rows) of a block of one panel of `kFormat` as kVecs int32 vectors,
// columns in order; every 32-bit lane holds the four unsigned quants u of its column,
// row 4t + j in byte j (compressed_layout.h has the quad layout; iq4_nl's and iq4_xs's
// u = t + 128 looked up from their stored index). Per block the
// integer sums S_h of kHalves sub-blocks (q6_k, q3_k and q2_k: two of 16 rows, each
// with its own scale; the others one of 32) start at −kOffset·Σa of their
// activations, and Prepare and Apply put the block's scales on them.
template <CompressedFormat kFormat, class DI>
struct QuadWeights {
  static constexpr bool kQ8 = kFormat == CompressedFormat::kQ8_0;
  static constexpr size_t kHighBits = compressed::HighBitsPerQuant(kFormat);
  static constexpr size_t kPlaneQuads = compressed::PlaneQuads(kFormat);
  // Sub-blocks of 16 rows with an int8 scale each (q6_k, q3_k).
  static constexpr bool kSigned16 = compressed::HasSignedScales16(kFormat);
  // q2_k: 2-bit quants, four quads to a byte; a scale and a minimum per 16 rows.
  static constexpr bool kQ2 = kFormat == CompressedFormat::kQ2_K;
  static constexpr size_t kHalves = kSigned16 || kQ2 ? 2 : 1;
  // iq4_nl and iq4_xs: a nibble indexing kvalues_iq4nl; iq4_xs an int8 scale per block.
  static constexpr bool kTable = compressed::HasValueTable(kFormat);
  static constexpr bool kSigned32 = kFormat == CompressedFormat::kIQ4_XS;
  // q8_0 q + 128, q4_0 q + 8, q5_0 q + 16, q6_k q + 32, q3_k q + 4 and the iq4 types
  // t + 128 are multiplied: the sums start at −kOffset·Σa; q4_1, q5_1, q4_k, q5_k and
  // q2_k multiply q itself (their minimum is Accumulate's).
  // q4_1 and q5_1: an f16 d and an f16 minimum m per column and block.
  static constexpr bool kBlockMin = compressed::HasBlockMin(kFormat);
  // One f16 d per column and block (the legacy types and iq4_nl), or two levels (the
  // K-quants and iq4_xs).
  static constexpr bool kBlockScaled = kQ8 || kFormat == CompressedFormat::kQ4_0 ||
                                       kFormat == CompressedFormat::kQ5_0 ||
                                       kFormat == CompressedFormat::kIQ4_NL;
  static constexpr int32_t kOffset = kQ8                                  ? compressed::kQ8Offset
                                     : kTable                             ? compressed::kIQ4Bias
                                     : kFormat == CompressedFormat::kQ4_0 ? compressed::kQ4Zero
                                     : kFormat == CompressedFormat::kQ5_0 ? 16
                                     : kFormat == CompressedFormat::kQ6_K ? 32
                                     : kFormat == CompressedFormat::kQ3_K ? 4
                                                                          : 0;
  // u = q + 128 (q8_0) and t + 128 (iq4) reach 255 and 241: signed bytes biased.
  static constexpr bool kBiasedSigned = kQ8 || kTable;
  static constexpr int32_t kMaxQuant = kBiasedSigned ? 255 : kQ2 ? 3 : (16 << kHighBits) - 1;

  // A nibble type's quad (64 bytes) holds columns c and c + 16 in the low and high
  // nibbles of the same byte, so one load gives two vectors: a mask, and a shift and
  // a mask; q5_k's and q6_k's high bits come from their plane, where they sit at the
  // same byte, by one shift to bit 4 and a mask per vector.
  static HWY_INLINE void Load(DI di, const uint8_t* block, size_t t, hn::Vec<DI>* w) {
    constexpr size_t kVecs = PanelVectors<hn::RebindToFloat<DI>>();
    const auto* lanes =
        reinterpret_cast<const int32_t*>(block + compressed::QuadOffset(kFormat, t));
    if constexpr (kQ8) {
      HWY_UNROLL(16)
      for (size_t v = 0; v < kVecs; ++v) w[v] = hn::LoadU(di, lanes + v * hn::Lanes(di));
    } else if constexpr (kQ2) {
      // The group's 128 bytes hold quad t % 4's quants at bits 2·(t % 4) of every
      // byte (an arithmetic shift's sign bits land above the mask).
      const int at = static_cast<int>(2 * (t % compressed::kQ2GroupQuads));
      const auto two_bits = hn::Set(di, 0x03030303);
      HWY_UNROLL(16)
      for (size_t v = 0; v < kVecs; ++v) {
        w[v] = hn::And(hn::ShiftRightSame(hn::LoadU(di, lanes + v * hn::Lanes(di)), at), two_bits);
      }
    } else {
      const auto nibbles = hn::Set(di, 0x0F0F0F0F);
      HWY_UNROLL(16)
      for (size_t v = 0; v < kVecs / 2; ++v) {
        const auto bytes = hn::LoadU(di, lanes + v * hn::Lanes(di));
        w[v] = hn::And(bytes, nibbles);
        w[v + kVecs / 2] = hn::And(hn::ShiftRight<4>(bytes), nibbles);
      }
      if constexpr (kTable) {
        HWY_UNROLL(16)
        for (size_t v = 0; v < kVecs; ++v) w[v] = BiasedValues(di, w[v]);
      }
      if constexpr (kHighBits != 0) {
        const auto* plane =
            reinterpret_cast<const int32_t*>(block + compressed::PlaneOffset(kFormat, t));
        // Column c's bits sit at `at`, column c + 16's at 4 + at.
        const int at = static_cast<int>(kHighBits * (t % kPlaneQuads));
        const auto high = hn::Set(di, kHighBits == 1 ? 0x10101010 : 0x30303030);
        HWY_UNROLL(16)
        for (size_t v = 0; v < kVecs / 2; ++v) {
          const auto bits = hn::LoadU(di, plane + v * hn::Lanes(di));
          w[v] = hn::Or(w[v], hn::And(hn::ShiftLeftSame(bits, 4 - at), high));
          w[v + kVecs / 2] = hn::Or(w[v + kVecs / 2], hn::And(hn::ShiftRightSame(bits, at), high));
        }
      }
    }
  }

  // Every byte of `indices` (0..15) replaced by kvalues_iq4nl[index] + 128: one
  // in-lane byte lookup (PSHUFB) of the biased table; the scalar target, whose vector is
  // one int32, looks its four bytes up one at a time.
  static HWY_INLINE hn::Vec<DI> BiasedValues(DI di, hn::Vec<DI> indices) {
    alignas(16) static constexpr uint8_t kBiased[16] = {1,   24,  45,  63,  79,  93,  106, 118,
                                                        129, 141, 153, 166, 181, 197, 217, 241};
#if HWY_TARGET == HWY_SCALAR
    const auto lane = static_cast<uint32_t>(hn::GetLane(indices));
    uint32_t biased = 0;
    for (int j = 0; j < 4; ++j) biased |= uint32_t{kBiased[lane >> (8 * j) & 0xF]} << (8 * j);
    return hn::Set(di, static_cast<int32_t>(biased));
#else
    const hn::Repartition<uint8_t, DI> du8;
    return hn::BitCast(di, hn::TableLookupBytes(hn::LoadDup128(du8, kBiased),
                                                hn::BitCast(du8, indices)));
#endif
  }

#if HWY_TARGET == HWY_AVX2
  // Int8Dot::kBytePairs. q8_0's u = q + 128 and iq4's t + 128 reach 255 and 241, and
  // VPMADDUBSW's int16 pair of u·a would saturate (2·255·127 > 32767), so their pairs
  // multiply |q| by a with q's sign (q = u − 128, the byte's top bit flipped): each
  // product is q·a, |q·a| ≤ 128·127, a pair ≤ 32512 (|a| ≤ 127, int8_activations.h);
  // one quad's pairs are widened at once, and the sums carry no offset. The nibble
  // types' u ≤ kMaxQuant (15, 31, 63) keep a quad's pair within 2·kMaxQuant·128 (3840,
  // 7936, 16128), so 8, 4 and 2 quads add in int16 before a widening (q5_0 like q5_k);
  // q2_k's u ≤ 3 (a pair ≤ 768) would allow 42, so its four quads per sub-block widen once.
  static constexpr size_t kQuadsPerWidening =
      kBiasedSigned ? 1 : 32767 / (2 * kMaxQuant * 128);
  static constexpr int32_t kPairOffset = kBiasedSigned ? 0 : kOffset;
  static HWY_INLINE hn::Vec<DI> BytePairs(hn::Vec<DI> u, hn::Vec<DI> a) {
    if constexpr (kBiasedSigned) {
      const __m256i q = _mm256_xor_si256(u.raw, _mm256_set1_epi8(static_cast<char>(0x80)));
      return hn::Vec<DI>{_mm256_maddubs_epi16(_mm256_abs_epi8(q), _mm256_sign_epi8(a.raw, q))};
    } else {
      return hn::Vec<DI>{_mm256_maddubs_epi16(u.raw, a.raw)};
    }
  }
#endif

  // Where sub-block h of block b of row `row` starts its sum: −kOffset·Σa.
  static HWY_INLINE int32_t Start(const Int8Rows& a, size_t row, size_t b, size_t h,
                                  int32_t offset) {
    if (offset == 0) return 0;
    const int32_t sum =
        kHalves == 1 ? a.sums[row * a.blocks() + b] : a.half_sums[(row * a.blocks() + b) * 2 + h];
    return -offset * sum;
  }

  // The weights' side of one block's scaling in one panel, the same for every
  // activation row: a tile of rows loads and widens it once (Prepare) and applies it
  // to each row's sums (Apply). scale: d_w, or the super-block's d; min: m_w (q4_1,
  // q5_1) or the super-block's dmin (q4_k, q5_k, q2_k); sc[h] and m[h]: the integer
  // scale and minimum multiplier of sub-block h (q4_k, q5_k: sc, m; q6_k, q3_k: sc_0,
  // sc_1; iq4_xs: sc; q2_k: each half's sc and m from its byte sc | m << 4).
  template <class D, size_t kVecs>
  struct BlockScales {
    hn::Vec<D> scale[kVecs];
    hn::Vec<D> min[kVecs];
    hn::Vec<DI> sc[2][kVecs];
    hn::Vec<DI> m[2][kVecs];
  };

  template <class D, size_t kVecs>
  static HWY_INLINE void Prepare(D d, const uint8_t* panel, const uint8_t* block, size_t k0,
                                 BlockScales<D, kVecs>* out) {
    const DI di;
    const size_t lanes = hn::Lanes(d);
    if constexpr (kBlockMin) {
      // The scale area holds the 32 columns' d, then their m.
      LoadColumnScales(d, block, out->scale);
      LoadColumnScales(d, block + compressed::kScaleBytes, out->min);
    } else if constexpr (kBlockScaled) {
      LoadColumnScales(d, block, out->scale);
    } else {
      const uint8_t* header = panel + compressed::QuadHeaderOffset(kFormat, k0);
      LoadColumnScales(d, header, out->scale);
      if constexpr (kSigned16 || kSigned32) {
        const hn::Rebind<int8_t, DI> d8;
        const auto* scales = reinterpret_cast<const int8_t*>(block);
        for (size_t h = 0; h < (kSigned16 ? 2 : 1); ++h) {
          for (size_t v = 0; v < kVecs; ++v) {
            out->sc[h][v] =
                hn::PromoteTo(di, hn::LoadU(d8, scales + h * kCompressedPanelWidth + v * lanes));
          }
        }
      } else {
        const hn::Rebind<uint8_t, DI> d8;
        LoadColumnScales(d, header + compressed::kScaleBytes, out->min);
        for (size_t v = 0; v < kVecs; ++v) {
          const auto first = hn::PromoteTo(di, hn::LoadU(d8, block + v * lanes));
          const auto second =
              hn::PromoteTo(di, hn::LoadU(d8, block + kCompressedPanelWidth + v * lanes));
          if constexpr (kQ2) {
            const auto low = hn::Set(di, 0xF);
            out->sc[0][v] = hn::And(first, low);
            out->sc[1][v] = hn::And(second, low);
            out->m[0][v] = hn::ShiftRight<4>(first);
            out->m[1][v] = hn::ShiftRight<4>(second);
          } else {
            out->sc[0][v] = first;
            out->m[0][v] = second;
          }
        }
      }
    }
  }

  // acc + this block's part, from its integer sums s (int8_activations.h):
  //   q8_0, q4_0, q5_0, iq4_nl: acc + (d_w·d_a)·float(S)
  //   q4_1, q5_1: acc + ((d_w·d_a)·float(S) + (m_w·d_a)·float(Σa))
  //   q6_k, q3_k: acc + (d·d_a)·float(sc_0·S_0 + sc_1·S_1)
  //   iq4_xs: acc + (d·d_a)·float(sc·S)
  //   q4_k, q5_k: acc + ((d·d_a)·float(sc·S) − (dmin·d_a)·float(m·Σa))
  //   q2_k: acc + ((d·d_a)·float(sc_0·S_0 + sc_1·S_1) − (dmin·d_a)·float(m_0·Σa_0 + m_1·Σa_1))
  // each operation rounded to f32 (no FMA), d·d_a, m_w·d_a and dmin·d_a exact. half_sums: the
  // Σa of the block's two halves.
  template <class D, size_t kVecs>
  static HWY_INLINE void Apply(D d, const BlockScales<D, kVecs>& w, float activation_scale,
                               int32_t activation_sum, const int32_t* half_sums,
                               const hn::Vec<DI> (&s)[kHalves][kVecs], hn::Vec<D>* acc) {
    const DI di;
    const auto da = hn::Set(d, activation_scale);
    for (size_t v = 0; v < kVecs; ++v) {
      const auto scale = hn::Mul(w.scale[v], da);  // exact
      if constexpr (kBlockMin) {
        const auto sum = hn::Set(d, static_cast<float>(activation_sum));  // exact: |Σa| ≤ 4064
        const auto scaled = hn::Mul(scale, hn::ConvertTo(d, s[0][v]));
        const auto mins = hn::Mul(hn::Mul(w.min[v], da), sum);
        acc[v] = hn::Add(acc[v], hn::Add(scaled, mins));
      } else if constexpr (kBlockScaled) {
        acc[v] = hn::Add(acc[v], hn::Mul(scale, hn::ConvertTo(d, s[0][v])));
      } else if constexpr (kSigned16) {
        const auto total = hn::Add(hn::Mul(s[0][v], w.sc[0][v]), hn::Mul(s[1][v], w.sc[1][v]));
        acc[v] = hn::Add(acc[v], hn::Mul(scale, hn::ConvertTo(d, total)));  // total exact
      } else if constexpr (kSigned32) {
        acc[v] = hn::Add(acc[v], hn::Mul(scale, hn::ConvertTo(d, hn::Mul(s[0][v], w.sc[0][v]))));
      } else if constexpr (kQ2) {
        const auto sum0 = hn::Set(di, half_sums[0]), sum1 = hn::Set(di, half_sums[1]);
        const auto total = hn::Add(hn::Mul(s[0][v], w.sc[0][v]), hn::Mul(s[1][v], w.sc[1][v]));
        const auto min_total = hn::Add(hn::Mul(w.m[0][v], sum0), hn::Mul(w.m[1][v], sum1));
        const auto scaled = hn::Mul(scale, hn::ConvertTo(d, total));  // the integers exact
        const auto mins = hn::Mul(hn::Mul(w.min[v], da), hn::ConvertTo(d, min_total));
        acc[v] = hn::Add(acc[v], hn::Sub(scaled, mins));
      } else {
        const auto sum = hn::Set(di, activation_sum);
        const auto scaled = hn::Mul(scale, hn::ConvertTo(d, hn::Mul(s[0][v], w.sc[0][v])));
        const auto mins = hn::Mul(hn::Mul(w.min[v], da), hn::ConvertTo(d, hn::Mul(w.m[0][v], sum)));
        acc[v] = hn::Add(acc[v], hn::Sub(scaled, mins));
      }
    }
  }

  // Prepare and Apply for one row (the decode kernel, Int8RowPanel).
  template <class D, size_t kVecs>
  static HWY_INLINE void Accumulate(D d, const uint8_t* panel, const uint8_t* block, size_t k0,
                                    float activation_scale, int32_t activation_sum,
                                    const int32_t* half_sums,
                                    const hn::Vec<DI> (&s)[kHalves][kVecs], hn::Vec<D>* acc) {
    BlockScales<D, kVecs> scales;
    Prepare(d, panel, block, k0, &scales);
    Apply(d, scales, activation_scale, activation_sum, half_sums, s, acc);
  }
};

// How a target forms the exact integer block sums S_b (int8_activations.h).
enum class Int8Dot {
  kLanes,      // portable: each byte shifted and masked out of its lane, int32 multiplies
  kBytePairs,  // AVX2: VPMADDUBSW (byte products, pairs added into int16), then
               // VPMADDWD by ones to int32 (the Weights' BytePairs and ranges)
  kVnni,       // AVX-512 VNNI: VPDPBUSD, four byte products into each int32 lane
};

// Four activation quants of one row (rows 4t..4t+3 of a block), broadcast: packed in
// one lane for the byte forms, or one vector per byte for the portable one.
template <Int8Dot kDot, class DI>
struct ActivationQuad {
  static constexpr bool kPacked = kDot != Int8Dot::kLanes;
  hn::Vec<DI> v[kPacked ? 1 : 4];

  HWY_INLINE ActivationQuad(DI di, const int8_t* quants) {
    if constexpr (kPacked) {
      int32_t packed;
      std::memcpy(&packed, quants, sizeof(packed));
      v[0] = hn::Set(di, packed);
    } else {
      for (size_t j = 0; j < 4; ++j) v[j] = hn::Set(di, int32_t{quants[j]});
    }
  }
};

// acc + Σ_j u_j·a_j per lane, u_j the unsigned byte j of w, a_j the signed quant j:
// exact (the sums stay far inside int32, int8_activations.h).
template <Int8Dot kDot, class DI>
HWY_INLINE hn::Vec<DI> Dot4(DI di, hn::Vec<DI> acc, hn::Vec<DI> w,
                            const ActivationQuad<kDot, DI>& a) {
  if constexpr (kDot == Int8Dot::kVnni) {
#if HWY_TARGET == HWY_AVX3
    // VPDPBUSD: unsigned bytes of w times signed bytes of a, four per lane, added
    // to acc without saturation. Inline assembly because Highway 1.0.3 has no op
    // for it; the caller checked CPUID (Int8DotUsesVnni).
    __m512i raw = acc.raw;
    asm("vpdpbusd %2, %1, %0" : "+v"(raw) : "v"(w.raw), "v"(a.v[0].raw));
    return hn::Vec<DI>{raw};
#else
    static_assert(kDot != Int8Dot::kVnni, "VPDPBUSD is used on the AVX3 target only");
    return acc;
#endif
  } else {
    static_assert(kDot == Int8Dot::kLanes, "byte pairs go through BlockSumsByPairs");
    const auto byte = hn::Set(di, 0xFF);
    acc = hn::Add(acc, hn::Mul(hn::And(w, byte), a.v[0]));
    acc = hn::Add(acc, hn::Mul(hn::And(hn::ShiftRight<8>(w), byte), a.v[1]));
    acc = hn::Add(acc, hn::Mul(hn::And(hn::ShiftRight<16>(w), byte), a.v[2]));
    return hn::Add(acc, hn::Mul(hn::And(hn::ShiftRight<24>(w), byte), a.v[3]));
  }
}

// The operands of quad t of one block: for every panel g, its weights' kVecs vectors
// (loaded once), and for every row r, the row's four activation quants; visit(r, g,
// weights, quad) consumes them.
template <CompressedFormat kFormat, Int8Dot kDot, size_t kRows, size_t kPanels, class DI,
          class Visit>
HWY_INLINE void ForQuadOperands(DI di, const uint8_t* const* block, const int8_t* const* quants,
                                size_t t, const Visit& visit) {
  using W = QuadWeights<kFormat, DI>;
  constexpr size_t kVecs = PanelVectors<hn::RebindToFloat<DI>>();
  HWY_UNROLL(4)
  for (size_t g = 0; g < kPanels; ++g) {
    hn::Vec<DI> weights[kVecs];
    W::Load(di, block[g], t, weights);
    HWY_UNROLL(4)
    for (size_t r = 0; r < kRows; ++r) {
      visit(r, g, weights, ActivationQuad<kDot, DI>(di, quants[r] + t * compressed::kQuadRows));
    }
  }
}

// sum += the int8 dot products of quads [t_begin, t_end) of one block (Int8Dot::kLanes
// / kVnni): one Dot4 per quad, row and vector.
template <CompressedFormat kFormat, Int8Dot kDot, size_t kRows, size_t kPanels, class DI>
HWY_INLINE void BlockSumsByQuads(
    DI di, const uint8_t* const* block, const int8_t* const* quants, size_t t_begin, size_t t_end,
    hn::Vec<DI> (&sum)[kRows][kPanels][PanelVectors<hn::RebindToFloat<DI>>()]) {
  constexpr size_t kVecs = PanelVectors<hn::RebindToFloat<DI>>();
  for (size_t t = t_begin; t < t_end; ++t) {
    ForQuadOperands<kFormat, kDot, kRows, kPanels>(
        di, block, quants, t,
        [&](size_t r, size_t g, const hn::Vec<DI>* weights, const ActivationQuad<kDot, DI>& quad)
            HWY_ATTR {
              for (size_t v = 0; v < kVecs; ++v)
                sum[r][g][v] = Dot4(di, sum[r][g][v], weights[v], quad);
            });
  }
}

#if HWY_TARGET == HWY_AVX2
// The same sums by byte pairs (Int8Dot::kBytePairs): W::BytePairs gives the int16
// pair sums of one quad; W::kQuadsPerWidening quads of them are added in int16
// (VPADDW: the weights' ranges keep them exact), then widened by VPMADDWD with ones,
// which adds each lane's two int16 halves into int32: every lane ends with the same
// integer as four VPDPBUSD steps.
template <CompressedFormat kFormat, size_t kRows, size_t kPanels, class DI>
HWY_INLINE void BlockSumsByPairs(
    DI di, const uint8_t* const* block, const int8_t* const* quants, size_t t_begin, size_t t_end,
    hn::Vec<DI> (&sum)[kRows][kPanels][PanelVectors<hn::RebindToFloat<DI>>()]) {
  using W = QuadWeights<kFormat, DI>;
  constexpr size_t kVecs = PanelVectors<hn::RebindToFloat<DI>>();
  const __m256i ones = _mm256_set1_epi16(1);
  for (size_t t0 = t_begin; t0 < t_end; t0 += W::kQuadsPerWidening) {
    __m256i pairs[kRows][kPanels][kVecs];
    for (size_t r = 0; r < kRows; ++r) {
      for (size_t g = 0; g < kPanels; ++g) {
        for (size_t v = 0; v < kVecs; ++v) pairs[r][g][v] = _mm256_setzero_si256();
      }
    }
    // Not unrolled: a whole block's eight quads unrolled spill the int16 sums.
    HWY_UNROLL(1)
    for (size_t t = t0; t < std::min(t_end, t0 + W::kQuadsPerWidening); ++t) {
      ForQuadOperands<kFormat, Int8Dot::kBytePairs, kRows, kPanels>(
          di, block, quants, t,
          [&](size_t r, size_t g, const hn::Vec<DI>* weights,
              const ActivationQuad<Int8Dot::kBytePairs, DI>& quad) HWY_ATTR {
            for (size_t v = 0; v < kVecs; ++v) {
              pairs[r][g][v] =
                  _mm256_add_epi16(pairs[r][g][v], W::BytePairs(weights[v], quad.v[0]).raw);
            }
          });
    }
    for (size_t r = 0; r < kRows; ++r) {
      for (size_t g = 0; g < kPanels; ++g) {
        for (size_t v = 0; v < kVecs; ++v) {
          sum[r][g][v] =
              hn::Add(sum[r][g][v], hn::Vec<DI>{_mm256_madd_epi16(pairs[r][g][v], ones)});
        }
      }
    }
  }
}
#endif

// The offset o of the sums' start −o·Σa: the stored weights' (Int8Dot::kLanes,
// kVnni), or what the byte pairs leave in them.
template <class W, Int8Dot kDot>
constexpr int32_t SumOffset() {
#if HWY_TARGET == HWY_AVX2
  if constexpr (kDot == Int8Dot::kBytePairs) return W::kPairOffset;
#endif
  return W::kOffset;
}

// C rows [row0, row0 + kRows) × the columns of kPanels panels from first_panel: per
// block and sub-block the integer sums in int32 lanes (from −o·Σa), then
// W::Prepare's and W::Apply's rounded f32 operations (no FMA, so that every target and the twin
// agree bit for bit).
template <CompressedFormat kFormat, Int8Dot kDot, size_t kRows, size_t kPanels, class D>
HWY_INLINE void Int8Tile(D d, const Int8Rows& a, size_t row0, const CompressedMatrixView& w,
                         float* c, size_t ldc, size_t first_panel) {
  using DI = hn::RebindToSigned<D>;
  const DI di;
  using W = QuadWeights<kFormat, DI>;
  constexpr size_t kVecs = PanelVectors<D>();
  constexpr size_t kHalves = W::kHalves;
  constexpr size_t kHalfQuads = compressed::kQuadsPerBlock / kHalves;
  const size_t blocks = a.blocks();
  const uint8_t* panel[kPanels];
  for (size_t g = 0; g < kPanels; ++g) panel[g] = w.panel(first_panel + g);
  hn::Vec<D> acc[kRows][kPanels][kVecs];
  for (size_t r = 0; r < kRows; ++r) {
    for (size_t g = 0; g < kPanels; ++g) {
      for (size_t v = 0; v < kVecs; ++v) acc[r][g][v] = hn::Zero(d);
    }
  }
  for (size_t b = 0; b < blocks; ++b) {
    const size_t k0 = b * kQuantBlock;
    const uint8_t* block[kPanels];
    for (size_t g = 0; g < kPanels; ++g)
      block[g] = panel[g] + compressed::QuantBlockOffset(kFormat, k0);
    const int8_t* quants[kRows];
    for (size_t r = 0; r < kRows; ++r) quants[r] = a.quants + (row0 + r) * a.k + k0;
    hn::Vec<DI> sums[kHalves][kRows][kPanels][kVecs];
    for (size_t h = 0; h < kHalves; ++h) {
      for (size_t r = 0; r < kRows; ++r) {
        const auto start = hn::Set(di, W::Start(a, row0 + r, b, h, SumOffset<W, kDot>()));
        for (size_t g = 0; g < kPanels; ++g) {
          for (size_t v = 0; v < kVecs; ++v) sums[h][r][g][v] = start;
        }
      }
#if HWY_TARGET == HWY_AVX2
      if constexpr (kDot == Int8Dot::kBytePairs) {
        BlockSumsByPairs<kFormat, kRows, kPanels>(di, block, quants, h * kHalfQuads,
                                                  (h + 1) * kHalfQuads, sums[h]);
      } else  // NOLINT(readability/braces): the other forms follow
#endif
      {
        BlockSumsByQuads<kFormat, kDot, kRows, kPanels>(di, block, quants, h * kHalfQuads,
                                                        (h + 1) * kHalfQuads, sums[h]);
      }
    }
    // The block's weight scales once per panel, then each row's.
    for (size_t g = 0; g < kPanels; ++g) {
      typename W::template BlockScales<D, kVecs> scales;
      W::Prepare(d, panel[g], block[g], k0, &scales);
      for (size_t r = 0; r < kRows; ++r) {
        hn::Vec<DI> s[kHalves][kVecs];
        for (size_t h = 0; h < kHalves; ++h) {
          for (size_t v = 0; v < kVecs; ++v) s[h][v] = sums[h][r][g][v];
        }
        W::Apply(d, scales, a.scales[(row0 + r) * blocks + b], a.sums[(row0 + r) * blocks + b],
                 a.half_sums + ((row0 + r) * blocks + b) * 2, s, acc[r][g]);
      }
    }
  }
  for (size_t r = 0; r < kRows; ++r) {
    for (size_t g = 0; g < kPanels; ++g) {
      const size_t first_col = (first_panel + g) * kCompressedPanelWidth;
      StorePanelRow<kVecs>(d, acc[r][g], std::min(kCompressedPanelWidth, w.cols - first_col),
                           c + r * ldc + first_col);
    }
  }
}

// Independent integer sums per vector in Int8RowPanel: a block's 8 quads give each
// vector 8 dependent VPDPBUSD, and four chains keep enough of them in flight (q6_k:
// two per sub-block). Byte pairs (AVX2) use two: with 16 registers, four chains of
// four vectors would spill.
template <Int8Dot kDot>
constexpr size_t QuadChains() {
  return kDot == Int8Dot::kBytePairs ? 2 : 4;
}
// How far ahead of its block Int8RowPanel asks for the weights (11 q8_0 or 21 q4_0
// blocks): one sequential stream needs more bytes in flight than the hardware
// prefetcher keeps. The read rate of a large matrix climbs with the distance up to
// about 12 KiB; q4_0 gains little beyond it and q8_0 loses (figures in
// docs/performance/design_measurements.md).
inline constexpr size_t kInt8PrefetchBytes = 12288;

// One row (decode) times one panel. The quad layout stores each panel apart, so one
// panel at a time reads the matrix as one sequential stream, which a software
// prefetch kInt8PrefetchBytes ahead keeps fed. (Four panels side by side, as Int8Tile
// reads them, are four streams 14-26 KB apart, which made the decode of a large q4_0
// matrix slower than the f32-activation kernel's.) The quads of a sub-block go
// round-robin to its share of QuadChains() integer sums, added at its end; by byte
// pairs (AVX2) a chain adds its quads' int16 pairs while W::kQuadsPerWidening of them
// fit and widens them into its int32 sum (BlockSumsByPairs has the ranges). Integer
// addition is exact in any order, so the sums, and every bit of y, are those of
// Int8Tile.
template <CompressedFormat kFormat, Int8Dot kDot, class D>
HWY_INLINE void Int8RowPanel(D d, const Int8Rows& a, size_t row, const CompressedMatrixView& w,
                             float* c, size_t p) {
  using DI = hn::RebindToSigned<D>;
  const DI di;
  using W = QuadWeights<kFormat, DI>;
  constexpr size_t kVecs = PanelVectors<D>();
  constexpr size_t kQuads = compressed::kQuadsPerBlock;
  constexpr size_t kHalves = W::kHalves;
  constexpr size_t kHalfQuads = kQuads / kHalves;
  constexpr size_t kChains = QuadChains<kDot>() / kHalves;  // per sub-block
  static_assert(kHalfQuads % kChains == 0, "every chain takes the same number of quads");
  const size_t blocks = a.blocks();
  const size_t block_bytes = compressed::QuantBlockBytes(kFormat);
  const uint8_t* panel = w.panel(p);
  const size_t matrix_bytes = w.panels() * compressed::PanelBytes(w.type, w.rows);
  const int8_t* quants = a.quants + row * a.k;
  hn::Vec<D> acc[kVecs];
  for (size_t v = 0; v < kVecs; ++v) acc[v] = hn::Zero(d);
  for (size_t b = 0; b < blocks; ++b) {
    const size_t k0 = b * kQuantBlock;
    const uint8_t* block = panel + compressed::QuantBlockOffset(kFormat, k0);
    hn::Vec<DI> sum[kHalves][kChains][kVecs];
    for (size_t h = 0; h < kHalves; ++h) {
      const auto start = hn::Set(di, W::Start(a, row, b, h, SumOffset<W, kDot>()));
      for (size_t v = 0; v < kVecs; ++v) {
        sum[h][0][v] = start;
        for (size_t chain = 1; chain < kChains; ++chain) sum[h][chain][v] = hn::Zero(di);
      }
    }
#if HWY_TARGET == HWY_AVX2
    __m256i pairs[kChains][kVecs];
    for (size_t chain = 0; chain < kChains; ++chain) {
      for (size_t v = 0; v < kVecs; ++v) pairs[chain][v] = _mm256_setzero_si256();
    }
#endif
    // Two lines per quad cover a block's 9 (q4_0) to 17 (q8_0) lines.
    const size_t ahead = static_cast<size_t>(block - w.data) + kInt8PrefetchBytes;
    HWY_UNROLL(8)
    for (size_t t = 0; t < kQuads; ++t) {
      const size_t line = ahead + t * (block_bytes / kQuads);
      if (line + 64 < matrix_bytes) {
        hwy::Prefetch(w.data + line);
        hwy::Prefetch(w.data + line + 64);
      }
      hn::Vec<DI> weights[kVecs];
      W::Load(di, block, t, weights);
      const ActivationQuad<kDot, DI> quad(di, quants + k0 + t * compressed::kQuadRows);
      const size_t h = t / kHalfQuads, within = t % kHalfQuads, chain = within % kChains;
#if HWY_TARGET == HWY_AVX2
      if constexpr (kDot == Int8Dot::kBytePairs) {
        // This chain's quads of the sub-block so far, counting this one; widened
        // when they fill an int16 budget or the sub-block ends.
        const size_t taken = within / kChains + 1;
        const bool widen = taken % W::kQuadsPerWidening == 0 || within + kChains >= kHalfQuads;
        const __m256i ones = _mm256_set1_epi16(1);
        for (size_t v = 0; v < kVecs; ++v) {
          pairs[chain][v] =
              _mm256_add_epi16(pairs[chain][v], W::BytePairs(weights[v], quad.v[0]).raw);
          if (widen) {
            sum[h][chain][v] =
                hn::Add(sum[h][chain][v], hn::Vec<DI>{_mm256_madd_epi16(pairs[chain][v], ones)});
            pairs[chain][v] = _mm256_setzero_si256();
          }
        }
        continue;
      }
#endif
      if constexpr (kDot != Int8Dot::kBytePairs) {
        for (size_t v = 0; v < kVecs; ++v)
          sum[h][chain][v] = Dot4(di, sum[h][chain][v], weights[v], quad);
      }
    }
    hn::Vec<DI> totals[kHalves][kVecs];
    for (size_t h = 0; h < kHalves; ++h) {
      for (size_t v = 0; v < kVecs; ++v) {
        totals[h][v] = sum[h][0][v];
        for (size_t chain = 1; chain < kChains; ++chain)
          totals[h][v] = hn::Add(totals[h][v], sum[h][chain][v]);
      }
    }
    W::Accumulate(d, panel, block, k0, a.scales[row * blocks + b], a.sums[row * blocks + b],
                  a.half_sums + (row * blocks + b) * 2, totals, acc);
  }
  const size_t first_col = p * kCompressedPanelWidth;
  StorePanelRow<kVecs>(d, acc, std::min(kCompressedPanelWidth, w.cols - first_col), c + first_col);
}

// One row (decode): one panel at a time (Int8RowPanel). Several rows: per panel,
// tiles of four rows sharing every weight load, then one smaller tile for the rest.
template <CompressedFormat kFormat, Int8Dot kDot, class D>
HWY_INLINE void Int8Panels(D d, const Int8Rows& a, size_t first_row, size_t m,
                           const CompressedMatrixView& w, float* c, size_t ldc, size_t panel_begin,
                           size_t panel_end) {
  if (m == 1) {
    for (size_t p = panel_begin; p < panel_end; ++p)
      Int8RowPanel<kFormat, kDot>(d, a, first_row, w, c, p);
    return;
  }
  constexpr size_t kRowTile = 4;
  for (size_t p = panel_begin; p < panel_end; ++p) {
    ForPanelGroups<kRowTile>(0, m, [&](size_t r, auto rows) {
      Int8Tile<kFormat, kDot, decltype(rows)::value, 1>(d, a, first_row + r, w, c + r * ldc, ldc,
                                                        p);
    });
  }
}

// One activation row rounded to q8_0 blocks (int8_activations.h), exactly as ggml's
// quantize_row_q8_0_ref: amax, d = amax/127 and id = 1/d in scalar f32 as
// QuantizeBlockQ8_0 does, then q = roundf(x·id) lane-wise: x·id is one rounded
// multiply either way, and roundf (half away from zero) is the truncation plus one
// toward the sign where the exact fraction is at least a half.
//
// A row goes in chunks of kQuantizeChunk blocks: the blocks' maxima first, then their
// scales, lane-wise (the same IEEE divisions and f16 rounding as scalar code), then the
// quants.
inline constexpr size_t kQuantizeChunk = 16;

// F16ToF32(F32ToF16(x)) lane-wise. x86's F16C conversion rounds to nearest even (the
// rounding passed explicitly), overflows to infinity, quiets a NaN keeping its top
// payload bits and widens exactly: the bits half_float.cc spells out in integers.
// Elsewhere (Highway's portable f16 demotion truncates) lane by lane through them.
template <class D>
HWY_INLINE hn::Vec<D> RoundThroughF16(D d, hn::Vec<D> v) {
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX2 && !defined(HWY_DISABLE_F16C)
  const hn::Rebind<hwy::float16_t, D> df16;
  return hn::PromoteTo(d, hn::DemoteTo(df16, v));
#else
  HWY_ALIGN float lanes[hn::MaxLanes(d)];
  hn::Store(v, d, lanes);
  for (size_t i = 0; i < hn::Lanes(d); ++i) lanes[i] = F16ToF32(F32ToF16(lanes[i]));
  return hn::Load(d, lanes);
#endif
}

template <class D>
HWY_INLINE void QuantizeRowFor(D d, const float* x, const Int8Rows& out, size_t row) {
  using DI = hn::RebindToSigned<D>;
  const DI di;
  const hn::Rebind<int8_t, D> di8;
  const size_t lanes = hn::Lanes(d);
  const size_t blocks = out.blocks();
  int8_t* quants = out.quants + row * out.k;
  float* scales = out.scales + row * blocks;
  for (size_t chunk = 0; chunk < blocks; chunk += kQuantizeChunk) {
    const size_t count = std::min(kQuantizeChunk, blocks - chunk);
    HWY_ALIGN float maxima[kQuantizeChunk] = {};  // past `count`: zero blocks, never stored
    for (size_t j = 0; j < count; ++j) {
      const float* block = x + (chunk + j) * kQuantBlock;
      auto amax = hn::Zero(d);
      for (size_t i = 0; i < kQuantBlock; i += lanes)
        amax = hn::Max(amax, hn::Abs(hn::LoadU(d, block + i)));
      maxima[j] = hn::GetLane(hn::MaxOfLanes(d, amax));
    }
    HWY_ALIGN float inverse[kQuantizeChunk];
    HWY_ALIGN float stored_scales[kQuantizeChunk];
    for (size_t j = 0; j < kQuantizeChunk; j += lanes) {
      const auto scale = hn::Div(hn::Load(d, maxima + j), hn::Set(d, 127.0f));
      // Zero where the scale is; 1/scale elsewhere, a NaN scale's included (as `!=`).
      const auto zero = hn::Eq(scale, hn::Zero(d));
      hn::Store(hn::IfThenZeroElse(zero, hn::Div(hn::Set(d, 1.0f), scale)), d, inverse + j);
      hn::Store(RoundThroughF16(d, scale), d, stored_scales + j);
    }
    std::copy_n(stored_scales, count, scales + chunk);
    for (size_t j = 0; j < count; ++j) {
      const size_t b = chunk + j;
      const float* block = x + b * kQuantBlock;
      const auto id = hn::Set(d, inverse[j]), half = hn::Set(d, 0.5f), one = hn::Set(d, 1.0f);
      hn::Vec<decltype(di)> sum[2] = {hn::Zero(di), hn::Zero(di)};  // the block's two halves
      for (size_t i = 0; i < kQuantBlock; i += lanes) {
        const auto scaled = hn::Mul(hn::LoadU(d, block + i), id);
        const auto whole = hn::Trunc(scaled);
        const auto away = hn::Ge(hn::Abs(hn::Sub(scaled, whole)), half);
        const auto rounded =
            hn::IfThenElse(away, hn::Add(whole, hn::CopySignToAbs(one, scaled)), whole);
        const auto q = hn::ConvertTo(di, rounded);
        sum[i / (kQuantBlock / 2)] = hn::Add(sum[i / (kQuantBlock / 2)], q);
        hn::StoreU(hn::DemoteTo(di8, q), di8, quants + b * kQuantBlock + i);
      }
      const int32_t first = hn::GetLane(hn::SumOfLanes(di, sum[0]));
      const int32_t second = hn::GetLane(hn::SumOfLanes(di, sum[1]));
      out.half_sums[(row * blocks + b) * 2] = first;
      out.half_sums[(row * blocks + b) * 2 + 1] = second;
      out.sums[row * blocks + b] = first + second;
    }
  }
}

template <Int8Dot kDot, class D>
HWY_INLINE void Int8MatMulFor(D d, const Int8Rows& a, size_t first_row, size_t m,
                              const CompressedMatrixView& w, float* c, size_t ldc,
                              size_t panel_begin, size_t panel_end) {
  switch (w.type) {
    case CompressedFormat::kQ8_0:
      return Int8Panels<CompressedFormat::kQ8_0, kDot>(d, a, first_row, m, w, c, ldc, panel_begin,
                                                       panel_end);
    case CompressedFormat::kQ4_0:
      return Int8Panels<CompressedFormat::kQ4_0, kDot>(d, a, first_row, m, w, c, ldc, panel_begin,
                                                       panel_end);
    case CompressedFormat::kQ5_0:
      return Int8Panels<CompressedFormat::kQ5_0, kDot>(d, a, first_row, m, w, c, ldc, panel_begin,
                                                       panel_end);
    case CompressedFormat::kQ4_1:
      return Int8Panels<CompressedFormat::kQ4_1, kDot>(d, a, first_row, m, w, c, ldc, panel_begin,
                                                       panel_end);
    case CompressedFormat::kQ5_1:
      return Int8Panels<CompressedFormat::kQ5_1, kDot>(d, a, first_row, m, w, c, ldc, panel_begin,
                                                       panel_end);
    case CompressedFormat::kQ4_K:
      return Int8Panels<CompressedFormat::kQ4_K, kDot>(d, a, first_row, m, w, c, ldc, panel_begin,
                                                       panel_end);
    case CompressedFormat::kQ5_K:
      return Int8Panels<CompressedFormat::kQ5_K, kDot>(d, a, first_row, m, w, c, ldc, panel_begin,
                                                       panel_end);
    case CompressedFormat::kQ3_K:
      return Int8Panels<CompressedFormat::kQ3_K, kDot>(d, a, first_row, m, w, c, ldc, panel_begin,
                                                       panel_end);
    case CompressedFormat::kQ6_K:
      return Int8Panels<CompressedFormat::kQ6_K, kDot>(d, a, first_row, m, w, c, ldc, panel_begin,
                                                       panel_end);
    case CompressedFormat::kQ2_K:
      return Int8Panels<CompressedFormat::kQ2_K, kDot>(d, a, first_row, m, w, c, ldc, panel_begin,
                                                       panel_end);
    case CompressedFormat::kIQ4_NL:
      return Int8Panels<CompressedFormat::kIQ4_NL, kDot>(d, a, first_row, m, w, c, ldc,
                                                         panel_begin, panel_end);
    case CompressedFormat::kIQ4_XS:
      return Int8Panels<CompressedFormat::kIQ4_XS, kDot>(d, a, first_row, m, w, c, ldc,
                                                         panel_begin, panel_end);
    default:
      return;  // no quad layout (HasInt8Quads)
  }
}

}  // namespace kvrt::simd::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // KVRT_SIMD_INT8_MATMUL_INL_H_ toggle
