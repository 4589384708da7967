// A random [K, N] weight matrix packed by PackMatrix into misaligned storage, for
// the matrix kernel tests.
#pragma once

#include <cmath>
#include <cstddef>
#include <vector>

#include "kvrt/simd/pack_matrix.h"
#include "simd_test_support.h"

namespace kvrt::simd_test {

template <class T>
struct PackedCase {
  PackedCase(size_t rows, size_t cols, size_t offset, Inputs& inputs)
      : dense(inputs.Uniform<T>(rows * cols, -1, 1)),
        storage(simd::PackedElementCount<T>(rows, cols), offset),
        view(simd::PackMatrix(dense.data(), rows, cols, false, storage.data())) {}

  // Σ_k |x[k]·W[k][n]|: the scale of column n's rounding errors.
  long double AbsColumnSum(const T* x, size_t n) const {
    long double sum = 0;
    for (size_t k = 0; k < view.rows; ++k) {
      sum += std::fabs(static_cast<long double>(x[k]) * dense[k * view.cols + n]);
    }
    return sum;
  }

  std::vector<T> dense;  // [K, N] row-major
  GuardedBuffer<T> storage;
  simd::PackedMatrixView<T> view;
};

}  // namespace kvrt::simd_test
