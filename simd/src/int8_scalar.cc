// Scalar twin of the int8-activation kernel (int8_activations.h): the integer sums one
// product at a time in ascending k, then the header's two f32 roundings per block.
#include <algorithm>

#include "compressed_layout.h"
#include "kvrt/simd/int8_activations.h"

namespace kvrt::simd {

void MatMulInt8Scalar(const Int8Rows& a, size_t first_row, size_t m, const CompressedMatrixView& w,
                      float* c, size_t ldc, size_t panel_begin, size_t panel_end) {
  using compressed::kWidth;
  const bool q8 = w.type == CompressedFormat::kQ8_0;
  const int32_t offset = q8 ? compressed::kQ8Offset : compressed::kQ4Zero;
  for (size_t r = 0; r < m; ++r) {
    const size_t row = first_row + r;
    const int8_t* quants = a.quants + row * a.k;
    const float* scales = a.scales + row * a.blocks();
    const int32_t* sums = a.sums + row * a.blocks();
    for (size_t p = panel_begin; p < panel_end; ++p) {
      const uint8_t* panel = w.panel(p);
      const size_t first = p * kWidth;
      const size_t width = std::min(kWidth, w.cols - first);
      for (size_t j = 0; j < width; ++j) {
        float acc = 0.0f;
        for (size_t b = 0; b < a.blocks(); ++b) {
          const size_t k0 = b * kQuantBlock;
          int32_t sum = -offset * sums[b];
          for (size_t k = k0; k < k0 + kQuantBlock; ++k) {
            const uint8_t byte = panel[compressed::QuadByteOffset(w.type, k, j)];
            const int32_t u = q8 ? byte : (j < kWidth / 2 ? byte & 0xF : byte >> 4);
            sum += u * quants[k];
          }
          const float weight_scale =
              F16ToF32(compressed::LoadU16(panel + compressed::QuantBlockOffset(w.type, k0) + 2 * j));
          const float scale = weight_scale * scales[b];
          const float product = scale * static_cast<float>(sum);
          acc = acc + product;
        }
        c[r * ldc + first + j] = acc;
      }
    }
  }
}

}  // namespace kvrt::simd
