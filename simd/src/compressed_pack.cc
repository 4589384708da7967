// Sizes, packing (PackCompressed from f32, RepackGgml from GGUF bytes), element access
// and column gathers of compressed matrices (compressed_matrix.h). Load-time code, plain
// C++: the element writers below are the only code that places values in a panel, and
// DequantizeElement (compressed_layout.h) the only code that reads them back.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>

#include "compressed_layout.h"
#include "kvrt/simd/compressed_matrix.h"

namespace kvrt::simd {
namespace {

using compressed::kWidth;

// Where the values of one ggml block (or one 16-bit element) go inside the row layout.
struct PanelWriter {
  CompressedFormat type;
  size_t rows;
  size_t panels;
  uint8_t* out;

  compressed::PanelRowsOf<uint8_t> Panel(size_t n) const {
    return compressed::RowsOfPanel(out, type, rows, panels, n / kWidth);
  }

  void Half(size_t k, size_t n, uint16_t bits) const {
    const size_t j = n % kWidth;
    const size_t slot = type == CompressedFormat::kBf16 ? compressed::Bf16Slot(j) : j;
    compressed::StoreU16(Panel(n).HalfRow(k) + 2 * slot, bits);
  }
  // One ggml block (ggml bytes: f16 d, then the quants) of column n, rows k0..k0+32.
  void Q8Block(size_t k0, size_t n, const uint8_t* block) const {
    const compressed::PanelRowsOf<uint8_t> panel = Panel(n);
    const size_t j = n % kWidth;
    std::memcpy(panel.Scales(type, k0) + 2 * j, block, 2);
    for (size_t r = 0; r < kQuantBlock; ++r) panel.QuantRow(type, k0 + r)[j] = block[2 + r];
  }
  // One ggml q4_0 or iq4_nl block (the same bytes: f16 d, then qs[16]; only what a
  // nibble means differs).
  void Q4Block(size_t k0, size_t n, const uint8_t* block) const {
    const compressed::PanelRowsOf<uint8_t> panel = Panel(n);
    const size_t j = n % kWidth;
    std::memcpy(panel.Scales(type, k0) + 2 * j, block, 2);
    constexpr size_t kHalf = kQuantBlock / 2;
    for (size_t r = 0; r < kQuantBlock; ++r) {
      const uint8_t packed = block[2 + r % kHalf];
      const uint8_t q = r < kHalf ? packed & 0xF : packed >> 4;
      SetNibble(*panel.NibbleByte(type, k0 + r, j), j, q);
    }
  }
  // One ggml q5_0 block: q4_0's scale and nibbles (qs after the 4 bytes of qh), and
  // element r's fifth bit at bit r of qh read as a little-endian uint32.
  void Q50Block(size_t k0, size_t n, const uint8_t* block) const {
    const compressed::PanelRowsOf<uint8_t> panel = Panel(n);
    const size_t j = n % kWidth;
    std::memcpy(panel.Scales(type, k0) + 2 * j, block, 2);
    const uint8_t* qh = block + 2;
    const uint8_t* qs = block + 6;
    constexpr size_t kHalf = kQuantBlock / 2;
    for (size_t r = 0; r < kQuantBlock; ++r) {
      const uint8_t packed = qs[r % kHalf];
      SetNibble(*panel.NibbleByte(type, k0 + r, j), j, r < kHalf ? packed & 0xF : packed >> 4);
      const unsigned high = (qh[r / 8] >> (r % 8)) & 1;
      uint8_t& high_byte = panel.HighBits(type, k0 + r)[j / 8];
      const unsigned bit = j % 8;
      high_byte = static_cast<uint8_t>((high_byte & ~(1u << bit)) | (high << bit));
    }
  }
  // One ggml q4_1 or q5_1 block: d and m to the scale area (d's 32 f16, then m's), q4_0's
  // nibbles (qs after d, m and, for q5_1, the 4 bytes of qh) and q5_0's fifth bits.
  void Q41Block(size_t k0, size_t n, const uint8_t* block) const {
    const compressed::PanelRowsOf<uint8_t> panel = Panel(n);
    const size_t j = n % kWidth;
    uint8_t* scales = panel.Scales(type, k0);
    std::memcpy(scales + 2 * j, block, 2);
    std::memcpy(scales + compressed::kScaleBytes + 2 * j, block + 2, 2);
    const bool fifth_bits = type == CompressedFormat::kQ5_1;
    const uint8_t* qh = block + 4;
    const uint8_t* qs = block + (fifth_bits ? 8 : 4);
    constexpr size_t kHalf = kQuantBlock / 2;
    for (size_t r = 0; r < kQuantBlock; ++r) {
      const uint8_t packed = qs[r % kHalf];
      SetNibble(*panel.NibbleByte(type, k0 + r, j), j, r < kHalf ? packed & 0xF : packed >> 4);
      if (!fifth_bits) continue;
      const unsigned high = (qh[r / 8] >> (r % 8)) & 1;
      uint8_t& high_byte = panel.HighBits(type, k0 + r)[j / 8];
      const unsigned bit = j % 8;
      high_byte = static_cast<uint8_t>((high_byte & ~(1u << bit)) | (high << bit));
    }
  }
  // The header and scale areas of one ggml q4_k or q5_k super-block of column n, rows
  // k0..k0+256: f16 d and dmin, and the eight 6-bit (scale, min) pairs of ggml's
  // get_scale_min_k4 packing, a byte each.
  void ScalesAndMins(size_t k0, size_t n, const uint8_t* block) const {
    const compressed::PanelRowsOf<uint8_t> panel = Panel(n);
    const size_t j = n % kWidth;
    uint8_t* header = panel.Header(type, k0);
    std::memcpy(header + 2 * j, block, 2);
    std::memcpy(header + compressed::kScaleBytes + 2 * j, block + 2, 2);
    const uint8_t* packed_scales = block + 4;
    for (size_t s = 0; s < compressed::kSuperBlockBlocks; ++s) {
      uint8_t* scales = panel.Scales(type, k0 + s * kQuantBlock);
      if (s < 4) {
        scales[j] = packed_scales[s] & 63;
        scales[kWidth + j] = packed_scales[s + 4] & 63;
      } else {
        scales[j] = static_cast<uint8_t>((packed_scales[s + 4] & 0xF) | ((packed_scales[s - 4] >> 6) << 4));
        scales[kWidth + j] = static_cast<uint8_t>((packed_scales[s + 4] >> 4) | ((packed_scales[s] >> 6) << 4));
      }
    }
  }
  // One ggml q4_k super-block: its scales, then the nibbles, element 64g + l (l < 32)
  // in the low and 64g + 32 + l in the high nibble of qs[32g + l].
  void Q4KBlock(size_t k0, size_t n, const uint8_t* block) const {
    ScalesAndMins(k0, n, block);
    const compressed::PanelRowsOf<uint8_t> panel = Panel(n);
    const size_t j = n % kWidth;
    const uint8_t* qs = block + 16;
    for (size_t e = 0; e < kSuperBlock; ++e) {
      const uint8_t packed = qs[e / 64 * 32 + e % 32];
      const uint8_t q = e % 64 < 32 ? packed & 0xF : packed >> 4;
      SetNibble(*panel.NibbleByte(type, k0 + e, j), j, q);
    }
  }
  // One ggml q5_k super-block: q4_k's scales and nibbles (qs after 32 bytes of qh), and
  // element 64g + 32h + l's fifth bit at bit 2g + h of qh[l] (ggml's u1/u2 masks).
  void Q5KBlock(size_t k0, size_t n, const uint8_t* block) const {
    ScalesAndMins(k0, n, block);
    const compressed::PanelRowsOf<uint8_t> panel = Panel(n);
    const size_t j = n % kWidth;
    const uint8_t* qh = block + 16;
    const uint8_t* qs = block + 48;
    for (size_t e = 0; e < kSuperBlock; ++e) {
      const size_t g = e / 64, h = e % 64 / 32, l = e % 32;
      const uint8_t packed = qs[32 * g + l];
      SetNibble(*panel.NibbleByte(type, k0 + e, j), j, h == 0 ? packed & 0xF : packed >> 4);
      const unsigned high = (qh[l] >> (2 * g + h)) & 1;
      uint8_t& high_byte = panel.HighBits(type, k0 + e)[j / 8];
      const unsigned bit = j % 8;
      high_byte = static_cast<uint8_t>((high_byte & ~(1u << bit)) | (high << bit));
    }
  }
  // One ggml q6_k super-block of column n: element 128h + 32t + l (t < 4, l < 32) has its
  // low 4 bits in ql[64h + l + 32·(t % 2)] (low nibble for t < 2, else high), its high
  // 2 bits at bit 2t of qh[32h + l], and the int8 scale scales[e / 16]; f16 d last.
  void Q6KBlock(size_t k0, size_t n, const uint8_t* block) const {
    const compressed::PanelRowsOf<uint8_t> panel = Panel(n);
    const size_t j = n % kWidth;
    const uint8_t* ql = block;
    const uint8_t* qh = block + 128;
    const uint8_t* scales = block + 192;
    std::memcpy(panel.Header(type, k0) + 2 * j, block + 208, 2);
    for (size_t sub = 0; sub < kSuperBlock / 16; ++sub) {
      panel.Scales(type, k0 + sub * 16)[sub % 2 * kWidth + j] = scales[sub];
    }
    for (size_t e = 0; e < kSuperBlock; ++e) {
      const size_t half = e / 128, t = e % 128 / 32, l = e % 32;
      const uint8_t packed = ql[64 * half + l + 32 * (t % 2)];
      const uint8_t low = t < 2 ? packed & 0xF : packed >> 4;
      const uint8_t high = (qh[32 * half + l] >> (2 * t)) & 3;
      SetNibble(*panel.NibbleByte(type, k0 + e, j), j, low);
      uint8_t& high_byte = panel.HighBits(type, k0 + e)[j / 4];
      const unsigned shift = 2 * (j % 4);
      high_byte = static_cast<uint8_t>((high_byte & ~(3u << shift)) | (high << shift));
    }
  }
  // One ggml q3_k super-block of column n: element 128c + 32t + l (c < 2, t < 4,
  // l < 32) has its low 2 bits at bit 2t of qs[32c + l] and its high bit at bit 4c + t
  // of hmask[l]; sub-block s (16 elements) has the 6-bit scale whose low 4 bits are
  // the low (s < 8) or high nibble of scales[s % 8] and whose high 2 bits are bits
  // 2·(s / 4) of scales[8 + s % 4], stored as the int8 sc − 32; f16 d last.
  void Q3KBlock(size_t k0, size_t n, const uint8_t* block) const {
    const compressed::PanelRowsOf<uint8_t> panel = Panel(n);
    const size_t j = n % kWidth;
    const uint8_t* hmask = block;
    const uint8_t* qs = block + 32;
    const uint8_t* scales = block + 96;
    std::memcpy(panel.Header(type, k0) + 2 * j, block + 108, 2);
    for (size_t sub = 0; sub < kSuperBlock / 16; ++sub) {
      const unsigned low = sub < 8 ? scales[sub] & 0xF : scales[sub - 8] >> 4;
      const unsigned high = (scales[8 + sub % 4] >> (2 * (sub / 4))) & 3;
      const int sc = static_cast<int>(low | high << 4) - 32;
      panel.Scales(type, k0 + sub * 16)[sub % 2 * kWidth + j] = static_cast<uint8_t>(static_cast<int8_t>(sc));
    }
    for (size_t e = 0; e < kSuperBlock; ++e) {
      const size_t c = e / 128, t = e % 128 / 32, l = e % 32;
      const unsigned low = (qs[32 * c + l] >> (2 * t)) & 3;
      const unsigned high = (hmask[l] >> (4 * c + t)) & 1;
      SetNibble(*panel.NibbleByte(type, k0 + e, j), j, static_cast<uint8_t>(low | high << 2));
    }
  }
  // One ggml iq4_xs super-block of column n: d to the header, each block's ls − 32 (ls
  // from 4 bits of scales_l and 2 of scales_h) as an int8 scale, qs as iq4_nl's per 32.
  void IQ4XSBlock(size_t k0, size_t n, const uint8_t* block) const {
    const compressed::PanelRowsOf<uint8_t> panel = Panel(n);
    const size_t j = n % kWidth;
    std::memcpy(panel.Header(type, k0) + 2 * j, block, 2);
    const unsigned scales_h = block[2] | block[3] << 8;
    const uint8_t* scales_l = block + 4;
    const uint8_t* qs = block + 8;
    constexpr size_t kHalf = kQuantBlock / 2;
    for (size_t ib = 0; ib < kSuperBlock / kQuantBlock; ++ib) {
      const unsigned ls = ((scales_l[ib / 2] >> (4 * (ib % 2))) & 0xF) | (((scales_h >> (2 * ib)) & 3) << 4);
      panel.Scales(type, k0 + ib * kQuantBlock)[j] = static_cast<uint8_t>(static_cast<int8_t>(ls) - 32);
      for (size_t r = 0; r < kQuantBlock; ++r) {
        const uint8_t packed = qs[16 * ib + r % kHalf];
        SetNibble(*panel.NibbleByte(type, k0 + ib * kQuantBlock + r, j), j,
                  r < kHalf ? packed & 0xF : packed >> 4);
      }
    }
  }
  // One ggml q2_k super-block of column n: {u8 scales[16]; u8 qs[64]; f16 d; f16 dmin}.
  // Sub-block s (16 elements) keeps its byte scales[s] (sc | m << 4) as stored; element
  // 128c + 32t + l (c < 2, t < 4, l < 32) has its 2-bit quant at bit 2t of qs[32c + l]
  // (q3_k's low bits), which goes to bits 2j of the panel row's uint64.
  void Q2KBlock(size_t k0, size_t n, const uint8_t* block) const {
    const compressed::PanelRowsOf<uint8_t> panel = Panel(n);
    const size_t j = n % kWidth;
    const uint8_t* scales = block;
    const uint8_t* qs = block + 16;
    uint8_t* header = panel.Header(type, k0);
    std::memcpy(header + 2 * j, block + 80, 2);
    std::memcpy(header + compressed::kScaleBytes + 2 * j, block + 82, 2);
    for (size_t sub = 0; sub < kSuperBlock / 16; ++sub) {
      panel.Scales(type, k0 + sub * 16)[sub % 2 * kWidth + j] = scales[sub];
    }
    for (size_t e = 0; e < kSuperBlock; ++e) {
      const size_t c = e / 128, t = e % 128 / 32, l = e % 32;
      const unsigned q = (qs[32 * c + l] >> (2 * t)) & 3;
      uint8_t& byte = panel.Q2Row(type, k0 + e)[j / 4];
      const unsigned shift = 2 * (j % 4);
      byte = static_cast<uint8_t>((byte & ~(3u << shift)) | (q << shift));
    }
  }
  // One ggml block of the writer's quantized type (ggml's bytes), column n, from row k0.
  void Block(size_t k0, size_t n, const uint8_t* block) const {
    switch (type) {
      case CompressedFormat::kQ8_0: return Q8Block(k0, n, block);
      case CompressedFormat::kQ4_0:
      case CompressedFormat::kIQ4_NL: return Q4Block(k0, n, block);
      case CompressedFormat::kQ5_0: return Q50Block(k0, n, block);
      case CompressedFormat::kQ4_1:
      case CompressedFormat::kQ5_1: return Q41Block(k0, n, block);
      case CompressedFormat::kQ4_K: return Q4KBlock(k0, n, block);
      case CompressedFormat::kQ5_K: return Q5KBlock(k0, n, block);
      case CompressedFormat::kQ6_K: return Q6KBlock(k0, n, block);
      case CompressedFormat::kQ3_K: return Q3KBlock(k0, n, block);
      case CompressedFormat::kIQ4_XS: return IQ4XSBlock(k0, n, block);
      case CompressedFormat::kQ2_K: return Q2KBlock(k0, n, block);
      case CompressedFormat::kBf16:
      case CompressedFormat::kF16: return;
    }
  }
  static void SetNibble(uint8_t& byte, size_t j, uint8_t q) {
    byte = j < kWidth / 2 ? static_cast<uint8_t>((byte & 0xF0) | q)
                          : static_cast<uint8_t>((byte & 0x0F) | (q << 4));
  }

