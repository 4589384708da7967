// GgufFile's lookups over the validated tables.
#include <new>
#include <utility>

#include "formats/gguf/gguf_file.h"
#include "formats/gguf/gguf_value_parser.h"

namespace kvrt::gguf {

std::string_view ValueTypeName(ValueType type) {
  static constexpr std::string_view kNames[] = {"u8",  "i8",     "u16",   "i16", "u32", "i32", "f32",
                                                "bool", "string", "array", "u64", "i64", "f64"};
  const auto index = static_cast<size_t>(type);
  return index < std::size(kNames) ? kNames[index] : std::string_view("unknown");
}

std::optional<int64_t> Value::AsSigned() const {
  switch (type) {
    case ValueType::kI8: return static_cast<int8_t>(bits);
    case ValueType::kI16: return static_cast<int16_t>(bits);
    case ValueType::kI32: return static_cast<int32_t>(bits);
    case ValueType::kI64: return static_cast<int64_t>(bits);
    case ValueType::kU8: case ValueType::kU16: case ValueType::kU32: return static_cast<int64_t>(bits);
    case ValueType::kU64:
      if (bits > uint64_t{INT64_MAX}) return std::nullopt;
      return static_cast<int64_t>(bits);
    default: return std::nullopt;
  }
}

std::optional<uint64_t> Value::AsUnsigned() const {
  switch (type) {
    case ValueType::kU8: case ValueType::kU16: case ValueType::kU32: case ValueType::kU64: return bits;
    case ValueType::kI8: case ValueType::kI16: case ValueType::kI32: case ValueType::kI64: {
      const std::optional<int64_t> s = AsSigned();
      if (*s < 0) return std::nullopt;
      return static_cast<uint64_t>(*s);
    }
    default: return std::nullopt;
  }
}

const Value* GgufFile::Find(std::string_view key) const {
  const auto found = key_index_.find(key);
  return found == key_index_.end() ? nullptr : &metadata_[found->second].value;
}

const TensorInfo* GgufFile::FindTensor(std::string_view name) const {
  const auto found = tensor_index_.find(name);
  return found == tensor_index_.end() ? nullptr : &tensors_[found->second];
}

Result<const Value*> GgufFile::Lookup(std::string_view key, bool required) const {
  const Value* value = Find(key);
  if (value == nullptr && required) {
    return Fail(ErrorCode::kMissingKey, {{"key", std::string(key)}},
                "metadata key " + std::string(key) + " is missing from " + path());
  }
  return value;
}

Error GgufFile::TypeMismatch(std::string_view key, std::string_view expected, const Value& value) const {
  std::string actual(ValueTypeName(value.type));
  if (value.type == ValueType::kArray) actual = std::string(ValueTypeName(value.element_type)) + "[]";
  return Error(ErrorCode::kKeyTypeMismatch,
               {{"key", std::string(key)}, {"expected", std::string(expected)}, {"actual", actual}},
               "metadata key " + std::string(key) + " is a " + actual + ", expected " + std::string(expected));
}

Result<std::span<const std::string_view>> GgufFile::GetStringArray(std::string_view key) const {
  Result<const Value*> value = Lookup(key, true);
  if (!value) return Fail(std::move(value.error()));
  if ((*value)->type != ValueType::kArray || (*value)->element_type != ValueType::kString) {
    return Fail(TypeMismatch(key, "string[]", **value));
  }
  return std::span<const std::string_view>((*value)->strings);
}

Result<std::vector<Value>> GgufFile::ArrayElements(const Value& array) const try {
  std::vector<Value> elements;
  if (array.type != ValueType::kArray) return elements;
  // The bytes were validated at Open, so decoding them again cannot fail.
  detail::Cursor cursor(array.elements);
  elements.resize(array.count);
  for (Value& element : elements) {
    if (auto parsed = detail::ParseValue(cursor, array.element_type, "array element", 0, element); !parsed) {
      return Fail(std::move(parsed.error()));
    }
  }
  return elements;
} catch (const std::bad_alloc&) {
  return Fail(ErrorCode::kAllocationFailed, {}, "could not allocate the elements of an array");
}

}  // namespace kvrt::gguf
