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
  void Q4Block(size_t k0, size_t n, const uint8_t* block) const {
    const compressed::PanelRowsOf<uint8_t> panel = Panel(n);
    const size_t j = n % kWidth;
    std::memcpy(panel.Scales(type, k0) + 2 * j, block, 2);
    constexpr size_t kHalf = kQuantBlock / 2;
    for (size_t r = 0; r < kQuantBlock; ++r) {
      const uint8_t packed = block[2 + r % kHalf];
      const uint8_t q = r < kHalf ? packed & 0xF : packed >> 4;
      SetNibble(*panel.Q4Byte(k0 + r, j), j, q);
    }
  }
  static void SetNibble(uint8_t& byte, size_t j, uint8_t q) {
    byte = j < kWidth / 2 ? static_cast<uint8_t>((byte & 0xF0) | q)
                          : static_cast<uint8_t>((byte & 0x0F) | (q << 4));
  }

  // Zeroes the whole storage and gives the q4_0 quants their zero value (8), so that
  // padding columns dequantize to +0 and every byte is written.
  void Clear() const {
    std::memset(out, 0, panels * compressed::PanelBytes(type, rows));
    if (type != CompressedFormat::kQ4_0) return;
    for (size_t p = 0; p < panels; p += compressed::kGroupPanels) {
      const compressed::PanelRowsOf<uint8_t> group =
          compressed::RowsOfPanel(out, type, rows, panels, p);
      for (size_t k = 0; k < rows; ++k) {
        std::memset(group.GroupRow(type, k), compressed::kQ4Zero * 0x11,
                    group.width * compressed::kQ4RowBytes);
      }
    }
  }
};

// Panels of a matrix of `cols` columns (any cols, without overflow).
size_t PanelCount(size_t cols) { return cols / kWidth + (cols % kWidth != 0 ? 1 : 0); }

}  // namespace

const char* CompressedFormatName(CompressedFormat type) {
  switch (type) {
    case CompressedFormat::kBf16: return "bf16";
    case CompressedFormat::kF16: return "f16";
    case CompressedFormat::kQ8_0: return "q8_0";
    case CompressedFormat::kQ4_0: return "q4_0";
  }
  return "?";
}

bool FitsCompressedFormat(CompressedFormat type, size_t rows) {
  switch (type) {
    case CompressedFormat::kBf16:
    case CompressedFormat::kF16:
      return true;
    case CompressedFormat::kQ8_0:
    case CompressedFormat::kQ4_0:
      return rows % kQuantBlock == 0;
  }
  return false;
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
      return rows_k / kQuantBlock * compressed::kGgmlQ4BlockBytes;
  }
  return 0;
}

size_t CompressedMatrixView::panel_bytes() const { return compressed::PanelBytes(type, rows); }

float CompressedMatrixView::at(size_t k, size_t n) const {
  if (layout == CompressedLayout::kInt8Quads) {
    return compressed::DequantizeQuadElement(type, panel(n / kWidth), k, n % kWidth);
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
    for (size_t k0 = 0; k0 < rows; k0 += kQuantBlock) {
      float values[kQuantBlock];
      for (size_t r = 0; r < kQuantBlock; ++r) values[r] = element(k0 + r, n);
      uint8_t block[compressed::kGgmlQ8BlockBytes];
      if (type == CompressedFormat::kQ8_0) {
        QuantizeBlockQ8_0(values, block);
        writer.Q8Block(k0, n, block);
      } else {
        QuantizeBlockQ4_0(values, block);
        writer.Q4Block(k0, n, block);
      }
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
    switch (type) {
      case CompressedFormat::kBf16:
      case CompressedFormat::kF16:
        for (size_t k = 0; k < rows_k; ++k) writer.Half(k, n, compressed::LoadU16(row + 2 * k));
        break;
      case CompressedFormat::kQ8_0:
        for (size_t b = 0; b < rows_k / kQuantBlock; ++b) {
          writer.Q8Block(b * kQuantBlock, n, row + b * compressed::kGgmlQ8BlockBytes);
        }
        break;
      case CompressedFormat::kQ4_0:
        for (size_t b = 0; b < rows_k / kQuantBlock; ++b) {
          writer.Q4Block(b * kQuantBlock, n, row + b * compressed::kGgmlQ4BlockBytes);
        }
        break;
    }
  }
}

}  // namespace kvrt::simd
