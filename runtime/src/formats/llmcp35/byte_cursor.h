// A bounds-checked little-endian reader over one byte range (the reference's
// checkpoint Reader). Every read names the field it reads, which becomes the
// context of Truncated / InvalidUtf8 errors. Lengths and counts from the file are
// checked against the bytes that remain before anything is allocated for them.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "formats/byte_order.h"
#include "formats/llmcp35/checkpoint_errors.h"
#include "formats/llmcp35/layout.h"
#include "kvrt/error.h"
#include "kvrt/tokenizer.h"

namespace kvrt::llmcp35 {

class ByteCursor {
 public:
  explicit ByteCursor(std::span<const uint8_t> bytes) : bytes_(bytes) {}

  size_t remaining() const { return bytes_.size() - position_; }
  bool empty() const { return position_ == bytes_.size(); }

  Result<std::span<const uint8_t>> Take(size_t width, std::string_view context) {
    if (width > remaining()) return Fail(Truncated(context));
    std::span<const uint8_t> taken = bytes_.subspan(position_, width);
    position_ += width;
    return taken;
  }

  Result<uint8_t> U8(std::string_view context) { return Integer<uint8_t>(context); }
  Result<uint16_t> U16(std::string_view context) { return Integer<uint16_t>(context); }
  Result<uint32_t> U32(std::string_view context) { return Integer<uint32_t>(context); }
  Result<uint64_t> U64(std::string_view context) { return Integer<uint64_t>(context); }

  Result<double> F64(std::string_view context) {
    Result<std::span<const uint8_t>> bytes = Take(8, context);
    if (!bytes) return Fail(std::move(bytes.error()));
    return LoadF64(bytes->data());
  }

  // A u64 size converted to size_t (SizeOverflow only where size_t is narrower).
  Result<size_t> Size(std::string_view context) {
    Result<uint64_t> value = U64(context);
    if (!value) return Fail(std::move(value.error()));
    if constexpr (sizeof(size_t) < sizeof(uint64_t)) {
      if (*value > std::numeric_limits<size_t>::max()) return Fail(SizeOverflow(context));
    }
    return static_cast<size_t>(*value);
  }

  // A u32 count.
  Result<size_t> Count(std::string_view context) {
    Result<uint32_t> value = U32(context);
    if (!value) return Fail(std::move(value.error()));
    return size_t{*value};
  }

  // u32 byte length, then that many bytes of strict UTF-8.
  Result<std::string> String(std::string_view context) {
    Result<size_t> width = Count(context);
    if (!width) return Fail(std::move(width.error()));
    Result<std::span<const uint8_t>> bytes = Take(*width, context);
    if (!bytes) return Fail(std::move(bytes.error()));
    std::string text(reinterpret_cast<const char*>(bytes->data()), bytes->size());
    if (ValidateUtf8(text)) return Fail(InvalidUtf8Field(context));
    return text;
  }

  // u32 count, then that many strings. The reservation is capped by the strings
  // the remaining bytes could hold, so a huge count costs nothing before the
  // reads run out of bytes.
  Result<std::vector<std::string>> Names(std::string_view context) {
    Result<size_t> count = Count(context);
    if (!count) return Fail(std::move(count.error()));
    std::vector<std::string> names;
    names.reserve(std::min(*count, remaining() / kMinStringBytes));
    for (size_t i = 0; i < *count; ++i) {
      Result<std::string> name = String(context);
      if (!name) return Fail(std::move(name.error()));
      names.push_back(std::move(*name));
    }
    return names;
  }

 private:
  template <class T>
  Result<T> Integer(std::string_view context) {
    Result<std::span<const uint8_t>> bytes = Take(sizeof(T), context);
    if (!bytes) return Fail(std::move(bytes.error()));
    return LoadLittleEndian<T>(bytes->data());
  }

  std::span<const uint8_t> bytes_;
  size_t position_ = 0;
};

}  // namespace kvrt::llmcp35
