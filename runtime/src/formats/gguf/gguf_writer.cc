#include "formats/gguf/gguf_writer.h"

#include <bit>
#include <cstring>
#include <new>
#include <utility>

#include "core/checked_math.h"
#include "formats/gguf/gguf_file.h"
#include "formats/llama2c/file_io.h"

namespace kvrt::gguf {
namespace {

template <class T>
void AppendLe(std::vector<uint8_t>& out, T value) {
  uint8_t bytes[sizeof(T)];
  std::memcpy(bytes, &value, sizeof(T));  // little-endian hosts only (as the reader)
  out.insert(out.end(), bytes, bytes + sizeof(T));
}

void AppendString(std::vector<uint8_t>& out, std::string_view text) {
  AppendLe<uint64_t>(out, text.size());
  out.insert(out.end(), text.begin(), text.end());
}

uint32_t Type(ValueType type) { return static_cast<uint32_t>(type); }

}  // namespace

template <class F>
void GgufWriter::Guarded(F&& append) {
  try {
    append();
  } catch (const std::bad_alloc&) {
    allocation_failed_ = true;
  }
}

void GgufWriter::AppendKey(std::string_view key, uint32_t type) {
  AppendString(metadata_, key);
  AppendLe<uint32_t>(metadata_, type);
  ++kv_count_;
}

void GgufWriter::AddU32(std::string_view key, uint32_t value) {
  Guarded([&] { AppendKey(key, Type(ValueType::kU32)); AppendLe(metadata_, value); });
}
void GgufWriter::AddI32(std::string_view key, int32_t value) {
  Guarded([&] { AppendKey(key, Type(ValueType::kI32)); AppendLe(metadata_, value); });
}
void GgufWriter::AddU64(std::string_view key, uint64_t value) {
  Guarded([&] { AppendKey(key, Type(ValueType::kU64)); AppendLe(metadata_, value); });
}
void GgufWriter::AddF32(std::string_view key, float value) {
  Guarded([&] { AppendKey(key, Type(ValueType::kF32)); AppendLe(metadata_, std::bit_cast<uint32_t>(value)); });
}
void GgufWriter::AddBool(std::string_view key, bool value) {
  Guarded([&] { AppendKey(key, Type(ValueType::kBool)); metadata_.push_back(value ? 1 : 0); });
}
void GgufWriter::AddString(std::string_view key, std::string_view value) {
  Guarded([&] { AppendKey(key, Type(ValueType::kString)); AppendString(metadata_, value); });
}
void GgufWriter::AddStringArray(std::string_view key, std::span<const std::string> values) {
  Guarded([&] {
    AppendKey(key, Type(ValueType::kArray));
    AppendLe(metadata_, Type(ValueType::kString));
    AppendLe<uint64_t>(metadata_, values.size());
    for (const std::string& value : values) AppendString(metadata_, value);
  });
}
void GgufWriter::AddF32Array(std::string_view key, std::span<const float> values) {
  Guarded([&] {
    AppendKey(key, Type(ValueType::kArray));
    AppendLe(metadata_, Type(ValueType::kF32));
    AppendLe<uint64_t>(metadata_, values.size());
    for (float value : values) AppendLe(metadata_, std::bit_cast<uint32_t>(value));
  });
}
void GgufWriter::AddI32Array(std::string_view key, std::span<const int32_t> values) {
  Guarded([&] {
    AppendKey(key, Type(ValueType::kArray));
    AppendLe(metadata_, Type(ValueType::kI32));
    AppendLe<uint64_t>(metadata_, values.size());
    for (int32_t value : values) AppendLe(metadata_, value);
  });
}
void GgufWriter::SetAlignment(uint32_t alignment) {
  AddU32("general.alignment", alignment);
  if (std::has_single_bit(alignment)) {
    alignment_ = alignment;
  } else {
    invalid_alignment_ = alignment;  // reported by Serialize
  }
}

Result<void> GgufWriter::AddTensor(std::string_view name, std::span<const uint64_t> ne, GgmlType type,
                                   std::span<const float> values) try {
  const std::string tensor(name);
  if (ne.empty() || ne.size() > kMaxDimensions) {
    return Fail(ErrorCode::kInvalidArgument, {{"tensor", tensor}}, "tensor " + tensor + " needs 1 to 4 dimensions");
  }
  if (auto writable = RequireWritable(type, tensor); !writable) return writable;
  const std::optional<size_t> elements = CheckedProduct(ne);
  const std::optional<size_t> row = RowBytes(type, ne[0]);
  if (!elements || *elements != values.size() || !row || ne[0] == 0) {
    return Fail(ErrorCode::kInvalidArgument, {{"tensor", tensor}},
                "tensor " + tensor + ": the shape, its " + std::string(GgmlTypeName(type)) +
                    " blocks and the value count do not agree");
  }
  PendingTensor pending{tensor, std::vector<uint64_t>(ne.begin(), ne.end()), type, {}};
  const size_t rows = *elements / ne[0];
  pending.data.resize(*row * rows);
  for (size_t r = 0; r < rows; ++r) {
    Quantize(type, values.subspan(r * ne[0], ne[0]), std::span(pending.data).subspan(r * *row, *row));
  }
  tensors_.push_back(std::move(pending));
  return {};
} catch (const std::bad_alloc&) {
  return Fail(ErrorCode::kAllocationFailed, {}, "could not allocate GGUF tensor " + std::string(name));
}

Result<std::vector<uint8_t>> GgufWriter::Serialize() const try {
  if (allocation_failed_) return Fail(ErrorCode::kAllocationFailed, {}, "a GGUF metadata value could not be stored");
  if (invalid_alignment_ != 0) {
    return Fail(ErrorCode::kInvalidAlignment, {{"alignment", uint64_t{invalid_alignment_}}},
                "general.alignment must be a power of two, not " + std::to_string(invalid_alignment_));
  }
  std::vector<uint8_t> out;
  out.insert(out.end(), {'G', 'G', 'U', 'F'});
  AppendLe<uint32_t>(out, 3);
  AppendLe<uint64_t>(out, tensors_.size());
  AppendLe<uint64_t>(out, kv_count_);
  out.insert(out.end(), metadata_.begin(), metadata_.end());
  uint64_t offset = 0;
  for (const PendingTensor& tensor : tensors_) {
    AppendString(out, tensor.name);
    AppendLe<uint32_t>(out, static_cast<uint32_t>(tensor.ne.size()));
    for (uint64_t ne : tensor.ne) AppendLe<uint64_t>(out, ne);
    AppendLe<uint32_t>(out, static_cast<uint32_t>(tensor.type));
    AppendLe<uint64_t>(out, offset);
    offset = AlignUp(offset + tensor.data.size(), alignment_);
  }
  out.resize(AlignUp(out.size(), alignment_), 0);
  for (const PendingTensor& tensor : tensors_) {
    out.insert(out.end(), tensor.data.begin(), tensor.data.end());
    out.resize(AlignUp(out.size(), alignment_), 0);
  }
  return out;
} catch (const std::bad_alloc&) {
  return Fail(ErrorCode::kAllocationFailed, {}, "could not allocate the GGUF file image");
}

Result<void> GgufWriter::Save(const std::string& path) const {
  Result<std::vector<uint8_t>> bytes = Serialize();
  if (!bytes) return Fail(std::move(bytes.error()));
  return llama2c::WriteFileAtomically(path, *bytes);
}

}  // namespace kvrt::gguf
