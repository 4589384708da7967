// GgufFile: the container of llama.cpp models (GGUF versions 2 and 3,
// little-endian), read into memory (file_mapping.h) and validated completely
// before anything uses it.
//
// Layout: "GGUF", u32 version, u64 tensor_count, u64 kv_count; kv_count metadata
// entries (string key, u32 value type, value); tensor_count tensor infos (string
// name, u32 n_dims ≤ 4, n_dims × u64 ne, u32 ggml type, u64 offset); padding to
// `general.alignment` (default 32); the tensor data, each tensor at data_offset +
// offset. A string is a u64 byte length and that many bytes (no terminator); an
// array is a u32 element type, a u64 count and the elements.
//
// Open() checks every count and length against the bytes that remain before
// allocating anything sized by it (a string takes ≥ 8 bytes, an array element at
// least its smallest encoding), dimension products with overflow checks, tensor
// extents, alignment, overlaps, duplicate keys and names, type ids and bools.
// Keys, names and strings are std::string_view into the mapping, which every
// GgufFile copy shares: nothing large is copied.
#pragma once

#include <array>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "formats/gguf/file_mapping.h"
#include "formats/gguf/tensor_types.h"
#include "kvrt/error.h"

namespace kvrt::gguf {

inline constexpr uint32_t kDefaultAlignment = 32;
inline constexpr size_t kMaxDimensions = 4;
// Arrays of arrays deeper than this are refused (llama.cpp uses none at all), so
// validation recursion stays shallow whatever the file says.
inline constexpr size_t kMaxArrayNesting = 4;

enum class ValueType : uint32_t {
  kU8 = 0, kI8 = 1, kU16 = 2, kI16 = 3, kU32 = 4, kI32 = 5, kF32 = 6, kBool = 7,
  kString = 8, kArray = 9, kU64 = 10, kI64 = 11, kF64 = 12,
};
std::string_view ValueTypeName(ValueType type);  // "u32", "string", "array", ...

// Little-endian elements of a scalar array, read in place (the mapping gives no
// alignment guarantee, so elements are memcpy'd out rather than cast).
template <class T>
class ScalarArrayView {
 public:
  ScalarArrayView() = default;
  explicit ScalarArrayView(std::span<const uint8_t> bytes) : bytes_(bytes) {}
  size_t size() const { return bytes_.size() / sizeof(T); }
  T operator[](size_t i) const {
    T value;
    std::memcpy(&value, bytes_.data() + i * sizeof(T), sizeof(T));
    return value;
  }

 private:
  std::span<const uint8_t> bytes_;
};

// One metadata value. Scalars keep their bits; strings and arrays point into the
// mapping. An array of strings also holds one view per element.
struct Value {
  ValueType type = ValueType::kU8;
  uint64_t bits = 0;                   // scalars: the value's bytes, zero-extended
  std::string_view string;             // kString
  ValueType element_type = ValueType::kU8;  // kArray
  uint64_t count = 0;                       // kArray: number of elements
  std::span<const uint8_t> elements;        // kArray: the encoded elements
  std::vector<std::string_view> strings;    // kArray of kString

  // The integer value of any integer type (not bool), or nullopt.
  std::optional<int64_t> AsSigned() const;
  std::optional<uint64_t> AsUnsigned() const;
};

struct MetadataEntry {
  std::string_view key;
  Value value;
};

struct TensorInfo {
  std::string_view name;
  size_t n_dims = 0;
  std::array<uint64_t, kMaxDimensions> ne{1, 1, 1, 1};  // ne[0] is contiguous
  GgmlType type = GgmlType::kF32;
  uint64_t offset = 0;    // from the start of the data section
  uint64_t elements = 0;  // product of ne
  uint64_t bytes = 0;     // encoded size
  std::span<const uint8_t> data;  // the tensor's bytes in the mapping
};

class GgufFile {
 public:
  // Maps and validates `path`. Errors: Io, NotRegularFile, Truncated{context},
  // InvalidMagic, UnsupportedVersion{version}, UnsupportedEndianness,
  // CountExceedsFile{context, count, remaining}, UnknownValueType{key, type},
  // NestingTooDeep{key}, InvalidBool{key}, DuplicateKey{key}, InvalidAlignment,
  // TooManyDimensions{tensor}, InvalidTensorShape{tensor}, SizeOverflow{context},
  // UnknownDType{tensor, type}, DuplicateTensor{tensor}, MisalignedTensor{tensor},
  // FileExtent{tensor}, OverlappingTensors{first, second}, AllocationFailed.
  static Result<GgufFile> Open(const std::string& path);
  // The same checks over an existing mapping.
  static Result<GgufFile> Parse(std::shared_ptr<const FileMapping> mapping);

