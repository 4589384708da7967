#include "kvrt/kv_cache.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <new>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/checked_math.h"
#include "model/rope.h"
#include "engine/engine.h"
#include "engine/fast/fast_engine.h"
#include "kvrt/session.h"

namespace kvrt {
namespace {

size_t ElementSize(Precision precision) {
  return precision == Precision::kF64 ? sizeof(double) : sizeof(float);
}

std::string Count(size_t n) { return std::to_string(n); }

// Element-wise == over two whole buffers of one precision (NaN never equals
// itself, -0.0 equals 0.0), as spec/kv-cache.md §1.7 compares storage.
bool StorageEqual(const Buffer<std::byte>& first, const Buffer<std::byte>& second,
                  Precision precision) {
  if (first.size() != second.size()) return false;
  const std::byte* a = first.data();
  const std::byte* b = second.data();
  const size_t elements = first.size() / ElementSize(precision);
  for (size_t i = 0; i < elements; ++i) {
    if (precision == Precision::kF64) {
      double x, y;
      std::memcpy(&x, a + i * sizeof x, sizeof x);
      std::memcpy(&y, b + i * sizeof y, sizeof y);
      if (!(x == y)) return false;
    } else {
      float x, y;
      std::memcpy(&x, a + i * sizeof x, sizeof x);
      std::memcpy(&y, b + i * sizeof y, sizeof y);
      if (!(x == y)) return false;
    }
  }
  return true;
}

std::optional<Buffer<std::byte>> CopyBuffer(const Buffer<std::byte>& source) {
  std::optional<Buffer<std::byte>> copy = Buffer<std::byte>::Allocate(source.size());
  if (copy && source.size() > 0) std::memcpy(copy->data(), source.data(), source.size());
  return copy;
}

// Vector growth that reports failure instead of throwing std::bad_alloc out of
// a public function (the binding lists are the only vectors a cache owns).
template <class T>
bool TryReserve(std::vector<T>& list, size_t count) {
  try {
    list.reserve(count);
    return true;
  } catch (const std::bad_alloc&) {
    return false;
  } catch (const std::length_error&) {
    return false;
  }
}

template <class T>
bool TryCopy(const std::vector<T>& source, std::vector<T>& destination) {
  if (!TryReserve(destination, source.size())) return false;
  destination.assign(source.begin(), source.end());  // fits: cannot allocate
  return true;
}

Error ParameterAllocationFailed(size_t parameters) {
  return Error(ErrorCode::kParameterAllocationFailed, {{"parameters", uint64_t{parameters}}},
               "could not allocate " + Count(parameters) + " parameter entries");
}

Error LayerAllocationFailed(size_t layers) {
  return Error(ErrorCode::kLayerAllocationFailed, {{"layers", uint64_t{layers}}},
               "could not allocate " + Count(layers) + " layer caches");
}

}  // namespace

// ---------------------------------------------------------------------------
// LayerKvCache

Result<LayerKvCache> LayerKvCache::Create(const DecoderModel& model, size_t layer,
                                          size_t batch_size, size_t capacity, Precision precision) {
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
      elements ? CheckedMul(*elements, ElementSize(precision)) : std::nullopt;
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
      const size_t element = lane * capacity_ * head_width_ + i;
      if (precision_ == Precision::kF64) {
        out.push_back(reinterpret_cast<const double*>(buffer.data())[element]);
      } else {
        out.push_back(reinterpret_cast<const float*>(buffer.data())[element]);
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
         StorageEqual(keys_, other.keys_, precision_) &&
         StorageEqual(values_, other.values_, precision_) &&
         rope_feature_width_ == other.rope_feature_width_ &&
         rope_max_positions_ == other.rope_max_positions_ &&
         rope_base_bits_ == other.rope_base_bits_ && bindings_ == other.bindings_;
}

// ---------------------------------------------------------------------------
// DecoderKvCache

Result<DecoderKvCache> DecoderKvCache::Create(const DecoderModel& model, CacheOptions options) {
  const ModelConfig& config = model.config();
  DecoderKvCache cache;
  cache.config_ = config;
  cache.batch_size_ = options.batch_size;
  cache.capacity_ = options.capacity == 0 ? config.max_positions : options.capacity;
  cache.precision_ = options.precision;
  if (config.layers == 0) {
    // No layer cache checks the geometry of a model without blocks, but its
    // session still splits prompts by the batch and positions rows by the
    // capacity: the same checks as spec/kv-cache.md §1.1, unwrapped.
    if (options.batch_size == 0) {
      return Fail(ErrorCode::kZeroBatchSize, {}, "KV cache batch size must be nonzero");
    }
    if (cache.capacity_ > config.max_positions) {
      return Fail(ErrorCode::kCapacityExceedsPositions,
                  {{"capacity", uint64_t{cache.capacity_}},
                   {"max_positions", uint64_t{config.max_positions}}},
                  "KV cache capacity " + Count(cache.capacity_) + " exceeds RoPE positions " +
                      Count(config.max_positions));
    }
  }
  // spec §3.1 steps 1–2: reserve both lists before filling them.
  if (!TryReserve(cache.bindings_, model.parameters().size())) {
    return Fail(ParameterAllocationFailed(model.parameters().size()));
  }
  for (const ParameterPtr& node : model.parameters()) {
    cache.bindings_.push_back({node, node->revision()});
  }
  if (!TryReserve(cache.layers_, config.layers)) return Fail(LayerAllocationFailed(config.layers));
  for (size_t layer = 0; layer < config.layers; ++layer) {
    Result<LayerKvCache> layer_cache =
        LayerKvCache::Create(model, layer, cache.batch_size_, cache.capacity_, cache.precision_);
    if (!layer_cache) {
      return Fail(std::move(layer_cache.error())
                      .Wrap(ErrorCode::kLayerCache, {{"layer", uint64_t{layer}}}));
    }
    cache.layers_.push_back(std::move(*layer_cache));
  }
  // After the layers, whose geometry checks come first (a batch too large for
  // memory is a layer's ElementCountOverflow or AllocationFailed).
  if (!TryReserve(cache.slots_, options.batch_size)) {
    return Fail(ErrorCode::kAllocationFailed, {{"elements", uint64_t{options.batch_size}}},
                "could not allocate " + Count(options.batch_size) + " sequence slots");
  }
  cache.slots_.resize(options.batch_size);  // reserved: cannot allocate
  return cache;
}

// Moves carry every field; the bound flag is atomic, so it is copied by hand. A
// bound cache must not be moved (its session points at it), so the flag moves
// only for completeness.
DecoderKvCache::DecoderKvCache(DecoderKvCache&& other) noexcept { *this = std::move(other); }
DecoderKvCache& DecoderKvCache::operator=(DecoderKvCache&& other) noexcept {
  if (this != &other) {
    config_ = other.config_;
    batch_size_ = other.batch_size_;
    capacity_ = other.capacity_;
    precision_ = other.precision_;
    bindings_ = std::move(other.bindings_);
    layers_ = std::move(other.layers_);
    slots_ = std::move(other.slots_);
    work_ = other.work_;
    bound_.store(other.bound_.load(std::memory_order_acquire), std::memory_order_release);
  }
  return *this;
}
DecoderKvCache::~DecoderKvCache() = default;

Result<DecoderKvCache> DecoderKvCache::Clone() const {
  DecoderKvCache copy;
  copy.config_ = config_;
  copy.batch_size_ = batch_size_;
  copy.capacity_ = capacity_;
  copy.precision_ = precision_;
  if (!TryCopy(bindings_, copy.bindings_)) return Fail(ParameterAllocationFailed(bindings_.size()));
  if (!TryCopy(slots_, copy.slots_)) {
    return Fail(ErrorCode::kAllocationFailed, {{"elements", uint64_t{slots_.size()}}},
                "could not allocate " + Count(slots_.size()) + " sequence slots");
  }
  copy.work_ = work_;
  if (!TryReserve(copy.layers_, layers_.size())) return Fail(LayerAllocationFailed(layers_.size()));
  for (const LayerKvCache& layer : layers_) {
    Result<LayerKvCache> layer_copy = layer.Clone();
    if (!layer_copy) return Fail(std::move(layer_copy.error()));
    copy.layers_.push_back(std::move(*layer_copy));
  }
  return copy;
}

size_t DecoderKvCache::len() const {
  size_t longest = 0;
  for (const SlotState& slot : slots_) longest = std::max(longest, slot.len);
  return longest;
}

bool DecoderKvCache::prefill_complete() const {
  for (const SlotState& slot : slots_) {
    if (!slot.prefill_complete) return false;
  }
  return !slots_.empty();
}

size_t DecoderKvCache::storage_bytes() const {
  size_t bytes = 0;
  for (const LayerKvCache& layer : layers_)
    bytes += 2 * layer.element_count() * ElementSize(precision_);
  return bytes;
}

bool DecoderKvCache::operator==(const DecoderKvCache& other) const {
  return config_.SameAs(other.config_) && batch_size_ == other.batch_size_ &&
         capacity_ == other.capacity_ && precision_ == other.precision_ &&
         layers_ == other.layers_ && slots_ == other.slots_ && work_ == other.work_ &&
         bindings_ == other.bindings_;
}

}  // namespace kvrt