  // Zeroes the whole storage and gives the q4_0, iq4_nl, iq4_xs and q3_k quants and the
  // q5_0 and q6_k high bits their zero values (q4_0, iq4_nl and iq4_xs 8, q3_k 4, q5_0
  // 16, q6_k 32), so that padding columns dequantize to +0 and every byte is written.
  // (q4_1's and q5_1's zero bytes are q = 0, d = m = +0: 0·0 + 0 = +0.)
  void Clear() const {
    std::memset(out, 0, panels * compressed::PanelBytes(type, rows));
    const bool nibbles = type == CompressedFormat::kQ4_0 || type == CompressedFormat::kIQ4_NL ||
                         type == CompressedFormat::kIQ4_XS || type == CompressedFormat::kQ3_K;
    if (!nibbles && type != CompressedFormat::kQ5_0 && type != CompressedFormat::kQ6_K) {
      return;
    }
    for (size_t p = 0; p < panels; p += compressed::kGroupPanels) {
      const compressed::PanelRowsOf<uint8_t> group =
          compressed::RowsOfPanel(out, type, rows, panels, p);
      for (size_t k = 0; k < rows; ++k) {
        if (nibbles) {
          const uint8_t zero = type == CompressedFormat::kQ3_K ? compressed::kQ3Zero : compressed::kQ4Zero;
          std::memset(group.GroupRow(type, k), zero * 0x11, group.width * compressed::kQ4RowBytes);
        } else {
          const uint8_t zero = type == CompressedFormat::kQ5_0 ? compressed::kQ5_0HighZero
                                                               : compressed::kQ6HighZero;
          std::memset(group.GroupRow(type, k) + group.width * compressed::kQ4RowBytes, zero,
                      group.width * compressed::HighBytes(type));
        }
      }
    }
  }
};

// ggml's block of SuperRows(type) values for a quantized type.
void QuantizeBlock(CompressedFormat type, const float* values, uint8_t* out) {
  switch (type) {
    case CompressedFormat::kQ8_0: return QuantizeBlockQ8_0(values, out);
    case CompressedFormat::kQ4_0: return QuantizeBlockQ4_0(values, out);
    case CompressedFormat::kQ5_0: return QuantizeBlockQ5_0(values, out);
    case CompressedFormat::kQ4_1: return QuantizeBlockQ4_1(values, out);
    case CompressedFormat::kQ5_1: return QuantizeBlockQ5_1(values, out);
    case CompressedFormat::kIQ4_NL: return QuantizeBlockIQ4_NL(values, out);
    case CompressedFormat::kQ4_K: return QuantizeBlockQ4_K(values, out);
    case CompressedFormat::kQ5_K: return QuantizeBlockQ5_K(values, out);
    case CompressedFormat::kQ6_K: return QuantizeBlockQ6_K(values, out);
    case CompressedFormat::kQ3_K: return QuantizeBlockQ3_K(values, out);
    case CompressedFormat::kIQ4_XS: return QuantizeBlockIQ4_XS(values, out);
    case CompressedFormat::kQ2_K: return QuantizeBlockQ2_K(values, out);
    case CompressedFormat::kBf16:
    case CompressedFormat::kF16: return;
  }
}

// Panels of a matrix of `cols` columns (any cols, without overflow).
size_t PanelCount(size_t cols) { return cols / kWidth + (cols % kWidth != 0 ? 1 : 0); }

}  // namespace

const char* CompressedFormatName(CompressedFormat type) {
  switch (type) {
    case CompressedFormat::kBf16: return "bf16";
    case CompressedFormat::kF16: return "f16";
    case CompressedFormat::kQ8_0: return "q8_0";
    case CompressedFormat::kQ4_0: return "q4_0";
    case CompressedFormat::kQ4_K: return "q4_k";
    case CompressedFormat::kQ6_K: return "q6_k";
    case CompressedFormat::kQ5_K: return "q5_k";
    case CompressedFormat::kQ5_0: return "q5_0";
    case CompressedFormat::kQ3_K: return "q3_k";
    case CompressedFormat::kIQ4_NL: return "iq4_nl";
    case CompressedFormat::kIQ4_XS: return "iq4_xs";
    case CompressedFormat::kQ4_1: return "q4_1";
    case CompressedFormat::kQ5_1: return "q5_1";
    case CompressedFormat::kQ2_K: return "q2_k";
  }
  return "?";
}

size_t CompressedRowMultiple(CompressedFormat type) {
  return compressed::IsBlockQuantized(type) ? compressed::SuperRows(type) : 1;
}

bool FitsCompressedFormat(CompressedFormat type, size_t rows) {
  return rows % CompressedRowMultiple(type) == 0;
}

size_t CompressedMatrixBytes(CompressedFormat type, size_t rows, size_t cols) {
  constexpr size_t kMax = std::numeric_limits<size_t>::max();
  // The largest per-row cost is 64 bytes (bf16/f16), so rows ≤ kMax / 64 keeps
  // PanelBytes from overflowing.
  if (rows > kMax / compressed::kHalfRowBytes) return kMax;
  const size_t panel = compressed::PanelBytes(type, rows);
  const size_t panels = PanelCount(cols);
  if (panel != 0 && panels > kMax / panel) return kMax;
  return panels * panel;
}

size_t GgmlRowBytes(CompressedFormat type, size_t rows_k) {
  switch (type) {
    case CompressedFormat::kBf16:
    case CompressedFormat::kF16:
      return rows_k * sizeof(uint16_t);
    case CompressedFormat::kQ8_0:
      return rows_k / kQuantBlock * compressed::kGgmlQ8BlockBytes;
    case CompressedFormat::kQ4_0:
    case CompressedFormat::kIQ4_NL:
      return rows_k / kQuantBlock * compressed::kGgmlQ4BlockBytes;
    case CompressedFormat::kQ5_0:
      return rows_k / kQuantBlock * compressed::kGgmlQ5_0BlockBytes;
    case CompressedFormat::kQ4_1:
      return rows_k / kQuantBlock * compressed::kGgmlQ4_1BlockBytes;
    case CompressedFormat::kQ5_1:
      return rows_k / kQuantBlock * compressed::kGgmlQ5_1BlockBytes;
    case CompressedFormat::kQ4_K:
      return rows_k / kSuperBlock * compressed::kGgmlQ4KBlockBytes;
    case CompressedFormat::kQ5_K:
      return rows_k / kSuperBlock * compressed::kGgmlQ5KBlockBytes;
    case CompressedFormat::kQ6_K:
      return rows_k / kSuperBlock * compressed::kGgmlQ6KBlockBytes;
    case CompressedFormat::kQ3_K:
      return rows_k / kSuperBlock * compressed::kGgmlQ3KBlockBytes;
    case CompressedFormat::kIQ4_XS:
      return rows_k / kSuperBlock * compressed::kGgmlIQ4XSBlockBytes;
    case CompressedFormat::kQ2_K:
      return rows_k / kSuperBlock * compressed::kGgmlQ2KBlockBytes;
  }
  return 0;
}

size_t CompressedMatrixView::panel_bytes() const { return compressed::PanelBytes(type, rows); }

float CompressedMatrixView::at(size_t k, size_t n) const {
  if (layout == CompressedLayout::kInt8Quads) {
    return compressed::DequantizeQuadElement(type, panel(n / kWidth), k, n % kWidth);
  }
  if (layout == CompressedLayout::kBf16Pairs) {
    return Bf16ToF32(compressed::LoadU16(panel(n / kWidth) + compressed::Bf16PairOffset(k, n % kWidth)));
  }
  const compressed::PanelRows panel_rows = compressed::RowsOfPanel(*this, n / kWidth);
  return compressed::DequantizeElement(type, panel_rows, k, n % kWidth);
}

// One element of every row (an embedding lookup of a tied table, every prefill row):
// the column's own bytes only, not the other 31 columns of each panel row.
void GatherColumn(const CompressedMatrixView& w, size_t n, float* out) {
  const size_t j = n % kWidth;
  if (w.layout == CompressedLayout::kInt8Quads) {
    const uint8_t* panel = w.panel(n / kWidth);
    for (size_t k = 0; k < w.rows; ++k) {
      out[k] = compressed::DequantizeQuadElement(w.type, panel, k, j);
    }
    return;
  }
  if (w.layout == CompressedLayout::kBf16Pairs) {
    const uint8_t* panel = w.panel(n / kWidth);
    for (size_t k = 0; k < w.rows; ++k) {
      out[k] = Bf16ToF32(compressed::LoadU16(panel + compressed::Bf16PairOffset(k, j)));
    }
    return;
  }
  const compressed::PanelRows panel = compressed::RowsOfPanel(w, n / kWidth);
  for (size_t k = 0; k < w.rows; ++k) out[k] = compressed::DequantizeElement(w.type, panel, k, j);
}

void PackCompressed(CompressedFormat type, const float* source, size_t rows, size_t cols,
                    bool source_is_transposed, uint8_t* out) {
  const PanelWriter writer{type, rows, PanelCount(cols), out};
  writer.Clear();
  const auto element = [&](size_t k, size_t n) {
    return source_is_transposed ? source[n * rows + k] : source[k * cols + n];
  };
  for (size_t n = 0; n < cols; ++n) {
    if (type == CompressedFormat::kBf16 || type == CompressedFormat::kF16) {
      for (size_t k = 0; k < rows; ++k) {
        const float v = element(k, n);
        writer.Half(k, n, type == CompressedFormat::kBf16 ? F32ToBf16(v) : F32ToF16(v));
      }
      continue;
    }
    const size_t block_rows = compressed::SuperRows(type);
    for (size_t k0 = 0; k0 < rows; k0 += block_rows) {
      float values[kSuperBlock];
      for (size_t r = 0; r < block_rows; ++r) values[r] = element(k0 + r, n);
      uint8_t block[compressed::kGgmlMaxBlockBytes];
      QuantizeBlock(type, values, block);
      writer.Block(k0, n, block);
    }
  }
}

void RepackGgml(CompressedFormat type, const uint8_t* ggml_rows, size_t rows_k, size_t cols_n,
                uint8_t* out) {
  const PanelWriter writer{type, rows_k, PanelCount(cols_n), out};
  writer.Clear();
  const size_t row_bytes = GgmlRowBytes(type, rows_k);
  for (size_t n = 0; n < cols_n; ++n) {
    const uint8_t* row = ggml_rows + n * row_bytes;
    if (!compressed::IsBlockQuantized(type)) {
      for (size_t k = 0; k < rows_k; ++k) writer.Half(k, n, compressed::LoadU16(row + 2 * k));
      continue;
    }
    const size_t block_rows = compressed::SuperRows(type);
    const size_t block_bytes = GgmlRowBytes(type, block_rows);
    for (size_t b = 0; b < rows_k / block_rows; ++b) {
      writer.Block(b * block_rows, n, row + b * block_bytes);
    }
  }
}

}  // namespace kvrt::simd
