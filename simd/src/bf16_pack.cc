// The bf16-activation path's load-time and per-row preparation (bf16_activations.h):
// the pair relayout of bf16 panels and the rounding of activation rows to bf16.
#include <cstring>

#include "compressed_layout.h"
#include "kvrt/simd/bf16_activations.h"

namespace kvrt::simd {
namespace {

// VDPBF16PS reads a subnormal bf16 (exponent bits zero) as a zero of its sign.
uint16_t FlushSubnormal(uint16_t bits) { return (bits & 0x7F80) == 0 ? bits & 0x8000 : bits; }

}  // namespace

void RoundRowToBf16Scalar(const float* x, const Bf16Rows& out, size_t row) {
  uint32_t* pairs = out.pairs + row * out.pairs_per_row();
  for (size_t i = 0; i < out.pairs_per_row(); ++i) {
    const uint32_t even = FlushSubnormal(F32ToBf16(x[2 * i]));
    const uint32_t odd = FlushSubnormal(F32ToBf16(x[2 * i + 1]));
    pairs[i] = even | odd << 16;
  }
}

bool HasBf16Pairs(const CompressedMatrixView& w) {
  return w.type == CompressedFormat::kBf16 && w.layout == CompressedLayout::kRows && w.rows % 2 == 0;
}

CompressedMatrixView PackBf16Pairs(const CompressedMatrixView& w, uint8_t* out) {
  using compressed::kWidth;
  CompressedMatrixView pairs = w;
  pairs.data = out;
  pairs.layout = CompressedLayout::kBf16Pairs;
  const size_t panel_bytes = w.panel_bytes();
  for (size_t p = 0; p < w.panels(); ++p) {
    const compressed::PanelRows source = compressed::RowsOfPanel(w, p);
    uint8_t* target = out + p * panel_bytes;
    for (size_t k = 0; k < w.rows; ++k) {
      const uint8_t* row = source.HalfRow(k);
      for (size_t j = 0; j < kWidth; ++j) {
        const uint16_t bits = FlushSubnormal(compressed::LoadU16(row + 2 * compressed::Bf16Slot(j)));
        std::memcpy(target + compressed::Bf16PairOffset(k, j), &bits, sizeof(bits));
      }
    }
  }
  return pairs;
}

}  // namespace kvrt::simd
