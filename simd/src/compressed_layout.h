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
inline constexpr size_t kScaleBytes = kWidth * sizeof(uint16_t);    // 32 f16 scales: 64
inline constexpr size_t kQ8RowBytes = kWidth;                       // 32 int8
inline constexpr size_t kQ4RowBytes = kWidth / 2;                   // 32 nibbles
inline constexpr size_t kQ8BlockBytes = kScaleBytes + kQuantBlock * kQ8RowBytes;  // 1088
inline constexpr size_t kQ4BlockBytes = kScaleBytes + kQuantBlock * kQ4RowBytes;  // 576
inline constexpr size_t kGgmlQ8BlockBytes = 2 + kQuantBlock;      // {f16 d; int8 qs[32]}
inline constexpr size_t kGgmlQ4BlockBytes = 2 + kQuantBlock / 2;  // {f16 d; uint8 qs[16]}
// The q4_0 quant of a padding (or all-zero) column: (8 − 8)·0 = +0.
inline constexpr uint8_t kQ4Zero = 8;

static_assert(kQ8BlockBytes % 64 == 0 && kQ4BlockBytes % 64 == 0 && kHalfRowBytes % 64 == 0,
              "panels must keep 64-byte alignment");

// Bytes of one panel of K rows. Overflow is the caller's (CompressedMatrixBytes) check.
inline size_t PanelBytes(CompressedFormat type, size_t rows) {
  switch (type) {
    case CompressedFormat::kBf16:
    case CompressedFormat::kF16:
      return rows * kHalfRowBytes;
    case CompressedFormat::kQ8_0:
      return rows / kQuantBlock * kQ8BlockBytes;
    case CompressedFormat::kQ4_0:
      return rows / kQuantBlock * kQ4BlockBytes;
  }
  return 0;
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
// bf16/f16, row k of its panels side by side (W × 64 bytes), and for q8_0/q4_0, block
// by block, the W panels' scale rows (W × 64 bytes) and then each of the 32 rows of the
// W panels side by side (W × 32 or W × 16 bytes). A group occupies W whole panels'
// bytes, so panel sizes and offsets of groups are those of panels stored apart. Why:
// the matrix–vector kernels stream four panels side by side. Four panels stored apart
// are four streams tens of KB apart, which read from DRAM well below one sequential
// stream, with software prefetch or not; interleaving the four panels' rows makes one
// stream, which the prefetchers follow.
//
// A q4_0 row of a whole group (W = 4: 64 bytes) is in lane order: byte 4j + i holds
// column j (low nibble) and column j + 16 (high nibble) of the group's panel i, j < 16,
// so that 32-bit lane j of the row holds column j of all four panels, nibble 2i + h
// being column 16h + j of panel i. One 64-byte load then feeds all eight vectors of
// the row on AVX-512 (a shift and a VPERMPS each, instead of a widening load, a shift
// and two VPERMPS per panel), which makes the AVX-512 q4_0 matvec faster; the AVX2
// target, which decodes two panels per pass, pays a byte shuffle per panel for it and
// is a little slower (Q4Quants::DecodeLanes; figures in
// docs/performance/design_measurements.md). The row of a smaller group keeps each
// panel's 16 bytes apart, side by side: byte 16i + j holds its columns j and j + 16.
inline constexpr size_t kGroupPanels = 4;

inline size_t QuantRowBytes(CompressedFormat type) {
  return type == CompressedFormat::kQ8_0 ? kQ8RowBytes : kQ4RowBytes;
}
inline size_t QuantBlockBytes(CompressedFormat type) {
  return type == CompressedFormat::kQ8_0 ? kQ8BlockBytes : kQ4BlockBytes;
}

// Where the rows of one panel of a row-layout matrix are: byte offsets from the start
// of its group. `Byte` is const uint8_t for readers, uint8_t for the packers.
template <class Byte>
struct PanelRowsOf {
  Byte* group = nullptr;  // first byte of the panel's group
  size_t width = 1;       // panels in the group (1..kGroupPanels)
  size_t index = 0;       // the panel's place in its group

  // bf16/f16: row k (64 bytes).
  Byte* HalfRow(size_t k) const { return group + (k * width + index) * kHalfRowBytes; }
  // q8_0/q4_0: the 32 f16 column scales of the block holding row k, and row k's quants.
  Byte* Scales(CompressedFormat type, size_t k) const {
    return group + k / kQuantBlock * width * QuantBlockBytes(type) + index * kScaleBytes;
  }
  // q8_0/q4_0: row k of the whole group (width × the type's row bytes).
  Byte* GroupRow(CompressedFormat type, size_t k) const {
    return group + k / kQuantBlock * width * QuantBlockBytes(type) + width * kScaleBytes +
           k % kQuantBlock * width * QuantRowBytes(type);
  }
  // q8_0: row k's 32 quants.
  Byte* QuantRow(CompressedFormat type, size_t k) const {
    return GroupRow(type, k) + index * QuantRowBytes(type);
  }
  // q4_0: whether this panel's rows are in lane order (a whole group), and the byte of
  // row k that holds column j (< 32) in its low (j < 16) or high nibble.
  bool LaneOrder() const { return width == kGroupPanels; }
  Byte* Q4Byte(size_t k, size_t j) const {
    const size_t column = j % (kWidth / 2);
    return GroupRow(CompressedFormat::kQ4_0, k) +
           (LaneOrder() ? column * kGroupPanels + index : index * kQ4RowBytes + column);
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
      const uint8_t byte = *panel.Q4Byte(k, j);
      const int q = j < kWidth / 2 ? byte & 0xF : byte >> 4;
      return static_cast<float>(q - 8) * F16ToF32(LoadU16(panel.Scales(type, k) + 2 * j));
    }
  }
  return 0.0f;
}

