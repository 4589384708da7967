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

// Element `i` of a buffer of the given element type, as f64 (exact).
double ElementAt(const std::byte* buffer, size_t i, Precision precision, KvType type) {
  if (precision == Precision::kF64) {
    double x;
    std::memcpy(&x, buffer + i * sizeof x, sizeof x);
    return x;
  }
  if (IsHalfWidthKvType(type)) {
    uint16_t bits;
    std::memcpy(&bits, buffer + i * sizeof bits, sizeof bits);
    return type == KvType::kF16 ? simd::F16ToF32(bits) : simd::Bf16ToF32(bits);
  }
  float x;
  std::memcpy(&x, buffer + i * sizeof x, sizeof x);
  return x;
}

// Element-wise == over two whole buffers of one element type (NaN never equals
// itself, -0.0 equals 0.0), as spec/kv-cache.md §1.7 compares storage.
bool StorageEqual(const Buffer<std::byte>& first, const Buffer<std::byte>& second,
                  Precision precision, KvType type) {
  if (first.size() != second.size()) return false;
  const size_t elements = first.size() / KvElementSize(precision, type);
  for (size_t i = 0; i < elements; ++i) {
    if (!(ElementAt(first.data(), i, precision, type) == ElementAt(second.data(), i, precision, type))) {
      return false;
    }
  }
  return true;
}

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
  std::optional<size_t> elements = CheckedMul(batch_size, heads);
  if (elements) elements = CheckedMul(*elements, capacity);
  if (elements) elements = CheckedMul(*elements, hw);
  std::optional<size_t> bytes =
      elements ? CheckedMul(*elements, KvElementSize(precision, kv_type)) : std::nullopt;
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

std::vector<double> LayerKvCache::Storage(const Buffer<std::byte>& buffer, bool logical) const {
  std::vector<double> out;
  out.reserve(lanes() * (logical ? len() : capacity_) * head_width_);
  for (size_t lane = 0; lane < lanes(); ++lane) {
    const size_t rows = logical ? lens_[lane / heads_] : capacity_;
    for (size_t i = 0; i < rows * head_width_; ++i) {
      out.push_back(ElementAt(buffer.data(), lane * capacity_ * head_width_ + i, precision_, kv_type_));
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
         kv_type_ == other.kv_type_ && StorageEqual(keys_, other.keys_, precision_, kv_type_) &&
         StorageEqual(values_, other.values_, precision_, kv_type_) &&
         rope_feature_width_ == other.rope_feature_width_ &&
         rope_max_positions_ == other.rope_max_positions_ &&
         rope_base_bits_ == other.rope_base_bits_ && bindings_ == other.bindings_;
}

bool LayerKvCache::BackRows(size_t slot, size_t from, size_t to) {
  if (from >= to) return true;
  const size_t element = KvElementSize(precision_, kv_type_);
  const size_t row_bytes = head_width_ * element;
  for (size_t h = 0; h < heads_; ++h) {
    const size_t offset = ((slot * heads_ + h) * capacity_ + from) * row_bytes;
    const size_t bytes = (to - from) * row_bytes;
    if (!memory::BackPagesForWriting(keys_.data() + offset, bytes) ||
        !memory::BackPagesForWriting(values_.data() + offset, bytes)) {
      return false;
    }
  }
  return true;
}

void LayerKvCache::CopySlotRows(size_t source, size_t destination, size_t rows) {
  const size_t element = KvElementSize(precision_, kv_type_);
  const size_t lane_bytes = capacity_ * head_width_ * element;
  const size_t row_bytes = rows * head_width_ * element;
  if (row_bytes == 0) return;
  for (size_t h = 0; h < heads_; ++h) {
    const size_t from = (source * heads_ + h) * lane_bytes;
    const size_t to = (destination * heads_ + h) * lane_bytes;
    std::memcpy(keys_.data() + to, keys_.data() + from, row_bytes);
    std::memcpy(values_.data() + to, values_.data() + from, row_bytes);
  }
}

}  // namespace kvrt
