// Shared pieces of the simd kernel tests: size sweeps, misaligned guarded buffers,
// seeded inputs, and the error model the derived tolerances are written in.
//
// Every tolerance is computed in long double from the inputs of the case at hand,
// using ε = numeric_limits<T>::epsilon() (one ULP at 1, twice the unit roundoff) and
// the standard bound for a length-n sum of products in any order,
//   |computed − exact| ≤ γ_n·Σ|a_i·b_i|, γ_n = n·u/(1 − n·u) ≈ n·ε/2.
// Two such sums (the fast kernel and its twin) differ by at most 2γ_n·Σ ≈ n·ε·Σ,
// written (n + 2)·ε·Σ to absorb the O(ε²) term and a final rounding.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "hwy/aligned_allocator.h"

namespace kvrt::simd_test {

// Every n in [0, 300] (all remainders modulo every lane count up to 64, several
// full vectors, the unrolled main loops) and rows the models use.
inline std::vector<size_t> SweepSizes() {
  std::vector<size_t> sizes;
  for (size_t n = 0; n <= 300; ++n) sizes.push_back(n);
  for (size_t n : {1000, 4096, 32000, 32003}) sizes.push_back(n);
  return sizes;
}

// Offsets in elements from a 64-byte boundary: aligned, odd, and a few lanes in.
inline constexpr size_t kMisalignments[] = {0, 1, 3};

template <class T>
long double Epsilon() {
  return std::numeric_limits<T>::epsilon();
}
template <class T>
long double DenormMin() {
  return std::numeric_limits<T>::denorm_min();
}
template <class T>
long double MinNormal() {
  return std::numeric_limits<T>::min();
}

// The bound between a fast and a twin sum of n products with Σ|a_i·b_i| = abs_sum
// (see the file comment); n·denorm_min covers products that round in the subnormal
// range, where the rounding error is absolute rather than relative.
template <class T>
long double SumOfProductsBound(size_t n, long double abs_sum) {
  return (static_cast<long double>(n) + 2) * Epsilon<T>() * abs_sum +
         static_cast<long double>(n) * DenormMin<T>();
}

// A 64-byte aligned allocation holding `size` elements at `offset` elements past the
// boundary, followed by guard elements that kernels must not write.
template <class T>
class GuardedBuffer {
 public:
  static constexpr size_t kGuard = 80;  // more than one vector of any target

  GuardedBuffer(size_t size, size_t offset)
      : size_(size),
        offset_(offset),
        storage_(hwy::AllocateAligned<T>(offset + size + kGuard)) {
    for (size_t i = 0; i < offset + size + kGuard; ++i) storage_[i] = Sentinel();
  }
  T* data() { return storage_.get() + offset_; }
  const T* data() const { return storage_.get() + offset_; }
  size_t size() const { return size_; }
  T& operator[](size_t i) { return data()[i]; }
  const T& operator[](size_t i) const { return data()[i]; }
  void CopyFrom(const std::vector<T>& values) {
    if (!values.empty()) std::memcpy(data(), values.data(), values.size() * sizeof(T));
  }
  std::vector<T> ToVector() const { return std::vector<T>(data(), data() + size_); }

  // True if no element before or after [0, size) was written.
  bool GuardsIntact() const {
    for (size_t i = 0; i < offset_; ++i) {
      if (!IsSentinel(storage_[i])) return false;
    }
    for (size_t i = 0; i < kGuard; ++i) {
      if (!IsSentinel(storage_[offset_ + size_ + i])) return false;
    }
    return true;
  }

 private:
  static T Sentinel() { return T(-7777.25); }
  static bool IsSentinel(T value) { return value == Sentinel(); }

  size_t size_;
  size_t offset_;
  hwy::AlignedFreeUniquePtr<T[]> storage_;
};

// Deterministic inputs: a generator seeded from the case so failures reproduce.
class Inputs {
 public:
  explicit Inputs(uint64_t seed) : engine_(seed) {}

  // Uniform in [lo, hi).
  template <class T>
  std::vector<T> Uniform(size_t n, T lo, T hi) {
    std::uniform_real_distribution<double> dist(static_cast<double>(lo), static_cast<double>(hi));
    std::vector<T> out(n);
    for (T& x : out) x = static_cast<T>(dist(engine_));
    return out;
  }

  // ±scale·2^e with e uniform in [−spread, spread]: magnitudes over a wide range.
  template <class T>
  std::vector<T> WideExponents(size_t n, T scale, int spread) {
    std::uniform_real_distribution<double> exponent(-spread, spread);
    std::bernoulli_distribution negative(0.5);
    std::vector<T> out(n);
    for (T& x : out) {
      const double magnitude = static_cast<double>(scale) * std::exp2(exponent(engine_));
      x = static_cast<T>(negative(engine_) ? -magnitude : magnitude);
    }
    return out;
  }

  // Integers in [−limit, limit]: sums of their products are exact in both kernels.
  template <class T>
  std::vector<T> SmallIntegers(size_t n, int limit) {
    std::uniform_int_distribution<int> dist(-limit, limit);
    std::vector<T> out(n);
    for (T& x : out) x = static_cast<T>(dist(engine_));
    return out;
  }


 private:
  std::mt19937_64 engine_;
};

// Prefix lengths for the attention tests over stored K/V types: every length to
// 20, and the lengths around the first two boundaries of tiles of `tile` rows.
inline std::vector<size_t> ShortAndTileBoundaryLengths(size_t tile) {
  std::vector<size_t> lengths;
  for (size_t n = 1; n <= 20; ++n) lengths.push_back(n);
  for (size_t n : {tile - 1, tile, tile + 1, 2 * tile + 3}) lengths.push_back(n);
  return lengths;
}

inline uint64_t CaseSeed(size_t a, size_t b = 0, size_t c = 0) {
  return 0x9E3779B97F4A7C15ull ^ (a * 1000003ull) ^ (b * 7919ull) ^ (c * 104729ull);
}

// |fast − twin| ≤ bound, with NaN only where the twin is NaN and infinities equal.
template <class T>
::testing::AssertionResult WithinBound(T fast, T twin, long double bound) {
  if (std::isnan(twin) || std::isnan(fast)) {
    if (std::isnan(twin) && std::isnan(fast)) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << "fast " << fast << " vs twin " << twin;
  }
  if (std::isinf(twin) || std::isinf(fast)) {
    if (fast == twin) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << "fast " << fast << " vs twin " << twin;
  }
  const long double difference =
      std::fabs(static_cast<long double>(fast) - static_cast<long double>(twin));
  if (difference <= bound) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << std::hexfloat << "fast " << fast << " vs twin " << twin << std::defaultfloat
         << ": |difference| " << static_cast<double>(difference) << " > bound "
         << static_cast<double>(bound);
}

// Bit-for-bit equality (distinguishes −0 from +0 and compares NaN payloads).
template <class T>
bool SameBits(const T* a, const T* b, size_t n) {
  return n == 0 || std::memcmp(a, b, n * sizeof(T)) == 0;
}

template <class T>
std::string TypeName() {
  return sizeof(T) == 4 ? "f32" : "f64";
}

}  // namespace kvrt::simd_test
