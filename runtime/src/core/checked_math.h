// Overflow-checked size arithmetic: counts derived from configs and files are
// never allowed to wrap.
#pragma once

#include <cstddef>
#include <optional>

namespace kvrt {

inline std::optional<size_t> CheckedMul(size_t a, size_t b) {
  size_t product = 0;
  if (__builtin_mul_overflow(a, b, &product)) return std::nullopt;
  return product;
}

inline std::optional<size_t> CheckedAdd(size_t a, size_t b) {
  size_t sum = 0;
  if (__builtin_add_overflow(a, b, &sum)) return std::nullopt;
  return sum;
}

// Product of a shape's dimensions (1 for an empty shape), or nullopt on overflow.
template <class Range>
std::optional<size_t> CheckedProduct(const Range& dims) {
  size_t product = 1;
  for (size_t d : dims) {
    if (__builtin_mul_overflow(product, d, &product)) return std::nullopt;
  }
  return product;
}

// `value` rounded up to a multiple of `alignment` (> 0); the caller keeps it from
// wrapping (the sizes of buffers that already exist, offsets within a file).
inline constexpr size_t AlignUp(size_t value, size_t alignment) {
  return (value + alignment - 1) / alignment * alignment;
}

}  // namespace kvrt
