// The GGUF parser: one pass over the mapping with a bounds-checked cursor. Every
// count read from the file is compared with the bytes left (divided by the
// smallest encoding of one item) before it sizes a container.
#include "formats/gguf/gguf_file.h"

#include <algorithm>
#include <bit>
#include <new>
#include <numeric>
#include <utility>

#include "checked_math.h"

namespace kvrt::gguf {
namespace {

constexpr uint32_t kMagic = 0x46554747;  // "GGUF" read as a little-endian u32
// Smallest encodings: a string is its u64 length; a metadata entry is an empty
// key, a type and a one-byte value; a tensor info an empty name, n_dims, one
// dimension, a type and an offset; an array element of type array is a type and
// a count.
constexpr uint64_t kMinString = 8;
constexpr uint64_t kMinEntry = kMinString + 4 + 1;
constexpr uint64_t kMinTensorInfo = kMinString + 4 + 8 + 4 + 8;
constexpr uint64_t kMinNestedArray = 4 + 8;
// Tables are reserved up to this many entries; past it they grow with the
// entries actually parsed. A count is already bounded by the bytes left, but a
// table entry is several times larger than its smallest encoding, so reserving
// the whole count up front would let a short, lying file claim that multiple.
constexpr uint64_t kMaxReserve = 1 << 16;

size_t ReserveFor(uint64_t count) { return static_cast<size_t>(std::min(count, kMaxReserve)); }

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

std::string KeyContext(std::string_view key) { return "the value of metadata key " + std::string(key); }

Error InvalidBool(std::string_view key, uint64_t byte) {
  return Error(ErrorCode::kInvalidBool, {{"key", std::string(key)}, {"value", byte}},
               "metadata key " + std::string(key) + " holds the bool byte " + std::to_string(byte) +
                   " (only 0 and 1 are bools)");
}

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

Result<void> ParseValue(Cursor& cursor, ValueType type, std::string_view key, size_t depth, Value& out);

// Array payload after its element type: a count, then the elements.
Result<void> ParseArray(Cursor& cursor, std::string_view key, size_t depth, Value& out) {
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

// One value of `type` (already read). Arrays below the top level keep no string
// views: ArrayElements decodes them again when asked.
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

}  // namespace

// Parsing steps, in file order; friends with GgufFile to fill it in.
class GgufParser {
 public:
  explicit GgufParser(GgufFile& file) : file_(file), cursor_(file.mapping_->bytes()) {}

  Result<void> Run() {
    if (auto header = Header(); !header) return header;
    if (auto metadata = Metadata(); !metadata) return metadata;
    if (auto alignment = Alignment(); !alignment) return alignment;
    if (auto infos = TensorInfos(); !infos) return infos;
    return TensorExtents();
  }

 private:
  Result<void> Header() {
    Result<uint32_t> magic = cursor_.ReadU32("the GGUF magic");
    if (!magic) return Fail(std::move(magic.error()));
    if (*magic != kMagic) {
      return Fail(ErrorCode::kInvalidMagic, {{"magic", uint64_t{*magic}}},
                  file_.path() + " does not start with the GGUF magic \"GGUF\"");
    }
    Result<uint32_t> version = cursor_.ReadU32("the GGUF version");
    if (!version) return Fail(std::move(version.error()));
    if (*version != 2 && *version != 3) {
      // A big-endian file stores its version byte-swapped (0x03000000).
      const uint32_t swapped = std::byteswap(*version);
      if (swapped == 2 || swapped == 3) {
        return Fail(ErrorCode::kUnsupportedEndianness, {{"version", uint64_t{swapped}}},
                    file_.path() + " is a big-endian GGUF file; kvrt reads little-endian GGUF only");
      }
      return Fail(ErrorCode::kUnsupportedVersion, {{"version", uint64_t{*version}}},
                  file_.path() + " is GGUF version " + std::to_string(*version) +
                      "; kvrt reads versions 2 and 3");
    }
    file_.version_ = *version;
    Result<uint64_t> tensors = cursor_.ReadU64("the GGUF tensor count");
    if (!tensors) return Fail(std::move(tensors.error()));
    Result<uint64_t> entries = cursor_.ReadU64("the GGUF metadata count");
    if (!entries) return Fail(std::move(entries.error()));
    tensor_count_ = *tensors;
    entry_count_ = *entries;
    return {};
  }

