// Hand-built GGUF images for hostile-input tests: every field written
// explicitly (counts, offsets, type ids), independent of GgufWriter, so a test
// can state exactly which lie a file tells.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

namespace kvrt::gguf::testing {

class GgufBytes {
 public:
  GgufBytes& U8(uint8_t v) { return Raw(&v, 1); }
  GgufBytes& U32(uint32_t v) { return Raw(&v, 4); }
  GgufBytes& U64(uint64_t v) { return Raw(&v, 8); }
  GgufBytes& F32(float v) { return Raw(&v, 4); }
  GgufBytes& Str(std::string_view s) {
    U64(s.size());
    return Raw(s.data(), s.size());
  }
  GgufBytes& Header(uint32_t version, uint64_t tensors, uint64_t kvs) {
    Raw("GGUF", 4);
    return U32(version).U64(tensors).U64(kvs);
  }
  GgufBytes& KvU32(std::string_view key, uint32_t v) { return Str(key).U32(4).U32(v); }
  GgufBytes& KvString(std::string_view key, std::string_view v) { return Str(key).U32(8).Str(v); }
  // A tensor info with ne = {ne0, ne1} (ne1 = 0: 1-D) of ggml `type` at `offset`.
  GgufBytes& Tensor(std::string_view name, std::vector<uint64_t> ne, uint32_t type, uint64_t offset) {
    Str(name).U32(static_cast<uint32_t>(ne.size()));
    for (uint64_t d : ne) U64(d);
    return U32(type).U64(offset);
  }
  GgufBytes& PadTo(size_t alignment) {
    while (bytes.size() % alignment) bytes.push_back(0);
    return *this;
  }
  GgufBytes& Zeros(size_t count) {
    bytes.insert(bytes.end(), count, 0);
    return *this;
  }
  GgufBytes& Raw(const void* data, size_t size) {
    const auto* p = static_cast<const uint8_t*>(data);
    bytes.insert(bytes.end(), p, p + size);
    return *this;
  }

  std::vector<uint8_t> bytes;
};

}  // namespace kvrt::gguf::testing
