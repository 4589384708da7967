// Scalar twin of the int8-activation kernel (int8_activations.h): the integer sums one
// product at a time in ascending k, then the header's rounded f32 operations per block.
#include <algorithm>

#include "compressed_layout.h"
#include "kvrt/simd/int8_activations.h"

namespace kvrt::simd {
namespace {

// The integer sum of rows [k_begin, k_end) of column j: Σ u·a from `start`.
int32_t QuadSum(const CompressedMatrixView& w, const uint8_t* panel, const int8_t* quants, size_t j,
                size_t k_begin, size_t k_end, int32_t start) {
  int32_t sum = start;
  for (size_t k = k_begin; k < k_end; ++k)
    sum += compressed::QuadQuant(w.type, panel, k, j) * quants[k];
  return sum;
}

float ColumnScale(const uint8_t* scales, size_t j) {
  return F16ToF32(compressed::LoadU16(scales + 2 * j));
}

// y for column j of one panel and one activation row.
float Column(const Int8Rows& a, size_t row, const CompressedMatrixView& w, const uint8_t* panel,
             size_t j) {
  using compressed::kWidth;
  const int8_t* quants = a.quants + row * a.k;
  float acc = 0.0f;
  for (size_t b = 0; b < a.blocks(); ++b) {
    const size_t k0 = b * kQuantBlock;
    const uint8_t* block = panel + compressed::QuantBlockOffset(w.type, k0);
    const uint8_t* header = panel + compressed::QuadHeaderOffset(w.type, k0);
    const float da = a.scales[row * a.blocks() + b];
    const int32_t block_sum = a.sums[row * a.blocks() + b];
    switch (w.type) {
      case CompressedFormat::kQ8_0:
      case CompressedFormat::kQ4_0:
      case CompressedFormat::kQ5_0:
      case CompressedFormat::kIQ4_NL: {
        const int32_t offset = w.type == CompressedFormat::kQ8_0    ? compressed::kQ8Offset
                               : w.type == CompressedFormat::kQ4_0  ? compressed::kQ4Zero
                               : w.type == CompressedFormat::kQ5_0  ? 16
                                                                    : compressed::kIQ4Bias;
        const int32_t sum = QuadSum(w, panel, quants, j, k0, k0 + kQuantBlock, -offset * block_sum);
        const float scale = ColumnScale(block, j) * da;
        const float product = scale * static_cast<float>(sum);
        acc = acc + product;
        break;
      }
      case CompressedFormat::kQ6_K:
      case CompressedFormat::kQ3_K: {
        const int32_t offset = w.type == CompressedFormat::kQ6_K ? 32 : 4;
        int32_t total = 0;
        for (size_t h = 0; h < 2; ++h) {
          const size_t begin = k0 + h * kQuantBlock / 2;
          const int32_t half_sum = a.half_sums[(row * a.blocks() + b) * 2 + h];
          const int32_t sum =
              QuadSum(w, panel, quants, j, begin, begin + kQuantBlock / 2, -offset * half_sum);
          total += static_cast<int8_t>(block[h * kWidth + j]) * sum;
        }
        const float scale = ColumnScale(header, j) * da;
        const float product = scale * static_cast<float>(total);
        acc = acc + product;
        break;
      }
      case CompressedFormat::kIQ4_XS: {
        const int32_t sum = QuadSum(w, panel, quants, j, k0, k0 + kQuantBlock,
                                    -compressed::kIQ4Bias * block_sum);
        const int32_t total = static_cast<int8_t>(block[j]) * sum;
        const float scale = ColumnScale(header, j) * da;
        const float product = scale * static_cast<float>(total);
        acc = acc + product;
        break;
      }
      case CompressedFormat::kQ4_K:
      case CompressedFormat::kQ5_K: {
        const int32_t sum = QuadSum(w, panel, quants, j, k0, k0 + kQuantBlock, 0);
        const float scaled = (ColumnScale(header, j) * da) * static_cast<float>(block[j] * sum);
        const float mins = (ColumnScale(header + compressed::kScaleBytes, j) * da) *
                           static_cast<float>(block[kWidth + j] * block_sum);
        acc = acc + (scaled - mins);
        break;
      }
      case CompressedFormat::kQ4_1:
      case CompressedFormat::kQ5_1: {
        // x = q·d + m: Σ x·a = d·S + m·Σa, the minimum's term added.
        const int32_t sum = QuadSum(w, panel, quants, j, k0, k0 + kQuantBlock, 0);
        const float scaled = (ColumnScale(block, j) * da) * static_cast<float>(sum);
        const float mins = (ColumnScale(block + compressed::kScaleBytes, j) * da) *
                           static_cast<float>(block_sum);
        acc = acc + (scaled + mins);
        break;
      }
      case CompressedFormat::kQ2_K: {
        // Per half h: sc_h·S_h and m_h·Σa_h from its byte sc | m << 4.
        int32_t total = 0, min_total = 0;
        for (size_t h = 0; h < 2; ++h) {
          const size_t begin = k0 + h * kQuantBlock / 2;
          const int32_t half_sum = a.half_sums[(row * a.blocks() + b) * 2 + h];
          const int32_t sum = QuadSum(w, panel, quants, j, begin, begin + kQuantBlock / 2, 0);
          const uint8_t scale_min = block[h * kWidth + j];
          total += (scale_min & 0xF) * sum;
          min_total += (scale_min >> 4) * half_sum;
        }
        const float scaled = (ColumnScale(header, j) * da) * static_cast<float>(total);
        const float mins = (ColumnScale(header + compressed::kScaleBytes, j) * da) *
                           static_cast<float>(min_total);
        acc = acc + (scaled - mins);
        break;
      }
      default:
        break;
    }
  }
  return acc;
}

}  // namespace

void MatMulInt8Scalar(const Int8Rows& a, size_t first_row, size_t m, const CompressedMatrixView& w,
                      float* c, size_t ldc, size_t panel_begin, size_t panel_end) {
  using compressed::kWidth;
  for (size_t r = 0; r < m; ++r) {
    for (size_t p = panel_begin; p < panel_end; ++p) {
      const uint8_t* panel = w.panel(p);
      const size_t first = p * kWidth;
      const size_t width = std::min(kWidth, w.cols - first);
      for (size_t j = 0; j < width; ++j)
        c[r * ldc + first + j] = Column(a, first_row + r, w, panel, j);
    }
  }
}

}  // namespace kvrt::simd
