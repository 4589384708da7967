// Little-endian integers and doubles built from bytes (spec/checkpoint.md §0).
// Payloads start at arbitrary offsets, so values are always memcpy'd out of the
// buffer and never read through a cast pointer.
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

namespace kvrt::llmcp35 {

template <class T>
T LoadLittleEndian(const uint8_t* bytes) {
  static_assert(std::is_unsigned_v<T>);
  T value;
  std::memcpy(&value, bytes, sizeof value);
  if constexpr (std::endian::native == std::endian::big) value = std::byteswap(value);
  return value;
}

inline double LoadF64(const uint8_t* bytes) {
  return std::bit_cast<double>(LoadLittleEndian<uint64_t>(bytes));
}

template <class T>
void AppendLittleEndian(std::vector<uint8_t>& out, T value) {
  static_assert(std::is_unsigned_v<T>);
  if constexpr (std::endian::native == std::endian::big) value = std::byteswap(value);
  uint8_t bytes[sizeof value];
  std::memcpy(bytes, &value, sizeof value);
  out.insert(out.end(), bytes, bytes + sizeof value);
}

// The f64 bit pattern, so -0.0 and every NaN payload survive unchanged.
inline void AppendF64(std::vector<uint8_t>& out, double value) {
  AppendLittleEndian(out, std::bit_cast<uint64_t>(value));
}

}  // namespace kvrt::llmcp35