  Result<void> Metadata() {
    if (auto fits = cursor_.RequireFits(entry_count_, kMinEntry, "the metadata table"); !fits) return fits;
    file_.metadata_.reserve(ReserveFor(entry_count_));
    file_.key_index_.reserve(ReserveFor(entry_count_));
    for (uint64_t i = 0; i < entry_count_; ++i) {
      Result<std::string_view> key = cursor_.ReadString("metadata key " + std::to_string(i));
      if (!key) return Fail(std::move(key.error()));
      Result<ValueType> type = ReadValueType(cursor_, *key);
      if (!type) return Fail(std::move(type.error()));
      MetadataEntry entry{*key, {}};
      if (auto value = ParseValue(cursor_, *type, *key, 0, entry.value); !value) return value;
      if (!file_.key_index_.emplace(*key, file_.metadata_.size()).second) {
        return Fail(ErrorCode::kDuplicateKey, {{"key", std::string(*key)}},
                    "metadata key " + std::string(*key) + " appears more than once");
      }
      file_.metadata_.push_back(std::move(entry));
    }
    return {};
  }

  Result<void> Alignment() {
    const Value* value = file_.Find("general.alignment");
    if (value == nullptr) return {};
    if (value->type != ValueType::kU32 || value->bits == 0 || !std::has_single_bit(value->bits)) {
      return Fail(ErrorCode::kInvalidAlignment, {{"key", std::string("general.alignment")}},
                  "general.alignment must be a u32 power of two, got a " +
                      std::string(ValueTypeName(value->type)) + " of value " + std::to_string(value->bits));
    }
    file_.alignment_ = static_cast<uint32_t>(value->bits);
    return {};
  }

  Result<void> TensorInfos() {
    if (auto fits = cursor_.RequireFits(tensor_count_, kMinTensorInfo, "the tensor table"); !fits) return fits;
    file_.tensors_.reserve(ReserveFor(tensor_count_));
    file_.tensor_index_.reserve(ReserveFor(tensor_count_));
    for (uint64_t i = 0; i < tensor_count_; ++i) {
      TensorInfo info;
      if (auto read = TensorInfoAt(i, info); !read) return read;
      if (!file_.tensor_index_.emplace(info.name, file_.tensors_.size()).second) {
        return Fail(ErrorCode::kDuplicateTensor, {{"tensor", std::string(info.name)}},
                    "tensor " + std::string(info.name) + " appears more than once");
      }
      file_.tensors_.push_back(info);
    }
    return {};
  }

  Result<void> TensorInfoAt(uint64_t index, TensorInfo& info) {
    Result<std::string_view> name = cursor_.ReadString("the name of tensor " + std::to_string(index));
    if (!name) return Fail(std::move(name.error()));
    info.name = *name;
    const std::string tensor(*name);
    Result<uint32_t> n_dims = cursor_.ReadU32("the n_dims of tensor " + tensor);
    if (!n_dims) return Fail(std::move(n_dims.error()));
    if (*n_dims == 0 || *n_dims > kMaxDimensions) {
      return Fail(ErrorCode::kTooManyDimensions, {{"tensor", tensor}, {"n_dims", uint64_t{*n_dims}}},
                  "tensor " + tensor + " has " + std::to_string(*n_dims) + " dimensions (1 to 4 allowed)");
    }
    info.n_dims = *n_dims;
    for (size_t d = 0; d < info.n_dims; ++d) {
      Result<uint64_t> ne = cursor_.ReadU64("the dimensions of tensor " + tensor);
      if (!ne) return Fail(std::move(ne.error()));
      if (*ne == 0 || *ne > uint64_t{INT64_MAX}) {
        return Fail(ErrorCode::kInvalidTensorShape, {{"tensor", tensor}, {"dimension", uint64_t{d}}},
                    "tensor " + tensor + " has dimension " + std::to_string(d) + " = " +
                        std::to_string(*ne) + " (must be 1 to 2^63-1)");
      }
      info.ne[d] = *ne;
    }
    Result<uint32_t> type = cursor_.ReadU32("the type of tensor " + tensor);
    if (!type) return Fail(std::move(type.error()));
    const std::optional<GgmlTypeInfo> traits = FindGgmlType(*type);
    if (!traits) {
      return Fail(ErrorCode::kUnknownDType, {{"tensor", tensor}, {"type", uint64_t{*type}}},
                  "tensor " + tensor + " has the unknown ggml type number " + std::to_string(*type));
    }
    info.type = traits->type;
    Result<uint64_t> offset = cursor_.ReadU64("the offset of tensor " + tensor);
    if (!offset) return Fail(std::move(offset.error()));
    info.offset = *offset;
    return Sizes(tensor, *traits, info);
  }

