// A front-to-back reader over a fuzz input: every read succeeds, returning
// zeros once the bytes run out, so a harness never has to check for the end
// and seeds can be written by hand, field after field.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace kvrt::fuzz {

class FuzzInput {
 public:
  FuzzInput(const uint8_t* data, size_t size) : data_(data), size_(size) {}

  bool empty() const { return offset_ >= size_; }
  size_t remaining() const { return empty() ? 0 : size_ - offset_; }

  uint8_t Byte() { return empty() ? 0 : data_[offset_++]; }
  // Little-endian; each statement reads in order (operands of | would not).
  uint16_t U16() {
    const uint16_t low = Byte();
    return static_cast<uint16_t>(low | Byte() << 8);
  }
  uint32_t U32() {
    const uint32_t low = U16();
    return low | uint32_t{U16()} << 16;
  }
  uint64_t U64() {
    const uint64_t low = U32();
    return low | uint64_t{U32()} << 32;
  }
  // A value in [0, count) (0 when count is 0).
  size_t Below(size_t count) { return count == 0 ? 0 : Byte() % count; }
  bool Bit() { return Byte() & 1; }

  // Up to `length` bytes (fewer at the end of the input).
  std::string String(size_t length) {
    const size_t take = length < remaining() ? length : remaining();
    std::string text(reinterpret_cast<const char*>(data_ + offset_), take);
    offset_ += take;
    return text;
  }
  std::string_view Rest() {
    const size_t take = remaining();
    std::string_view text(reinterpret_cast<const char*>(data_ + offset_), take);
    offset_ += take;
    return text;
  }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t offset_ = 0;
};

}  // namespace kvrt::fuzz
