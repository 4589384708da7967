// The GGUF parser: one pass over the mapping with a bounds-checked cursor. Every
// count read from the file is compared with the bytes left (divided by the
// smallest encoding of one item) before it sizes a container.
#include "formats/gguf/gguf_file.h"

#include <algorithm>
#include <bit>
#include <new>
#include <numeric>
#include <utility>

#include "core/checked_math.h"
#include "formats/gguf/gguf_value_parser.h"

namespace kvrt::gguf {
namespace {

using detail::Cursor;
using detail::ReserveFor;

constexpr uint32_t kMagic = 0x46554747;  // "GGUF" read as a little-endian u32
// Smallest encodings: a metadata entry is an empty key, a type and a one-byte
// value; a tensor info an empty name, n_dims, one dimension, a type and an
// offset.
constexpr uint64_t kMinEntry = detail::kMinString + 4 + 1;
constexpr uint64_t kMinTensorInfo = detail::kMinString + 4 + 8 + 4 + 8;

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
      Result<ValueType> type = detail::ReadValueType(cursor_, *key);
      if (!type) return Fail(std::move(type.error()));
      MetadataEntry entry{*key, {}};
      if (auto value = detail::ParseValue(cursor_, *type, *key, 0, entry.value); !value) return value;
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

}  // namespace kvrt::gguf
