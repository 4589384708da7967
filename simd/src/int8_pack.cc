// The int8-activation path's load-time and per-row preparation (int8_activations.h):
// the quad relayout of q8_0/q4_0 panels and the rounding of activation rows to q8_0
// blocks. Plain C++; the quad offsets live in compressed_layout.h with the others.
#include <cstring>

#include "compressed_layout.h"
#include "kvrt/simd/int8_activations.h"

namespace kvrt::simd {

void QuantizeRowScalar(const float* x, const Int8Rows& out, size_t row) {
  int8_t* quants = out.quants + row * out.k;
  float* scales = out.scales + row * out.blocks();
  int32_t* sums = out.sums + row * out.blocks();
  for (size_t b = 0; b < out.blocks(); ++b) {
    uint8_t block[compressed::kGgmlQ8BlockBytes];
    QuantizeBlockQ8_0(x + b * kQuantBlock, block);
    scales[b] = F16ToF32(compressed::LoadU16(block));
    int32_t sum = 0;
    for (size_t i = 0; i < kQuantBlock; ++i) {
      const auto q = static_cast<int8_t>(block[2 + i]);
      quants[b * kQuantBlock + i] = q;
      sum += q;
    }
    sums[b] = sum;
  }
}

CompressedMatrixView PackInt8Quads(const CompressedMatrixView& w, uint8_t* out) {
  using compressed::kWidth;
  CompressedMatrixView quads = w;
  quads.data = out;
  quads.layout = CompressedLayout::kInt8Quads;
  const size_t panel_bytes = w.panel_bytes();
  for (size_t p = 0; p < w.panels(); ++p) {
    const compressed::PanelRows source = compressed::RowsOfPanel(w, p);
    uint8_t* target = out + p * panel_bytes;
    for (size_t k0 = 0; k0 < w.rows; k0 += kQuantBlock) {
      std::memcpy(target + compressed::QuantBlockOffset(w.type, k0), source.Scales(w.type, k0),
                  compressed::kScaleBytes);
      for (size_t k = k0; k < k0 + kQuantBlock; ++k) {
        if (w.type == CompressedFormat::kQ8_0) {
          const uint8_t* row = source.QuantRow(w.type, k);
          for (size_t j = 0; j < kWidth; ++j) {
            target[compressed::QuadByteOffset(w.type, k, j)] =
                static_cast<uint8_t>(row[j] ^ compressed::kQ8Offset);  // q + 128
          }
        } else {
          // A byte of the row layout already holds columns j and j + 16 of row k.
          for (size_t j = 0; j < kWidth / 2; ++j) {
            target[compressed::QuadByteOffset(w.type, k, j)] = *source.Q4Byte(k, j);
          }
        }
      }
    }
  }
  return quads;
}

}  // namespace kvrt::simd
