// Shared pieces of the bf16-activation kernel tests (bf16_activations_test.cc,
// amx_bf16_test.cc): bf16 matrices in both layouts, activation rows rounded to bf16,
// and a bitwise comparison.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <initializer_list>
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

// |y − x·w| ≤ (2^-9 + (K + 2)·2^-24)·Σ|x·w|·(1 + 2^-8) for every output of y ([M, N] of
// `act` times `w`): each activation rounded to bf16 (relative error at most 2^-9, the
// weights being exact bf16 values), then a sum of K exact products rounded K times in
// f32 in any order (γ_K ≤ (K + 2)·2^-25 per rounding ·2). Returns how many outputs moved
// beyond f32's own error, (K + 2)·2^-24·Σ|x·w|.
inline size_t ExpectWithinActivationRoundingBound(const Bf16Activations& act, const Bf16PairCase& w,
                                                  const std::vector<float>& y, size_t m) {
  const size_t k = w.row_view.rows, cols = w.row_view.cols;
  const long double f32_error = (k + 2) * std::ldexp(1.0L, -24);
  const long double slack = (std::ldexp(1.0L, -9) + f32_error) * (1 + std::ldexp(1.0L, -8));
  size_t moved = 0;
  for (size_t r = 0; r < m; ++r) {
    for (size_t n = 0; n < cols; ++n) {
      long double exact = 0, magnitude = 0;
      for (size_t i = 0; i < k; ++i) {
        const long double product = static_cast<long double>(act.x[r * k + i]) * w.row_view.at(i, n);
        exact += product;
        magnitude += std::fabs(product);
      }
      const long double error = std::fabs(y[r * cols + n] - exact);
      EXPECT_LE(error, slack * magnitude) << "r=" << r << " n=" << n;
      moved += error > f32_error * magnitude;
    }
  }
  return moved;
}

inline void ExpectBitsEqual(const std::vector<float>& got, const std::vector<float>& want, const char* what) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    uint32_t g, w;
    std::memcpy(&g, &got[i], 4);
    std::memcpy(&w, &want[i], 4);
    ASSERT_EQ(g, w) << what << " element " << i << ": " << got[i] << " vs " << want[i];
  }
}


// A row's bits do not depend on the rows beside it: `product(first_row, m, c)` (the
// product of rows [first_row, first_row + m) of `act` and all of w's panels into c,
// ldc = N) for each run of `lengths` rows starting anywhere equals those rows of the
// product of all `m` rows.
template <class Product>
void ExpectRowsIndependentOfTheirNeighbours(const Bf16PairCase& w, size_t m, std::initializer_list<size_t> lengths,
                                            Product&& product) {
  const size_t cols = w.pairs.cols;
  std::vector<float> all(m * cols);
  product(0, m, all.data());
  for (size_t r = 0; r < m; ++r) {
    for (size_t rows : lengths) {
      if (r + rows > m) continue;
      std::vector<float> some(rows * cols);
      product(r, rows, some.data());
      ExpectBitsEqual(some, std::vector<float>(all.begin() + r * cols, all.begin() + (r + rows) * cols),
                      "rows alone vs in M");
    }
  }
}

}  // namespace kvrt::simd_test
