// Scalar twin of MatMulBf16 (bf16_activations.h): VDPBF16PS's definition one pair at a
// time, from the dequantized weights (at()) and the rounded activation pairs.
#include <algorithm>
#include <cmath>

#include "kvrt/simd/bf16_activations.h"

namespace kvrt::simd {
namespace {

// acc + product, rounded to nearest even, a result below 2^-126 flushed to zero of its sign.
float AddFlushed(float acc, float product) {
  const float sum = acc + product;
  return std::fabs(sum) < 0x1p-126f ? std::copysign(0.0f, sum) : sum;
}

}  // namespace

void MatMulBf16Scalar(const Bf16Rows& a, size_t first_row, size_t m, const CompressedMatrixView& w,
                      float* c, size_t ldc, size_t panel_begin, size_t panel_end) {
  const size_t col_end = std::min(w.cols, panel_end * kCompressedPanelWidth);
  for (size_t r = 0; r < m; ++r) {
    const uint32_t* pairs = a.pairs + (first_row + r) * a.pairs_per_row();
    for (size_t n = panel_begin * kCompressedPanelWidth; n < col_end; ++n) {
      float acc = 0.0f;
      for (size_t i = 0; i < a.pairs_per_row(); ++i) {
        acc = AddFlushed(acc, Bf16ToF32(static_cast<uint16_t>(pairs[i] >> 16)) * w.at(2 * i + 1, n));
        acc = AddFlushed(acc, Bf16ToF32(static_cast<uint16_t>(pairs[i])) * w.at(2 * i, n));
      }
      c[r * ldc + n] = acc;
    }
  }
}

}  // namespace kvrt::simd
