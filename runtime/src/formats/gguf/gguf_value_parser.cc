#include "formats/gguf/gguf_value_parser.h"

#include <utility>

namespace kvrt::gguf::detail {
namespace {

// An array element of type array is at least its element type and its count.
constexpr uint64_t kMinNestedArray = 4 + 8;

std::optional<size_t> ScalarSize(ValueType type) {
  switch (type) {
    case ValueType::kU8: case ValueType::kI8: case ValueType::kBool: return 1;
    case ValueType::kU16: case ValueType::kI16: return 2;
    case ValueType::kU32: case ValueType::kI32: case ValueType::kF32: return 4;
    case ValueType::kU64: case ValueType::kI64: case ValueType::kF64: return 8;
    default: return std::nullopt;
  }
}

bool KnownValueType(uint32_t type) { return type <= static_cast<uint32_t>(ValueType::kF64); }

std::string KeyContext(std::string_view key) { return "the value of metadata key " + std::string(key); }

Error InvalidBool(std::string_view key, uint64_t byte) {
  return Error(ErrorCode::kInvalidBool, {{"key", std::string(key)}, {"value", byte}},
               "metadata key " + std::string(key) + " holds the bool byte " + std::to_string(byte) +
                   " (only 0 and 1 are bools)");
}

}  // namespace

Result<ValueType> ReadValueType(Cursor& cursor, std::string_view key) {
  Result<uint32_t> type = cursor.ReadU32("the value type of metadata key " + std::string(key));
  if (!type) return Fail(std::move(type.error()));
  if (!KnownValueType(*type)) {
    return Fail(ErrorCode::kUnknownValueType, {{"key", std::string(key)}, {"type", uint64_t{*type}}},
                "metadata key " + std::string(key) + " has the unknown value type " +
                    std::to_string(*type));
  }
  return static_cast<ValueType>(*type);
}

// Array payload after its element type: a count, then the elements.
static Result<void> ParseArray(Cursor& cursor, std::string_view key, size_t depth, Value& out) {
  Result<ValueType> element = ReadValueType(cursor, key);
  if (!element) return Fail(std::move(element.error()));
  Result<uint64_t> count = cursor.ReadU64("the element count of metadata key " + std::string(key));
  if (!count) return Fail(std::move(count.error()));
  out.element_type = *element;
  out.count = *count;
  const std::string context = "array " + std::string(key);
  const size_t start = cursor.position();
  if (const std::optional<size_t> size = ScalarSize(*element)) {
    if (auto fits = cursor.RequireFits(*count, *size, context); !fits) return fits;
    if (*element == ValueType::kBool) {
      for (uint64_t i = 0; i < *count; ++i) {
        Result<uint64_t> byte = cursor.ReadUnsigned(1, context);
        if (!byte) return Fail(std::move(byte.error()));
        if (*byte > 1) return Fail(InvalidBool(key, *byte));
      }
    } else {
      cursor.Skip(*count * *size);
    }
    out.elements = cursor.Span(start);
    return {};
  }
  if (*element == ValueType::kString) {
    if (auto fits = cursor.RequireFits(*count, kMinString, context); !fits) return fits;
    if (depth == 0) out.strings.reserve(ReserveFor(*count));
    for (uint64_t i = 0; i < *count; ++i) {
      Result<std::string_view> text = cursor.ReadString("a string of " + context);
      if (!text) return Fail(std::move(text.error()));
      if (depth == 0) out.strings.push_back(*text);
    }
    out.elements = cursor.Span(start);
    return {};
  }
  // An array of arrays: validated here, its elements decoded on demand.
  if (depth + 1 >= kMaxArrayNesting) {
    return Fail(ErrorCode::kNestingTooDeep, {{"key", std::string(key)}},
                "metadata key " + std::string(key) + " nests arrays deeper than " +
                    std::to_string(kMaxArrayNesting) + " levels");
  }
  if (auto fits = cursor.RequireFits(*count, kMinNestedArray, context); !fits) return fits;
  for (uint64_t i = 0; i < *count; ++i) {
    Value inner;
    if (auto parsed = ParseValue(cursor, ValueType::kArray, key, depth + 1, inner); !parsed) return parsed;
  }
  out.elements = cursor.Span(start);
  return {};
}

Result<void> ParseValue(Cursor& cursor, ValueType type, std::string_view key, size_t depth, Value& out) {
  out.type = type;
  if (const std::optional<size_t> size = ScalarSize(type)) {
    Result<uint64_t> bits = cursor.ReadUnsigned(*size, KeyContext(key));
    if (!bits) return Fail(std::move(bits.error()));
    if (type == ValueType::kBool && *bits > 1) return Fail(InvalidBool(key, *bits));
    out.bits = *bits;
    return {};
  }
  if (type == ValueType::kString) {
    Result<std::string_view> text = cursor.ReadString(KeyContext(key));
    if (!text) return Fail(std::move(text.error()));
    out.string = *text;
    return {};
  }
  return ParseArray(cursor, key, depth, out);
}

}  // namespace kvrt::gguf::detail