// Row k of a row-layout panel dequantized into out[0..32).
inline void DequantizeRow(CompressedFormat type, const PanelRows& panel, size_t k, float* out) {
  for (size_t j = 0; j < kWidth; ++j) out[j] = DequantizeElement(type, panel, k, j);
}

// Offset of the block holding row k within one panel stored apart (the quad layout's
// panels are not interleaved).
inline size_t QuantBlockOffset(CompressedFormat type, size_t k) {
  return k / kQuantBlock * QuantBlockBytes(type);
}

// The int8-activation layout (CompressedLayout::kInt8Quads, int8_activations.h): per
// block the same 64 bytes of scales, then 8 quads of 4 rows; a q8_0 quad is 32 columns
// × 4 bytes (128), a q4_0 quad 16 × 4 bytes of two nibbles (64).
inline constexpr size_t kQuadRows = 4;
inline constexpr size_t kQ8QuadBytes = kWidth * kQuadRows;      // 128
inline constexpr size_t kQ4QuadBytes = kWidth / 2 * kQuadRows;  // 64
inline constexpr uint8_t kQ8Offset = 128;  // stored unsigned q8_0 quant u = q + 128
static_assert(kScaleBytes + kQuantBlock / kQuadRows * kQ8QuadBytes == kQ8BlockBytes &&
                  kScaleBytes + kQuantBlock / kQuadRows * kQ4QuadBytes == kQ4BlockBytes,
              "the quad layout keeps the row layout's block sizes");

// Byte of row k, column j (< 32) in a quad-layout panel; a q4_0 column j ≥ 16 is the
// high nibble of the byte of column j − 16.
inline size_t QuadByteOffset(CompressedFormat type, size_t k, size_t j) {
  const size_t quad = k % kQuantBlock / kQuadRows, within = k % kQuadRows;
  const size_t column = type == CompressedFormat::kQ8_0 ? j : j % (kWidth / 2);
  const size_t quad_bytes = type == CompressedFormat::kQ8_0 ? kQ8QuadBytes : kQ4QuadBytes;
  return QuantBlockOffset(type, k) + kScaleBytes + quad * quad_bytes + column * kQuadRows + within;
}

// Element (k, j) of a quad-layout panel: the same value as DequantizeElement of the
// row layout it was packed from.
inline float DequantizeQuadElement(CompressedFormat type, const uint8_t* panel, size_t k, size_t j) {
  const uint8_t byte = panel[QuadByteOffset(type, k, j)];
  const int q = type == CompressedFormat::kQ8_0 ? int{byte} - kQ8Offset
                                          : (j < kWidth / 2 ? byte & 0xF : byte >> 4) - 8;
  return static_cast<float>(q) * F16ToF32(LoadU16(panel + QuantBlockOffset(type, k) + 2 * j));
}

}  // namespace kvrt::simd::compressed
