// Metadata values of a GGUF file: a bounds-checked little-endian cursor over
// the mapping and the parser of one value of any type (arrays included), shared
// by GgufFile's parser and by ArrayElements, which decodes nested arrays again
// on demand.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "formats/gguf/gguf_file.h"
#include "kvrt/error.h"

namespace kvrt::gguf::detail {

// The smallest encoding of a string: its u64 length.
inline constexpr uint64_t kMinString = 8;

// Bounds-checked little-endian reads over the mapping.
class Cursor {
 public:
  explicit Cursor(std::span<const uint8_t> bytes, size_t position = 0)
      : bytes_(bytes), position_(position) {}
  size_t position() const { return position_; }
  uint64_t remaining() const { return bytes_.size() - position_; }

  Result<uint64_t> ReadUnsigned(size_t size, std::string_view context) {
    if (remaining() < size) {
      return Fail(ErrorCode::kTruncated,
                  {{"context", std::string(context)}, {"offset", uint64_t{position_}}},
                  "the file ends inside " + std::string(context) + " (at byte " +
                      std::to_string(position_) + ")");
    }
    uint64_t value = 0;
    for (size_t i = 0; i < size; ++i) value |= uint64_t{bytes_[position_ + i]} << (8 * i);
    position_ += size;
    return value;
  }
  Result<uint32_t> ReadU32(std::string_view context) {
    Result<uint64_t> v = ReadUnsigned(4, context);
    if (!v) return Fail(std::move(v.error()));
    return static_cast<uint32_t>(*v);
  }
  Result<uint64_t> ReadU64(std::string_view context) { return ReadUnsigned(8, context); }

  // A declared count of items of at least `min_size` bytes each must fit in what
  // is left; checked before anything is sized by it.
  Result<void> RequireFits(uint64_t count, uint64_t min_size, std::string_view context) const {
    if (count <= remaining() / min_size) return {};
    return Fail(ErrorCode::kCountExceedsFile,
                {{"context", std::string(context)}, {"count", count}, {"remaining", remaining()}},
                std::string(context) + " declares " + std::to_string(count) + " items of at least " +
                    std::to_string(min_size) + " bytes, but only " + std::to_string(remaining()) +
                    " bytes remain");
  }

  Result<std::string_view> ReadString(std::string_view context) {
    Result<uint64_t> length = ReadU64(context);
    if (!length) return Fail(std::move(length.error()));
    if (auto fits = RequireFits(*length, 1, context); !fits) return Fail(std::move(fits.error()));
    const std::string_view text(reinterpret_cast<const char*>(bytes_.data() + position_), *length);
    position_ += *length;
    return text;
  }

  std::span<const uint8_t> Span(size_t from) const { return bytes_.subspan(from, position_ - from); }
  void Skip(uint64_t bytes) { position_ += bytes; }  // after RequireFits

 private:
  std::span<const uint8_t> bytes_;
  size_t position_;
};

Result<ValueType> ReadValueType(Cursor& cursor, std::string_view key);

// One value of `type` (already read) for metadata key `key`, at array nesting
// `depth` (0 for the entry itself). Arrays below the top level keep no string
// views: ArrayElements decodes them again when asked.
Result<void> ParseValue(Cursor& cursor, ValueType type, std::string_view key, size_t depth, Value& out);

// Reservations are capped at this many entries; past it containers grow with the
// entries actually parsed. A count is already bounded by the bytes left, but an
// entry in memory is several times larger than its smallest encoding, so
// reserving the whole count up front would let a short, lying file claim that
// multiple.
inline size_t ReserveFor(uint64_t count) { return static_cast<size_t>(count < (1u << 16) ? count : (1u << 16)); }

}  // namespace kvrt::gguf::detail
