// Byte offsets inside one compressed panel (the layout compressed_matrix.h describes),
// shared by the packers, at(), the scalar twins and the Highway kernels, so that they
// cannot disagree about where an element lives.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "kvrt/simd/compressed_matrix.h"

namespace kvrt::simd::compressed {

inline constexpr size_t kWidth = kCompressedPanelWidth;          // columns per panel
inline constexpr size_t kHalfRowBytes = kWidth * sizeof(uint16_t);  // one bf16/f16 row: 64
inline constexpr size_t kScaleBytes = kWidth * sizeof(uint16_t);    // a block's scale area: 64
inline constexpr size_t kQ8RowBytes = kWidth;                       // 32 int8
inline constexpr size_t kQ4RowBytes = kWidth / 2;                   // 32 nibbles
inline constexpr size_t kQ6HighBytes = kWidth / 4;                  // 32 2-bit high parts
inline constexpr size_t kQ5HighBytes = kWidth / 8;                  // 32 1-bit high parts
inline constexpr size_t kQ2RowBytes = kWidth / 4;                   // 32 2-bit quants: 8
inline constexpr size_t kQ6RowBytes = kQ4RowBytes + kQ6HighBytes;   // 24
inline constexpr size_t kQ5RowBytes = kQ4RowBytes + kQ5HighBytes;   // 20
inline constexpr size_t kQ8BlockBytes = kScaleBytes + kQuantBlock * kQ8RowBytes;  // 1088
inline constexpr size_t kQ4BlockBytes = kScaleBytes + kQuantBlock * kQ4RowBytes;  // 576
inline constexpr size_t kQ6BlockBytes = kScaleBytes + kQuantBlock * kQ6RowBytes;  // 832
inline constexpr size_t kQ5BlockBytes = kScaleBytes + kQuantBlock * kQ5RowBytes;  // 704
inline constexpr size_t kQ2BlockBytes = kScaleBytes + kQuantBlock * kQ2RowBytes;  // 320
inline constexpr size_t kGgmlQ8BlockBytes = 2 + kQuantBlock;      // {f16 d; int8 qs[32]}
inline constexpr size_t kGgmlQ4BlockBytes = 2 + kQuantBlock / 2;  // {f16 d; uint8 qs[16]}
inline constexpr size_t kGgmlQ5_0BlockBytes = 2 + 4 + kQuantBlock / 2;  // {f16 d; u8 qh[4], qs[16]}
inline constexpr size_t kGgmlQ4_1BlockBytes = 2 + 2 + kQuantBlock / 2;  // {f16 d, m; u8 qs[16]}
inline constexpr size_t kGgmlQ5_1BlockBytes = 2 + 2 + 4 + kQuantBlock / 2;  // {f16 d, m; u8 qh[4], qs[16]}
inline constexpr size_t kGgmlQ4KBlockBytes = 144;  // {f16 d, dmin; u8 scales[12], qs[128]}
inline constexpr size_t kGgmlQ5KBlockBytes = 176;  // {f16 d, dmin; u8 scales[12], qh[32], qs[128]}
inline constexpr size_t kGgmlQ6KBlockBytes = 210;  // {u8 ql[128], qh[64]; i8 scales[16]; f16 d}
inline constexpr size_t kGgmlQ3KBlockBytes = 110;  // {u8 hmask[32], qs[64], scales[12]; f16 d}
inline constexpr size_t kGgmlIQ4XSBlockBytes = 136;  // {f16 d; u16 scales_h; u8 scales_l[4], qs[128]}
inline constexpr size_t kGgmlQ2KBlockBytes = 84;  // {u8 scales[16], qs[64]; f16 d, dmin}
// The largest ggml block of any quantized type (a packer's buffer).
inline constexpr size_t kGgmlMaxBlockBytes = kGgmlQ6KBlockBytes;  // ≥ every other
// The q4_0 quant of a padding (or all-zero) column: (8 − 8)·0 = +0. iq4_nl's too: its
// index 8 is the table's +1, and 1·(+0) = +0 (index 0, −127, would give −0); ggml's
// quantizer gives an all-zero block index 8 as well.
inline constexpr uint8_t kQ4Zero = 8;
// ggml's kvalues_iq4nl: the iq4_nl value of index q (times the block's d).
inline constexpr int8_t kIQ4NLValues[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                            1,    13,   25,  38,  53,  69,  89,  113};
// The q6_k high bits of a padding column: q = 32, (32 − 32)·0 = +0 (q = 0 would be −0).
inline constexpr uint8_t kQ6HighZero = 0xAA;
// The q5_0 high bits of a padding column (with a zero nibble): q = 16, (16 − 16)·0 = +0.
inline constexpr uint8_t kQ5_0HighZero = 0xFF;
// The q3_k nibble of a padding column: q = 4, (4 − 4)·0 = +0.
inline constexpr uint8_t kQ3Zero = 4;
// Blocks of 32 rows per K-quant super-block.
inline constexpr size_t kSuperBlockBlocks = kSuperBlock / kQuantBlock;  // 8

static_assert(kQ8BlockBytes % 64 == 0 && kQ4BlockBytes % 64 == 0 && kQ6BlockBytes % 64 == 0 &&
                  kQ5BlockBytes % 64 == 0 && kQ2BlockBytes % 64 == 0 && kHalfRowBytes % 64 == 0,
              "panels must keep 64-byte alignment");

// The quantized types: blocks of 32 rows, each a 64-byte scale area per panel and then
// the 32 rows; the K-quants group 8 blocks into a super-block behind a header.
constexpr bool IsBlockQuantized(CompressedFormat type) {
  return type != CompressedFormat::kBf16 && type != CompressedFormat::kF16;
}
// The super-block types (256 rows behind a header): the K-quants, and iq4_xs, which
// shares their layout (q6_k's header of one f16 d).
constexpr bool IsKQuant(CompressedFormat type) {
  return type == CompressedFormat::kQ4_K || type == CompressedFormat::kQ5_K ||
         type == CompressedFormat::kQ6_K || type == CompressedFormat::kQ3_K ||
         type == CompressedFormat::kIQ4_XS || type == CompressedFormat::kQ2_K;
}
// q6_k and q3_k: a signed int8 scale per sub-block of 16 rows (q3_k's ggml 6-bit sc
// stored as sc − 32), x = (d·sc)·(q − offset).
constexpr bool HasSignedScales16(CompressedFormat type) {
  return type == CompressedFormat::kQ6_K || type == CompressedFormat::kQ3_K;
}
// Rows per sub-block, i.e. per scale: 16 for q6_k, q3_k and q2_k, else 32 (a block).
constexpr size_t ScaleSubRows(CompressedFormat type) {
  return HasSignedScales16(type) || type == CompressedFormat::kQ2_K ? 16 : kQuantBlock;
}
// The quantized types whose rows are q4_0's nibbles (lane order in a whole group, and
// high bits after them): all but q8_0 (int8 rows) and q2_k (2-bit rows).
constexpr bool HasNibbleRows(CompressedFormat type) {
  return IsBlockQuantized(type) && type != CompressedFormat::kQ8_0 && type != CompressedFormat::kQ2_K;
}
// Bytes of high bits one panel's row keeps after its nibbles: q6_k 8 (2 bits a
// column), q5_k, q5_0 and q5_1 4 (1 bit a column), the others none.
constexpr size_t HighBytes(CompressedFormat type) {
  return type == CompressedFormat::kQ6_K ? kQ6HighBytes
         : type == CompressedFormat::kQ5_K || type == CompressedFormat::kQ5_0 ||
                 type == CompressedFormat::kQ5_1
             ? kQ5HighBytes
             : 0;
}
// Bytes of one panel's row, per type: q8_0 32 int8; q2_k 8 (2-bit quants); q4_0, iq4_nl,
// q5_0, q4_1, q5_1, q4_k, q5_k and q6_k 16 bytes of nibbles and then their high bits
// (q5_0, q5_1 and q5_k 4 bytes, q6_k 8).
constexpr size_t QuantRowBytes(CompressedFormat type) {
  return type == CompressedFormat::kQ8_0   ? kQ8RowBytes
         : type == CompressedFormat::kQ2_K ? kQ2RowBytes
                                           : kQ4RowBytes + HighBytes(type);
}
// q4_1 and q5_1: an f16 d and an f16 minimum m per block of 32 rows, x = q·d + m.
constexpr bool HasBlockMin(CompressedFormat type) {
  return type == CompressedFormat::kQ4_1 || type == CompressedFormat::kQ5_1;
}
// One panel's scale area of a block: 64 bytes, or for q4_1 and q5_1 128 (32 f16 d, then
// 32 f16 m), so that a kernel finds both of a block's numbers in one place.
constexpr size_t ScaleAreaBytes(CompressedFormat type) {
  return HasBlockMin(type) ? 2 * kScaleBytes : kScaleBytes;
}
// One panel's block of 32 rows: its scale area and its rows.
constexpr size_t QuantBlockBytes(CompressedFormat type) {
  return ScaleAreaBytes(type) + kQuantBlock * QuantRowBytes(type);
}
static_assert(QuantBlockBytes(CompressedFormat::kQ4_1) == 640 &&
                  QuantBlockBytes(CompressedFormat::kQ5_1) == 768 &&
                  QuantBlockBytes(CompressedFormat::kQ4_1) % 64 == 0 &&
                  QuantBlockBytes(CompressedFormat::kQ5_1) % 64 == 0,
              "q4_1/q5_1 blocks are ggml's 20 and 24 bytes per 32 weights, 64-byte aligned");
// q4_k and q5_k: a scale and a minimum per sub-block of 32 rows (ggml's
// get_scale_min_k4 pairs, a byte each), q2_k per sub-block of 16 (4 bits each in one
// byte, sc | m << 4): x ≈ (d·sc)·q − dmin·m.
constexpr bool HasMin(CompressedFormat type) {
  return type == CompressedFormat::kQ4_K || type == CompressedFormat::kQ5_K ||
         type == CompressedFormat::kQ2_K;
}
// One panel's super-block header: q2_k, q4_k and q5_k 32 f16 d and 32 f16 dmin, q6_k and
// q3_k 32 f16 d, else none.
constexpr size_t HeaderBytes(CompressedFormat type) {
  return HasMin(type)                                                           ? 2 * kScaleBytes
         : HasSignedScales16(type) || type == CompressedFormat::kIQ4_XS ? kScaleBytes
                                                                        : 0;
}
// Rows per super-block: 256 for the K-quants; q8_0/q4_0/q5_0/q4_1/q5_1 blocks are their own.
constexpr size_t SuperRows(CompressedFormat type) { return IsKQuant(type) ? kSuperBlock : kQuantBlock; }
// One panel's super-block: header and blocks (q4_k 4736 bytes, q5_k 5760, q6_k 6720,
// q3_k 4672, q2_k 2688).
constexpr size_t SuperBlockBytes(CompressedFormat type) {
  return HeaderBytes(type) + SuperRows(type) / kQuantBlock * QuantBlockBytes(type);
}
static_assert(SuperBlockBytes(CompressedFormat::kIQ4_XS) == 4672 &&
                  SuperBlockBytes(CompressedFormat::kIQ4_XS) % 64 == 0,
              "iq4_xs super-blocks keep 64-byte alignment");
static_assert(SuperBlockBytes(CompressedFormat::kQ4_K) == 4736 &&
                  SuperBlockBytes(CompressedFormat::kQ5_K) == 5760 &&
                  SuperBlockBytes(CompressedFormat::kQ6_K) == 6720 &&
                  SuperBlockBytes(CompressedFormat::kQ3_K) == 4672 &&
                  SuperBlockBytes(CompressedFormat::kQ2_K) == 2688 &&
                  SuperBlockBytes(CompressedFormat::kQ2_K) % 64 == 0 &&
                  SuperBlockBytes(CompressedFormat::kQ3_K) % 64 == 0 &&
                  SuperBlockBytes(CompressedFormat::kQ4_K) % 64 == 0 &&
                  SuperBlockBytes(CompressedFormat::kQ5_K) % 64 == 0 &&
                  SuperBlockBytes(CompressedFormat::kQ6_K) % 64 == 0,
              "K-quant super-blocks keep 64-byte alignment");

// Bytes of one panel of K rows. Overflow is the caller's (CompressedMatrixBytes) check.
inline size_t PanelBytes(CompressedFormat type, size_t rows) {
  if (!IsBlockQuantized(type)) return rows * kHalfRowBytes;
  return rows / SuperRows(type) * SuperBlockBytes(type);
}

// uint16 slot of column j (< 32) in a bf16 row: the halves of the panel interleaved.
inline constexpr size_t Bf16Slot(size_t j) { return j < kWidth / 2 ? 2 * j : 2 * (j - kWidth / 2) + 1; }

inline uint16_t LoadU16(const uint8_t* p) {
  uint16_t v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}
inline void StoreU16(uint8_t* p, uint16_t v) { std::memcpy(p, &v, sizeof(v)); }

// The row layout interleaves the rows of kGroupPanels consecutive panels (the last
// group of a matrix holds the 1..3 panels left over): a group of W panels stores, for
// bf16/f16, row k of its panels side by side (W × 64 bytes), and for the quantized
// types, block by block, the W panels' scale areas (W × 64 bytes) and then each of the
// 32 rows of the W panels side by side (W × 32, 16, 20 or 24 bytes), a K-quant super-block
// starting with the W panels' headers. A group occupies W whole panels' bytes, so
// panel sizes and offsets of groups are those of panels stored apart. Why:
// the matrix–vector kernels stream four panels side by side. Four panels stored apart
// are four streams tens of KB apart, which read from DRAM well below one sequential
// stream, with software prefetch or not; interleaving the four panels' rows makes one
// stream, which the prefetchers follow.
//
// The nibbles of a q4_0, iq4_nl, q5_0, q4_k, q5_k or q6_k row of a whole group (W = 4: 64
// bytes; a q5_0, q5_k or q6_k row's four 4- or 8-byte high-bit parts follow them) are in lane order:
// byte 4j + i holds column j (low nibble) and column j + 16 (high nibble) of the group's panel i, j < 16,
// so that 32-bit lane j of the row holds column j of all four panels, nibble 2i + h
// being column 16h + j of panel i. One 64-byte load then feeds all eight vectors of
// the row on AVX-512 (a shift and a VPERMPS each, instead of a widening load, a shift
// and two VPERMPS per panel), which makes the AVX-512 q4_0 matvec faster; the AVX2
// target, which decodes two panels per pass, pays a byte shuffle per panel for it and
// is a little slower (Q4Quants::DecodeLanes; figures in
// docs/performance/design_measurements.md). The nibbles of a smaller group's row keep
// each panel's 16 bytes apart, side by side: byte 16i + j holds its columns j and j + 16.
inline constexpr size_t kGroupPanels = 4;

// Where the rows of one panel of a row-layout matrix are: byte offsets from the start
// of its group. `Byte` is const uint8_t for readers, uint8_t for the packers.
template <class Byte>
struct PanelRowsOf {
  Byte* group = nullptr;  // first byte of the panel's group
  size_t width = 1;       // panels in the group (1..kGroupPanels)
  size_t index = 0;       // the panel's place in its group

