// Shared pieces of the bf16-activation kernel tests (bf16_activations_test.cc,
// amx_bf16_test.cc): bf16 matrices in both layouts, activation rows rounded to bf16,
// and a bitwise comparison.
#pragma once

#include <cstdint>
#include <cstring>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "hwy/aligned_allocator.h"
#include "kvrt/simd/bf16_activations.h"
#include "kvrt/simd/compressed_matrix.h"
#include "simd_test_support.h"

namespace kvrt::simd_test {

using simd::Bf16Rows;
using simd::CompressedFormat;
using simd::CompressedMatrixView;

// A bf16 matrix in the row layout and its pair relayout, and the f32 values it was
// made from: random (a few large entries), or `values` ([K, N] row-major).
struct Bf16PairCase {
  Bf16PairCase(size_t rows, size_t cols, Inputs& inputs) : Bf16PairCase(RandomValues(rows * cols, inputs), rows, cols) {}
  Bf16PairCase(std::vector<float> values, size_t rows, size_t cols)
      : bytes(simd::CompressedMatrixBytes(CompressedFormat::kBf16, rows, cols)),
        dense(std::move(values)),
        row_storage(hwy::AllocateAligned<uint8_t>(bytes)),
        pair_storage(hwy::AllocateAligned<uint8_t>(bytes)) {
    simd::PackCompressed(CompressedFormat::kBf16, dense.data(), rows, cols, false, row_storage.get());
    row_view = {CompressedFormat::kBf16, row_storage.get(), rows, cols};
    pairs = simd::PackBf16Pairs(row_view, pair_storage.get());
  }
  static std::vector<float> RandomValues(size_t n, Inputs& inputs) {
    std::vector<float> values = inputs.Uniform<float>(n, -1, 1);
    for (size_t i = 0; i < values.size(); i += 89) values[i] *= 30.0f;
    return values;
  }
  size_t bytes;
  std::vector<float> dense;
  hwy::AlignedFreeUniquePtr<uint8_t[]> row_storage, pair_storage;
  CompressedMatrixView row_view, pairs;
};

// M rows of K activations and their bf16 pairs.
struct Bf16Activations {
  Bf16Activations(size_t m, size_t k, Inputs& inputs) : x(inputs.Uniform<float>(m * k, -2, 2)), pairs(m * k / 2) {
    for (size_t i = 0; i < x.size(); i += 7) x[i] *= 50.0f;
    rows = {pairs.data(), k};
    for (size_t r = 0; r < m; ++r) simd::RoundRowToBf16(x.data() + r * k, rows, r);
  }
  std::vector<float> x;
  std::vector<uint32_t> pairs;
  Bf16Rows rows;
};

inline void ExpectBitsEqual(const std::vector<float>& got, const std::vector<float>& want, const char* what) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    uint32_t g, w;
    std::memcpy(&g, &got[i], 4);
    std::memcpy(&w, &want[i], 4);
    ASSERT_EQ(g, w) << what << " element " << i << ": " << got[i] << " vs " << want[i];
  }
}

}  // namespace kvrt::simd_test