  static Result<void> Sizes(const std::string& tensor, const GgmlTypeInfo& traits, TensorInfo& info) {
    if (info.ne[0] % traits.block_elements != 0) {
      return Fail(ErrorCode::kInvalidTensorShape, {{"tensor", tensor}, {"dimension", uint64_t{0}}},
                  "tensor " + tensor + " has rows of " + std::to_string(info.ne[0]) + " elements, not whole " +
                      std::string(traits.name) + " blocks of " + std::to_string(traits.block_elements));
    }
    const std::optional<size_t> elements = CheckedProduct(std::span(info.ne).first(info.n_dims));
    const std::optional<size_t> row = RowBytes(info.type, info.ne[0]);
    const std::optional<size_t> rows = CheckedProduct(std::span(info.ne).subspan(1, info.n_dims - 1));
    const std::optional<size_t> bytes = row && rows ? CheckedMul(*row, *rows) : std::nullopt;
    if (!elements || !bytes || *elements > uint64_t{INT64_MAX}) {
      return Fail(ErrorCode::kSizeOverflow, {{"context", "tensor " + tensor}},
                  "the element count or byte size of tensor " + tensor + " overflows");
    }
    info.elements = *elements;
    info.bytes = *bytes;
    return {};
  }

  Result<void> TensorExtents() {
    const uint64_t end_of_infos = cursor_.position();
    const uint64_t alignment = file_.alignment_;
    const std::span<const uint8_t> bytes = file_.mapping_->bytes();
    const uint64_t data_offset = (end_of_infos + alignment - 1) / alignment * alignment;
    file_.data_offset_ = data_offset;
    const uint64_t data_size = data_offset <= bytes.size() ? bytes.size() - data_offset : 0;
    for (TensorInfo& info : file_.tensors_) {
      const std::string tensor(info.name);
      if (info.offset % alignment != 0) {
        return Fail(ErrorCode::kMisalignedTensor, {{"tensor", tensor}, {"offset", info.offset}},
                    "tensor " + tensor + " starts at data offset " + std::to_string(info.offset) +
                        ", not a multiple of the alignment " + std::to_string(alignment));
      }
      if (info.offset > data_size || info.bytes > data_size - info.offset) {
        return Fail(ErrorCode::kFileExtent,
                    {{"tensor", tensor}, {"offset", info.offset}, {"bytes", info.bytes}, {"data_bytes", data_size}},
                    "tensor " + tensor + " (" + std::to_string(info.bytes) + " bytes at data offset " +
                        std::to_string(info.offset) + ") extends past the end of " + file_.path());
      }
      info.data = bytes.subspan(data_offset + info.offset, info.bytes);
    }
    return CheckOverlaps();
  }

  Result<void> CheckOverlaps() {
    std::vector<size_t> order(file_.tensors_.size());
    std::iota(order.begin(), order.end(), size_t{0});
    const std::vector<TensorInfo>& t = file_.tensors_;
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return t[a].offset < t[b].offset; });
    for (size_t i = 1; i < order.size(); ++i) {
      const TensorInfo &first = t[order[i - 1]], &second = t[order[i]];
      if (first.offset + first.bytes > second.offset) {
        return Fail(ErrorCode::kOverlappingTensors,
                    {{"first", std::string(first.name)}, {"second", std::string(second.name)}},
                    "tensors " + std::string(first.name) + " and " + std::string(second.name) + " overlap");
      }
    }
    return {};
  }

  GgufFile& file_;
  Cursor cursor_;
  uint64_t tensor_count_ = 0;
  uint64_t entry_count_ = 0;
};

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

Result<GgufFile> GgufFile::Open(const std::string& path) {
  Result<std::shared_ptr<const FileMapping>> mapping = FileMapping::Open(path);
  if (!mapping) return Fail(std::move(mapping.error()));
  return Parse(std::move(*mapping));
}

Result<GgufFile> GgufFile::Parse(std::shared_ptr<const FileMapping> mapping) try {
  GgufFile file;
  file.mapping_ = std::move(mapping);
  GgufParser parser(file);
  if (auto parsed = parser.Run(); !parsed) return Fail(std::move(parsed.error()));
  return file;
} catch (const std::bad_alloc&) {
  return Fail(ErrorCode::kAllocationFailed, {}, "could not allocate the GGUF tables");
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
  Cursor cursor(array.elements);
  elements.resize(array.count);
  for (Value& element : elements) {
    if (auto parsed = ParseValue(cursor, array.element_type, "array element", 0, element); !parsed) {
      return Fail(std::move(parsed.error()));
    }
  }
  return elements;
} catch (const std::bad_alloc&) {
  return Fail(ErrorCode::kAllocationFailed, {}, "could not allocate the elements of an array");
}

}  // namespace kvrt::gguf