  // bf16/f16: row k (64 bytes).
  Byte* HalfRow(size_t k) const { return group + (k * width + index) * kHalfRowBytes; }
  // The quantized types: the group's super-block holding row k (for q8_0/q4_0/q5_0 its
  // block), this panel's header of it (K-quants), and the group's block of 32 rows
  // holding row k (after the super-block's W headers).
  Byte* Super(CompressedFormat type, size_t k) const {
    return group + k / SuperRows(type) * width * SuperBlockBytes(type);
  }
  Byte* Header(CompressedFormat type, size_t k) const {
    return Super(type, k) + index * HeaderBytes(type);
  }
  Byte* Block(CompressedFormat type, size_t k) const {
    return Super(type, k) + width * HeaderBytes(type) +
           k % SuperRows(type) / kQuantBlock * width * QuantBlockBytes(type);
  }
  // This panel's scale area of the block holding row k: q8_0/q4_0/q5_0 32 f16
  // scales; q4_1/q5_1 32 f16 d, then 32 f16 m (128 bytes); q4_k and q5_k 32 sc bytes,
  // then 32 m bytes; q6_k and q3_k 32 int8 sc of the block's first 16 rows, then 32 of
  // its last 16; q2_k 32 bytes sc | m << 4 of the block's first 16 rows, then 32 of its
  // last 16.
  Byte* Scales(CompressedFormat type, size_t k) const {
    return Block(type, k) + index * ScaleAreaBytes(type);
  }
  // Row k of the whole group (width × the type's row bytes).
  Byte* GroupRow(CompressedFormat type, size_t k) const {
    return Block(type, k) + width * ScaleAreaBytes(type) + k % kQuantBlock * width * QuantRowBytes(type);
  }
  // q8_0: row k's 32 quants.
  Byte* QuantRow(CompressedFormat type, size_t k) const {
    return GroupRow(type, k) + index * QuantRowBytes(type);
  }
  // q4_0, q5_0, q4_k, q5_k, q6_k, q3_k: whether this panel's nibbles are in lane order
  // (a whole group), and the byte of row k that holds column j (< 32) in its low
  // (j < 16) or high nibble. The nibbles of a group's row come first (q5_0's, q5_k's
  // and q6_k's high bits follow them).
  bool LaneOrder() const { return width == kGroupPanels; }
  Byte* NibbleByte(CompressedFormat type, size_t k, size_t j) const {
    const size_t column = j % (kWidth / 2);
    return GroupRow(type, k) +
           (LaneOrder() ? column * kGroupPanels + index : index * kQ4RowBytes + column);
  }
  // q2_k: this panel's 8 bytes of row k (a little-endian uint64, column c at bits 2c).
  Byte* Q2Row(CompressedFormat type, size_t k) const {
    return GroupRow(type, k) + index * kQ2RowBytes;
  }
  // q5_0, q5_k, q6_k: this panel's HighBytes(type) bytes of row k's high bits (after the
  // group's nibbles): little-endian uint32s, q5_0/q5_k one with column c at bit c, q6_k two
  // (columns 0..15, then 16..31) with column c of a word at bits 2c..2c+1.
  Byte* HighBits(CompressedFormat type, size_t k) const {
    return GroupRow(type, k) + width * kQ4RowBytes + index * HighBytes(type);
  }
};
using PanelRows = PanelRowsOf<const uint8_t>;

// Panel p (< panels) of a row-layout matrix of `rows` rows stored at `data`.
template <class Byte>
inline PanelRowsOf<Byte> RowsOfPanel(Byte* data, CompressedFormat type, size_t rows, size_t panels,
                                     size_t p) {
  const size_t first = p / kGroupPanels * kGroupPanels;
  PanelRowsOf<Byte> at;
  at.group = data + first * PanelBytes(type, rows);
  at.width = panels - first < kGroupPanels ? panels - first : kGroupPanels;
  at.index = p - first;
  return at;
}
inline PanelRows RowsOfPanel(const CompressedMatrixView& w, size_t p) {
  return RowsOfPanel(w.data, w.type, w.rows, w.panels(), p);
}

// Element (k, j) of a row-layout panel (j < 32): the value at() returns, and the only
// code that reads a value back out of the row layout.
inline float DequantizeElement(CompressedFormat type, const PanelRows& panel, size_t k, size_t j) {
  switch (type) {
    case CompressedFormat::kBf16:
      return Bf16ToF32(LoadU16(panel.HalfRow(k) + 2 * Bf16Slot(j)));
    case CompressedFormat::kF16:
      return F16ToF32(LoadU16(panel.HalfRow(k) + 2 * j));
    case CompressedFormat::kQ8_0: {
      const auto q = static_cast<int8_t>(panel.QuantRow(type, k)[j]);
      return static_cast<float>(q) * F16ToF32(LoadU16(panel.Scales(type, k) + 2 * j));
    }
    case CompressedFormat::kQ4_0: {
      const uint8_t byte = *panel.NibbleByte(type, k, j);
      const int q = j < kWidth / 2 ? byte & 0xF : byte >> 4;
      return static_cast<float>(q - 8) * F16ToF32(LoadU16(panel.Scales(type, k) + 2 * j));
    }
    case CompressedFormat::kQ5_0: {
      // ggml's dequantize_row_q5_0: float(q − 16)·d, q the nibble plus 16 for its high bit.
      const uint8_t byte = *panel.NibbleByte(type, k, j);
      int q = j < kWidth / 2 ? byte & 0xF : byte >> 4;
      q += ((panel.HighBits(type, k)[j / 8] >> (j % 8)) & 1) << 4;
      return static_cast<float>(q - 16) * F16ToF32(LoadU16(panel.Scales(type, k) + 2 * j));
    }
    case CompressedFormat::kQ4_1:
    case CompressedFormat::kQ5_1: {
      // ggml's dequantize_row_q4_1 / _q5_1: q·d + m (q·d exact, one rounding), q5_1's q
      // the nibble plus 16 for its high bit.
      const uint8_t byte = *panel.NibbleByte(type, k, j);
      int q = j < kWidth / 2 ? byte & 0xF : byte >> 4;
      if (type == CompressedFormat::kQ5_1) q += ((panel.HighBits(type, k)[j / 8] >> (j % 8)) & 1) << 4;
      const uint8_t* scales = panel.Scales(type, k);
      const float d = F16ToF32(LoadU16(scales + 2 * j));
      const float m = F16ToF32(LoadU16(scales + kScaleBytes + 2 * j));
      return static_cast<float>(q) * d + m;
    }
    case CompressedFormat::kIQ4_NL: {
      // ggml's dequantize_row_iq4_nl: d·kvalues_iq4nl[q].
      const uint8_t byte = *panel.NibbleByte(type, k, j);
      const int q = j < kWidth / 2 ? byte & 0xF : byte >> 4;
      return F16ToF32(LoadU16(panel.Scales(type, k) + 2 * j)) * static_cast<float>(kIQ4NLValues[q]);
    }
    case CompressedFormat::kIQ4_XS: {
      // ggml's dequantize_row_iq4_xs: dl = d·(ls − 32), then dl·kvalues_iq4nl[q].
      const uint8_t byte = *panel.NibbleByte(type, k, j);
      const int q = j < kWidth / 2 ? byte & 0xF : byte >> 4;
      const auto sc = static_cast<int8_t>(panel.Scales(type, k)[j]);
      const float dl = F16ToF32(LoadU16(panel.Header(type, k) + 2 * j)) * static_cast<float>(sc);
      return dl * static_cast<float>(kIQ4NLValues[q]);
    }
    case CompressedFormat::kQ4_K:
    case CompressedFormat::kQ5_K: {
      // ggml's dequantize_row_q4_K / _q5_K: d1·q − m1 with d1 = d·sc and m1 = dmin·m,
      // q5_k's q the nibble plus 16 for its high bit.
      const uint8_t byte = *panel.NibbleByte(type, k, j);
      int q = j < kWidth / 2 ? byte & 0xF : byte >> 4;
      if (type == CompressedFormat::kQ5_K) {
        q += ((panel.HighBits(type, k)[j / 8] >> (j % 8)) & 1) << 4;
      }
      const uint8_t* scales = panel.Scales(type, k);
      const uint8_t* header = panel.Header(type, k);
      const float d = F16ToF32(LoadU16(header + 2 * j)) * static_cast<float>(scales[j]);
      const float min = F16ToF32(LoadU16(header + kScaleBytes + 2 * j)) *
                        static_cast<float>(scales[kWidth + j]);
      return d * static_cast<float>(q) - min;
    }
    case CompressedFormat::kQ2_K: {
      // ggml's dequantize_row_q2_K: dl·q − ml with dl = d·(sc & 15) and ml = dmin·(sc >> 4)
      // (exact products; the subtraction rounds), q the 2-bit quant.
      uint64_t bits;
      std::memcpy(&bits, panel.Q2Row(type, k), sizeof(bits));
      const auto q = static_cast<int>((bits >> (2 * j)) & 3);
      const uint8_t scale_min = panel.Scales(type, k)[k % kQuantBlock / 16 * kWidth + j];
      const uint8_t* header = panel.Header(type, k);
      const float d = F16ToF32(LoadU16(header + 2 * j)) * static_cast<float>(scale_min & 0xF);
      const float min = F16ToF32(LoadU16(header + kScaleBytes + 2 * j)) * static_cast<float>(scale_min >> 4);
      return d * static_cast<float>(q) - min;
    }
    case CompressedFormat::kQ6_K: {
      // ggml's dequantize_row_q6_K: d·sc·(q − 32).
      const uint8_t byte = *panel.NibbleByte(type, k, j);
      const int low = j < kWidth / 2 ? byte & 0xF : byte >> 4;
      const uint8_t high_byte = panel.HighBits(type, k)[j / 4];
      const int q = low | ((high_byte >> (2 * (j % 4))) & 3) << 4;
      const auto sc = static_cast<int8_t>(panel.Scales(type, k)[k % kQuantBlock / 16 * kWidth + j]);
      const float d = F16ToF32(LoadU16(panel.Header(type, k) + 2 * j)) * static_cast<float>(sc);
      return d * static_cast<float>(q - 32);
    }
    case CompressedFormat::kQ3_K: {
      // ggml's dequantize_row_q3_K: d·(sc − 32)·(q − 4), q = low 2 bits | high bit << 2
      // kept whole in the nibble (bit 3 zero); sc − 32 stored as int8. Exact.
      const uint8_t byte = *panel.NibbleByte(type, k, j);
      const int q = j < kWidth / 2 ? byte & 0xF : byte >> 4;
      const auto sc = static_cast<int8_t>(panel.Scales(type, k)[k % kQuantBlock / 16 * kWidth + j]);
      const float d = F16ToF32(LoadU16(panel.Header(type, k) + 2 * j)) * static_cast<float>(sc);
      return d * static_cast<float>(q - 4);
    }
  }
  return 0.0f;
}

// Σ of the `rows` activations x[0..rows) of a (sub-)block with a minimum (q4_k, q5_k,
// q4_1, q5_1: 32; q2_k: 16), in the fixed tree the kernels use (compressed_matrix.h):
// t_j = x_j + x_{j+rows/2}, then halves added down to one.
inline float SubBlockSum(const float* x, size_t rows = kQuantBlock) {
  float t[kQuantBlock / 2];
  for (size_t j = 0; j < rows / 2; ++j) t[j] = x[j] + x[j + rows / 2];
  for (size_t half = rows / 4; half >= 1; half /= 2) {
    for (size_t j = 0; j < half; ++j) t[j] = t[j] + t[j + half];
  }
  return t[0];
}

// Row k of a row-layout panel dequantized into out[0..32).
inline void DequantizeRow(CompressedFormat type, const PanelRows& panel, size_t k, float* out) {
  for (size_t j = 0; j < kWidth; ++j) out[j] = DequantizeElement(type, panel, k, j);
}

// The bf16-activation layout (CompressedLayout::kBf16Pairs, bf16_activations.h): each
// panel stored apart, pair row i (rows 2i and 2i + 1) of 128 bytes holding column j's
// two bf16 in the 32-bit lane j, row 2i in its low half.
inline constexpr size_t kBf16PairRowBytes = 2 * kHalfRowBytes;
inline size_t Bf16PairOffset(size_t k, size_t j) {
  return k / 2 * kBf16PairRowBytes + j * 2 * sizeof(uint16_t) + k % 2 * sizeof(uint16_t);
}

// The int8-activation layout (CompressedLayout::kInt8Quads, int8_activations.h) stores
// each panel apart (not interleaved with its group) and keeps the row layout's blocks,
// their scale areas and a K-quant super-block's header where they were, so a panel has
// the row layout's size; only the quants of a block are reordered into quads of 4
// rows, one 32-bit lane holding four consecutive rows of one column:
//   q8_0:             8 quads of 32 columns × 4 bytes (128), the unsigned u = q + 128.
//   q4_0, q4_1, q4_k, q3_k, iq4_nl, iq4_xs: 8 quads of 16 columns × 4 bytes (64), byte
//                     4c + j holding row j of column c in its low nibble and of column c + 16
//                     in its high one (for iq4_nl and iq4_xs the index into
//                     kvalues_iq4nl, which the kernels look up as u = t + 128).
//   q5_0, q5_1, q5_k, q6_k: those quads, with the high bits in planes of 64 bytes after
//                     every kPlaneQuads(type) quads (q5_0, q5_1, q5_k 4: [4 quads][plane], twice;
//                     q6_k 2: [2 quads][plane], four times). Byte 4c + j of a plane
//                     holds, for the plane's quad i and h = HighBitsPerQuant (1 or 2),
//                     the high bits of row j of column c at bits h·i.. and of column
//                     c + 16 at bits 4 + h·i..: where the nibble byte has the same
//                     index, so that a shift and a mask per 32-bit lane move them to
//                     bit 4 (int8_matmul-inl.h, QuadWeights).
//   q2_k:             per half block of 16 rows (one sub-block, its four quads) 128
//                     bytes: byte 4c + j holds at bits 2i..2i+1 the quant of row 4i + j
//                     of column c (c < 32), so that quad i's operand is one shift by
//                     2i and a mask of 0x03030303 per 32-bit lane.
// The quads follow the block's scale area (q4_1's and q5_1's 128 bytes of d and m).
// Block sizes stay 1088, 576 (q4_0, q4_k, q3_k, iq4_nl, iq4_xs), 640 (q4_1), 704 (q5_0,
// q5_k), 768 (q5_1), 832 (q6_k) and 320 (q2_k) bytes.
inline constexpr size_t kQuadRows = 4;
inline constexpr size_t kQuadsPerBlock = kQuantBlock / kQuadRows;  // 8
inline constexpr size_t kQ8QuadBytes = kWidth * kQuadRows;      // 128
inline constexpr size_t kQ4QuadBytes = kWidth / 2 * kQuadRows;  // 64
inline constexpr size_t kPlaneBytes = kQ4QuadBytes;             // one high-bit plane
inline constexpr uint8_t kQ8Offset = 128;  // stored unsigned q8_0 quant u = q + 128
inline constexpr size_t kQ2GroupQuads = 4;  // q2_k quads sharing one byte per (row, column)
static_assert(kScaleBytes + kQuadsPerBlock * kQ8QuadBytes == kQ8BlockBytes &&
                  kScaleBytes + kQuadsPerBlock * kQ4QuadBytes == kQ4BlockBytes &&
                  kScaleBytes + kQuadsPerBlock / kQ2GroupQuads * kQ8QuadBytes == kQ2BlockBytes,
              "the quad layout keeps the row layout's block sizes");

// The types that have a quad layout.
constexpr bool HasQuadLayout(CompressedFormat type) {
  return type == CompressedFormat::kQ8_0 || type == CompressedFormat::kQ4_0 ||
         type == CompressedFormat::kQ5_0 || type == CompressedFormat::kQ4_K ||
         type == CompressedFormat::kQ5_K || type == CompressedFormat::kQ6_K ||
         type == CompressedFormat::kQ3_K || type == CompressedFormat::kIQ4_NL ||
         type == CompressedFormat::kIQ4_XS || type == CompressedFormat::kQ2_K ||
         HasBlockMin(type);
}
// iq4_nl and iq4_xs: the stored nibble indexes kvalues_iq4nl (t in −127..113).
constexpr bool HasValueTable(CompressedFormat type) {
  return type == CompressedFormat::kIQ4_NL || type == CompressedFormat::kIQ4_XS;
}
// The unsigned quant u the int8 kernels multiply for an iq4 index: t + 128 (1..241).
inline constexpr int kIQ4Bias = 128;
// High bits per quant kept in planes: q5_0, q5_1 and q5_k 1, q6_k 2, else 0.
constexpr size_t HighBitsPerQuant(CompressedFormat type) {
  return type == CompressedFormat::kQ6_K ? 2 : HighBytes(type) == kQ5HighBytes ? 1 : 0;
}
// Quads sharing one high-bit plane (4 / h; 0 without planes).
constexpr size_t PlaneQuads(CompressedFormat type) {
  return HighBitsPerQuant(type) == 0 ? 0 : 4 / HighBitsPerQuant(type);
}
static_assert(kScaleBytes + kQuadsPerBlock * kQ4QuadBytes +
                      kQuadsPerBlock / PlaneQuads(CompressedFormat::kQ5_K) * kPlaneBytes ==
                  kQ5BlockBytes &&
                  kScaleBytes + kQuadsPerBlock * kQ4QuadBytes +
                          kQuadsPerBlock / PlaneQuads(CompressedFormat::kQ6_K) * kPlaneBytes ==
                      kQ6BlockBytes,
              "the high-bit planes fill the row layout's blocks exactly");

// Offset, within one panel stored apart, of the block holding row k (its 64-byte scale
// area; a K-quant super-block's header precedes its first block).
inline size_t QuantBlockOffset(CompressedFormat type, size_t k) {
  return k / SuperRows(type) * SuperBlockBytes(type) + HeaderBytes(type) +
         k % SuperRows(type) / kQuantBlock * QuantBlockBytes(type);
}
// Offset of the super-block header holding row k (K-quants).
inline size_t QuadHeaderOffset(CompressedFormat type, size_t k) {
  return k / SuperRows(type) * SuperBlockBytes(type);
}
// Offsets, from its block's start (its scale area: 128 bytes for q4_1 and q5_1, else
// 64), of quad t's quants (q2_k: of the 128 bytes its group of four shares) and of the
// high-bit plane it shares (q5_0, q5_1, q5_k, q6_k).
inline size_t QuadOffset(CompressedFormat type, size_t t) {
  const size_t quants = ScaleAreaBytes(type);
  if (type == CompressedFormat::kQ8_0) return quants + t * kQ8QuadBytes;
  if (type == CompressedFormat::kQ2_K) return quants + t / kQ2GroupQuads * kQ8QuadBytes;
  const size_t group = PlaneQuads(type);
  if (group == 0) return quants + t * kQ4QuadBytes;
  return quants + t / group * (group * kQ4QuadBytes + kPlaneBytes) + t % group * kQ4QuadBytes;
}
inline size_t PlaneOffset(CompressedFormat type, size_t t) {
  const size_t group = PlaneQuads(type);
  return ScaleAreaBytes(type) + t / group * (group * kQ4QuadBytes + kPlaneBytes) +
         group * kQ4QuadBytes;
}

// Byte of row k, column j (< 32) in a quad-layout panel; a column j ≥ 16 of the
// nibble types is the high nibble of the byte of column j − 16 (q2_k's quant sits at
// bit Q2QuadShift(k) of its byte). The plane byte of (k, j) has the same place in its
// plane.
inline size_t QuadByteOffset(CompressedFormat type, size_t k, size_t j) {
  const size_t t = k % kQuantBlock / kQuadRows, within = k % kQuadRows;
  const size_t column =
      type == CompressedFormat::kQ8_0 || type == CompressedFormat::kQ2_K ? j : j % (kWidth / 2);
  return QuantBlockOffset(type, k) + QuadOffset(type, t) + column * kQuadRows + within;
}
inline size_t QuadPlaneByteOffset(CompressedFormat type, size_t k, size_t j) {
  const size_t t = k % kQuantBlock / kQuadRows, within = k % kQuadRows;
  return QuantBlockOffset(type, k) + PlaneOffset(type, t) + j % (kWidth / 2) * kQuadRows + within;
}
// Bit of q2_k's quant of row k in its byte: 2i for the quad i of its group of four.
inline size_t Q2QuadShift(size_t k) { return 2 * (k % kQuantBlock / kQuadRows % kQ2GroupQuads); }
// Bit of (k, j)'s high bits in its plane byte.
inline size_t QuadPlaneShift(CompressedFormat type, size_t k, size_t j) {
  const size_t i = k % kQuantBlock / kQuadRows % PlaneQuads(type);
  return (j < kWidth / 2 ? 0 : 4) + HighBitsPerQuant(type) * i;
}

// The unsigned quant u of (k, j) in a quad-layout panel the kernels multiply: q8_0
// q + 128, q4_0 q + 8, q5_0 q + 16, q4_1 and q5_1 their q (0..15, 0..31), the K-quants their q (q3_k 0..7, q4_k 0..15, q5_k
// 0..31, q6_k 0..63, q2_k 0..3), iq4_nl and iq4_xs the table's value of the stored
// index + 128.
inline int QuadQuant(CompressedFormat type, const uint8_t* panel, size_t k, size_t j) {
  const uint8_t byte = panel[QuadByteOffset(type, k, j)];
  if (type == CompressedFormat::kQ8_0) return byte;
  if (type == CompressedFormat::kQ2_K) return byte >> Q2QuadShift(k) & 3;
  int q = j < kWidth / 2 ? byte & 0xF : byte >> 4;
  if (HasValueTable(type)) return kIQ4NLValues[q] + kIQ4Bias;
  if (const size_t h = HighBitsPerQuant(type); h != 0) {
    const uint8_t plane = panel[QuadPlaneByteOffset(type, k, j)];
    q |= (plane >> QuadPlaneShift(type, k, j) & ((1 << h) - 1)) << 4;
  }
  return q;
}

// Element (k, j) of a quad-layout panel: the same value as DequantizeElement of the
// row layout it was packed from (the same formulas on the same numbers).
inline float DequantizeQuadElement(CompressedFormat type, const uint8_t* panel, size_t k, size_t j) {
  const int u = QuadQuant(type, panel, k, j);
  const uint8_t* scales = panel + QuantBlockOffset(type, k);
  switch (type) {
    case CompressedFormat::kQ8_0:
    case CompressedFormat::kQ4_0:
    case CompressedFormat::kQ5_0: {
      const int offset = type == CompressedFormat::kQ8_0 ? kQ8Offset : type == CompressedFormat::kQ4_0 ? kQ4Zero : 16;
      return static_cast<float>(u - offset) * F16ToF32(LoadU16(scales + 2 * j));
    }
    case CompressedFormat::kQ4_1:
    case CompressedFormat::kQ5_1: {
      const float d = F16ToF32(LoadU16(scales + 2 * j));
      const float m = F16ToF32(LoadU16(scales + kScaleBytes + 2 * j));
      return static_cast<float>(u) * d + m;
    }
    case CompressedFormat::kQ4_K:
    case CompressedFormat::kQ5_K: {
      const uint8_t* header = panel + QuadHeaderOffset(type, k);
      const float d = F16ToF32(LoadU16(header + 2 * j)) * static_cast<float>(scales[j]);
      const float min = F16ToF32(LoadU16(header + kScaleBytes + 2 * j)) *
                        static_cast<float>(scales[kWidth + j]);
      return d * static_cast<float>(u) - min;
    }
    case CompressedFormat::kQ2_K: {
      // DequantizeElement's dl·q − ml, its sc | m << 4 byte of the sub-block of row k.
      const uint8_t scale_min = scales[k % kQuantBlock / 16 * kWidth + j];
      const uint8_t* header = panel + QuadHeaderOffset(type, k);
      const float d = F16ToF32(LoadU16(header + 2 * j)) * static_cast<float>(scale_min & 0xF);
      const float min =
          F16ToF32(LoadU16(header + kScaleBytes + 2 * j)) * static_cast<float>(scale_min >> 4);
      return d * static_cast<float>(u) - min;
    }
    case CompressedFormat::kQ6_K:
    case CompressedFormat::kQ3_K: {
      const auto sc = static_cast<int8_t>(scales[k % kQuantBlock / 16 * kWidth + j]);
      const uint8_t* header = panel + QuadHeaderOffset(type, k);
      const float d = F16ToF32(LoadU16(header + 2 * j)) * static_cast<float>(sc);
      return d * static_cast<float>(u - (type == CompressedFormat::kQ6_K ? 32 : 4));
    }
    case CompressedFormat::kIQ4_NL:
      return F16ToF32(LoadU16(scales + 2 * j)) * static_cast<float>(u - kIQ4Bias);
    case CompressedFormat::kIQ4_XS: {
      const auto sc = static_cast<int8_t>(scales[j]);
      const uint8_t* header = panel + QuadHeaderOffset(type, k);
      const float dl = F16ToF32(LoadU16(header + 2 * j)) * static_cast<float>(sc);
      return dl * static_cast<float>(u - kIQ4Bias);
    }
    default:
      return 0.0f;
  }
}

}  // namespace kvrt::simd::compressed