  uint32_t version() const { return version_; }
  uint32_t alignment() const { return alignment_; }
  uint64_t data_offset() const { return data_offset_; }
  const std::string& path() const { return mapping_->path(); }
  const std::shared_ptr<const FileMapping>& mapping() const { return mapping_; }
  const std::vector<MetadataEntry>& metadata() const { return metadata_; }
  const std::vector<TensorInfo>& tensors() const { return tensors_; }

  const Value* Find(std::string_view key) const;
  const TensorInfo* FindTensor(std::string_view name) const;

  // Typed lookups. T: an integer type (any stored integer type is accepted when
  // the value fits, else KeyValueOutOfRange{key, value}), float (f32), double
  // (f32 or f64), bool or std::string_view. MissingKey{key}, KeyTypeMismatch{key,
  // expected, actual}.
  template <class T>
  Result<T> Get(std::string_view key) const;
  // Like Get, but nullopt for an absent key (a present key of the wrong type
  // still fails).
  template <class T>
  Result<std::optional<T>> GetOptional(std::string_view key) const;

  // Array views: KeyTypeMismatch unless the key is an array of that element type.
  Result<std::span<const std::string_view>> GetStringArray(std::string_view key) const;
  template <class T>
  Result<ScalarArrayView<T>> GetArray(std::string_view key) const;

  // The elements of an array value as separate values (for arrays of arrays).
  Result<std::vector<Value>> ArrayElements(const Value& array) const;

 private:
  GgufFile() = default;
  Result<const Value*> Lookup(std::string_view key, bool required) const;
  Error TypeMismatch(std::string_view key, std::string_view expected, const Value& value) const;
  template <class T>
  Result<T> Convert(std::string_view key, const Value& value) const;

  std::shared_ptr<const FileMapping> mapping_;
  uint32_t version_ = 0;
  uint32_t alignment_ = kDefaultAlignment;
  uint64_t data_offset_ = 0;
  std::vector<MetadataEntry> metadata_;
  std::vector<TensorInfo> tensors_;
  std::unordered_map<std::string_view, size_t> key_index_;
  std::unordered_map<std::string_view, size_t> tensor_index_;

