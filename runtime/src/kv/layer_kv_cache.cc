#include "kv/layer_kv_cache.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "core/checked_math.h"
#include "core/vector_growth.h"
#include "kv/kv_element.h"
#include "kvrt/simd/compressed_matrix.h"
#include "model/rope.h"

namespace kvrt {
namespace {

std::string Count(size_t n) { return std::to_string(n); }

std::optional<Buffer<std::byte>> CopyBuffer(const Buffer<std::byte>& source) {
  std::optional<Buffer<std::byte>> copy = Buffer<std::byte>::Allocate(source.size());
  if (copy && source.size() > 0) std::memcpy(copy->data(), source.data(), source.size());
  return copy;
}

}  // namespace

Result<LayerKvCache> LayerKvCache::Create(const DecoderModel& model, size_t layer,
                                          size_t batch_size, size_t capacity, Precision precision,
                                          KvType kv_type) {
  const ModelConfig& config = model.config();
  if (batch_size == 0)
    return Fail(ErrorCode::kZeroBatchSize, {}, "KV cache batch size must be nonzero");
  if (capacity == 0) return Fail(ErrorCode::kZeroCapacity, {}, "KV cache capacity must be nonzero");
  if (capacity > config.max_positions) {
    return Fail(
        ErrorCode::kCapacityExceedsPositions,
        {{"capacity", uint64_t{capacity}}, {"max_positions", uint64_t{config.max_positions}}},
        "KV cache capacity " + Count(capacity) + " exceeds RoPE positions " +
            Count(config.max_positions));
  }
  const size_t heads = config.kv_heads, hw = config.head_width();
  std::optional<size_t> rows = CheckedMul(batch_size, heads);  // every lane's capacity
  if (rows) rows = CheckedMul(*rows, capacity);
  const std::optional<size_t> elements = rows ? CheckedMul(*rows, hw) : std::nullopt;
  const std::optional<size_t> bytes =
      elements ? CheckedMul(*rows, KvRowBytes(precision, kv_type, hw)) : std::nullopt;
  if (!bytes) {
    return Fail(ErrorCode::kElementCountOverflow,
                {{"batch_size", uint64_t{batch_size}},
                 {"heads", uint64_t{heads}},
                 {"capacity", uint64_t{capacity}},
                 {"head_width", uint64_t{hw}}},
                "KV cache size " + Count(batch_size) + "x" + Count(heads) + "x" + Count(capacity) +
                    "x" + Count(hw) + " overflows");
  }
  LayerKvCache cache;
  std::optional<Buffer<std::byte>> keys = Buffer<std::byte>::Allocate(*bytes);
  std::optional<Buffer<std::byte>> values =
      keys ? Buffer<std::byte>::Allocate(*bytes) : std::nullopt;
  if (!keys || !values || !TryReserve(cache.bindings_, 4) || !TryReserve(cache.lens_, batch_size)) {
    return Fail(ErrorCode::kAllocationFailed, {{"elements", uint64_t{*elements}}},
                "could not allocate " + Count(*elements) + " KV cache elements");
  }
  cache.batch_size_ = batch_size;
  cache.model_width_ = config.model_width;
  cache.heads_ = heads;
  cache.head_width_ = hw;
  cache.capacity_ = capacity;
  cache.row_elements_ = KvRowElements(precision, kv_type, hw);
  cache.lens_.assign(batch_size, 0);  // reserved: cannot allocate
  cache.precision_ = precision;
  cache.kv_type_ = kv_type;
  cache.keys_ = std::move(*keys);
  cache.values_ = std::move(*values);
  for (BlockSlot slot :
       {BlockSlot::kQuery, BlockSlot::kKey, BlockSlot::kValue, BlockSlot::kOutput}) {
    const ParameterPtr& node = model.parameters()[BlockParameterIndex(layer, slot)];
    cache.bindings_.push_back({node, node->revision()});
  }
  cache.rope_feature_width_ = model.rope().head_width();
  cache.rope_max_positions_ = model.rope().positions();
  cache.rope_base_bits_ = std::bit_cast<uint64_t>(model.rope().base());
  return cache;
}

Result<LayerKvCache> LayerKvCache::Clone() const {
  LayerKvCache copy;
  std::optional<Buffer<std::byte>> keys = CopyBuffer(keys_);
  std::optional<Buffer<std::byte>> values = keys ? CopyBuffer(values_) : std::nullopt;
  if (!keys || !values || !TryCopy(bindings_, copy.bindings_) || !TryCopy(lens_, copy.lens_)) {
    return Fail(ErrorCode::kAllocationFailed, {{"elements", uint64_t{element_count()}}},
                "could not allocate a copy of the KV cache");
  }
  copy.batch_size_ = batch_size_;
  copy.model_width_ = model_width_;
  copy.heads_ = heads_;
  copy.head_width_ = head_width_;
  copy.capacity_ = capacity_;
  copy.row_elements_ = row_elements_;
  copy.precision_ = precision_;
  copy.kv_type_ = kv_type_;
  copy.keys_ = std::move(*keys);
  copy.values_ = std::move(*values);
  copy.rope_feature_width_ = rope_feature_width_;
  copy.rope_max_positions_ = rope_max_positions_;
  copy.rope_base_bits_ = rope_base_bits_;
  return copy;
}

size_t LayerKvCache::len() const {
  size_t longest = 0;
  for (size_t len : lens_) longest = std::max(longest, len);
  return longest;
}

size_t LayerKvCache::ElementsIn(const Buffer<std::byte>& buffer) const {
  // A q8_0 buffer: per block, 32 one-byte quants and a two-byte scale.
  constexpr size_t kBlockBytes = simd::kQ8KvBlock + sizeof(simd::Half);
  if (KvStoresQ8(precision_, kv_type_)) return buffer.size() / kBlockBytes * simd::kQ8KvBlock;
  return buffer.size() / KvElementSize(precision_, kv_type_);
}

double LayerKvCache::Element(const Buffer<std::byte>& buffer, size_t i) const {
  const std::byte* data = buffer.data();
  if (precision_ == Precision::kF64) {
    double x;
    std::memcpy(&x, data + i * sizeof x, sizeof x);
    return x;
  }
  if (KvStoresQ8(precision_, kv_type_)) {
    const auto* quants = reinterpret_cast<const simd::Q8*>(data);
    const auto* scales = reinterpret_cast<const simd::Half*>(data + ElementsIn(buffer));
    return simd::Q8Rows{quants + i, quants, scales}.value();
  }
  if (IsHalfWidthKvType(kv_type_)) {
    uint16_t bits;
    std::memcpy(&bits, data + i * sizeof bits, sizeof bits);
    return kv_type_ == KvType::kF16 ? simd::F16ToF32(bits) : simd::Bf16ToF32(bits);
  }
  float x;
  std::memcpy(&x, data + i * sizeof x, sizeof x);
  return x;
}

// Element-wise == over two whole buffers (NaN never equals itself, -0.0 equals 0.0),
// as spec/kv-cache.md §1.7 compares storage; a q8_0 element is its value quant·d.
bool LayerKvCache::StorageEqual(const Buffer<std::byte>& first, const Buffer<std::byte>& second) const {
  if (first.size() != second.size()) return false;
  // From the buffers' size, not the geometry: a test may tamper with the latter.
  const size_t elements = ElementsIn(first);
  for (size_t i = 0; i < elements; ++i) {
    if (!(Element(first, i) == Element(second, i))) return false;
  }
  return true;
}

std::vector<double> LayerKvCache::Storage(const Buffer<std::byte>& buffer, bool logical) const {
  std::vector<double> out;
  out.reserve(lanes() * (logical ? len() : capacity_) * head_width_);
  for (size_t lane = 0; lane < lanes(); ++lane) {
    const size_t rows = logical ? lens_[lane / heads_] : capacity_;
    for (size_t row = 0; row < rows; ++row) {
      for (size_t j = 0; j < head_width_; ++j) {
        out.push_back(Element(buffer, (lane * capacity_ + row) * row_elements_ + j));
      }
    }
  }
  return out;
}

std::vector<double> LayerKvCache::KeyStorage() const { return Storage(keys_, false); }
std::vector<double> LayerKvCache::ValueStorage() const { return Storage(values_, false); }
std::vector<double> LayerKvCache::KeysSnapshot() const { return Storage(keys_, true); }
std::vector<double> LayerKvCache::ValuesSnapshot() const { return Storage(values_, true); }

bool LayerKvCache::operator==(const LayerKvCache& other) const {
  return batch_size_ == other.batch_size_ && model_width_ == other.model_width_ &&
         heads_ == other.heads_ && head_width_ == other.head_width_ &&
         capacity_ == other.capacity_ && lens_ == other.lens_ && precision_ == other.precision_ &&
         kv_type_ == other.kv_type_ && StorageEqual(keys_, other.keys_) &&
         StorageEqual(values_, other.values_) &&
         rope_feature_width_ == other.rope_feature_width_ &&
         rope_max_positions_ == other.rope_max_positions_ &&
         rope_base_bits_ == other.rope_base_bits_ && bindings_ == other.bindings_;
}

LayerKvCache::ByteRanges LayerKvCache::RowRanges(size_t lane, size_t from, size_t to) const {
  const size_t element = KvElementSize(precision_, kv_type_);
  const size_t first = (lane * capacity_ + from) * row_elements_, count = (to - from) * row_elements_;
  ByteRanges ranges;
  ranges.offset[0] = first * element;
  ranges.bytes[0] = count * element;
  ranges.count = 1;
  if (KvStoresQ8(precision_, kv_type_)) {
    constexpr size_t kScale = sizeof(simd::Half);
    ranges.offset[1] = quant_count() + first / simd::kQ8KvBlock * kScale;
    ranges.bytes[1] = count / simd::kQ8KvBlock * kScale;
    ranges.count = 2;
  }
  return ranges;
}

bool LayerKvCache::BackRows(size_t slot, size_t from, size_t to) {
  if (from >= to) return true;
  for (size_t h = 0; h < heads_; ++h) {
    const ByteRanges ranges = RowRanges(slot * heads_ + h, from, to);
    for (size_t k = 0; k < ranges.count; ++k) {
      if (!memory::BackPagesForWriting(keys_.data() + ranges.offset[k], ranges.bytes[k]) ||
          !memory::BackPagesForWriting(values_.data() + ranges.offset[k], ranges.bytes[k])) {
        return false;
      }
    }
  }
  return true;
}

void LayerKvCache::CopySlotRows(size_t source, size_t destination, size_t rows) {
  if (rows == 0) return;
  for (size_t h = 0; h < heads_; ++h) {
    const ByteRanges from = RowRanges(source * heads_ + h, 0, rows);
    const ByteRanges to = RowRanges(destination * heads_ + h, 0, rows);
    for (size_t k = 0; k < from.count; ++k) {
      std::memcpy(keys_.data() + to.offset[k], keys_.data() + from.offset[k], from.bytes[k]);
      std::memcpy(values_.data() + to.offset[k], values_.data() + from.offset[k], from.bytes[k]);
    }
  }
}

}  // namespace kvrt