  friend class GgufParser;
};

// ---- template definitions ----

template <class T>
Result<T> GgufFile::Convert(std::string_view key, const Value& value) const {
  if constexpr (std::is_same_v<T, bool>) {
    if (value.type != ValueType::kBool) return Fail(TypeMismatch(key, "bool", value));
    return value.bits != 0;
  } else if constexpr (std::is_integral_v<T>) {
    if constexpr (std::is_signed_v<T>) {
      const std::optional<int64_t> v = value.AsSigned();
      if (!v) {
        if (value.AsUnsigned()) {  // an unsigned value above INT64_MAX
          return Fail(ErrorCode::kKeyValueOutOfRange, {{"key", std::string(key)}},
                      "metadata key " + std::string(key) + " holds a value too large for its use");
        }
        return Fail(TypeMismatch(key, "an integer", value));
      }
      if (*v < static_cast<int64_t>(std::numeric_limits<T>::min()) ||
          *v > static_cast<int64_t>(std::numeric_limits<T>::max())) {
        return Fail(ErrorCode::kKeyValueOutOfRange, {{"key", std::string(key)}, {"value", *v}},
                    "metadata key " + std::string(key) + " = " + std::to_string(*v) +
                        " does not fit its use");
      }
      return static_cast<T>(*v);
    } else {
      const std::optional<uint64_t> v = value.AsUnsigned();
      if (!v) {
        if (const std::optional<int64_t> s = value.AsSigned()) {  // negative
          return Fail(ErrorCode::kKeyValueOutOfRange, {{"key", std::string(key)}, {"value", *s}},
                      "metadata key " + std::string(key) + " = " + std::to_string(*s) +
                          " is negative");
        }
        return Fail(TypeMismatch(key, "an integer", value));
      }
      if (*v > static_cast<uint64_t>(std::numeric_limits<T>::max())) {
        return Fail(ErrorCode::kKeyValueOutOfRange, {{"key", std::string(key)}, {"value", *v}},
                    "metadata key " + std::string(key) + " = " + std::to_string(*v) +
                        " does not fit its use");
      }
      return static_cast<T>(*v);
    }
  } else if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
    if (value.type == ValueType::kF32) {
      uint32_t bits = static_cast<uint32_t>(value.bits);
      float f;
      std::memcpy(&f, &bits, sizeof f);
      return static_cast<T>(f);
    }
    if (std::is_same_v<T, double> && value.type == ValueType::kF64) {
      double d;
      std::memcpy(&d, &value.bits, sizeof d);
      return static_cast<T>(d);
    }
    return Fail(TypeMismatch(key, std::is_same_v<T, float> ? "f32" : "f32 or f64", value));
  } else {
    static_assert(std::is_same_v<T, std::string_view>, "unsupported metadata lookup type");
    if (value.type != ValueType::kString) return Fail(TypeMismatch(key, "string", value));
    return value.string;
  }
}

template <class T>
Result<T> GgufFile::Get(std::string_view key) const {
  Result<const Value*> value = Lookup(key, true);
  if (!value) return Fail(std::move(value.error()));
  return Convert<T>(key, **value);
}

template <class T>
Result<std::optional<T>> GgufFile::GetOptional(std::string_view key) const {
  Result<const Value*> value = Lookup(key, false);
  if (!value) return Fail(std::move(value.error()));
  if (*value == nullptr) return std::optional<T>();
  Result<T> converted = Convert<T>(key, **value);
  if (!converted) return Fail(std::move(converted.error()));
  return std::optional<T>(*converted);
}

template <class T>
constexpr ValueType ElementTypeOf() {
  if constexpr (std::is_same_v<T, uint8_t>) return ValueType::kU8;
  else if constexpr (std::is_same_v<T, int8_t>) return ValueType::kI8;
  else if constexpr (std::is_same_v<T, uint16_t>) return ValueType::kU16;
  else if constexpr (std::is_same_v<T, int16_t>) return ValueType::kI16;
  else if constexpr (std::is_same_v<T, uint32_t>) return ValueType::kU32;
  else if constexpr (std::is_same_v<T, int32_t>) return ValueType::kI32;
  else if constexpr (std::is_same_v<T, float>) return ValueType::kF32;
  else if constexpr (std::is_same_v<T, uint64_t>) return ValueType::kU64;
  else if constexpr (std::is_same_v<T, int64_t>) return ValueType::kI64;
  else {
    static_assert(std::is_same_v<T, double>, "unsupported array element type");
    return ValueType::kF64;
  }
}

template <class T>
Result<ScalarArrayView<T>> GgufFile::GetArray(std::string_view key) const {
  Result<const Value*> value = Lookup(key, true);
  if (!value) return Fail(std::move(value.error()));
  constexpr ValueType element = ElementTypeOf<T>();
  if ((*value)->type != ValueType::kArray || (*value)->element_type != element) {
    return Fail(TypeMismatch(key, std::string(ValueTypeName(element)) + "[]", **value));
  }
  return ScalarArrayView<T>((*value)->elements);
}

}  // namespace kvrt::gguf
