#include "kv/decoder_kv_cache.h"

#include <algorithm>
#include <string>
#include <vector>

#include "core/vector_growth.h"
#include "kv/kv_element.h"

namespace kvrt {
namespace {

std::string Count(size_t n) { return std::to_string(n); }

Error ParameterAllocationFailed(size_t parameters) {
  return Error(ErrorCode::kParameterAllocationFailed, {{"parameters", uint64_t{parameters}}},
               "could not allocate " + Count(parameters) + " parameter entries");
}

Error LayerAllocationFailed(size_t layers) {
  return Error(ErrorCode::kLayerAllocationFailed, {{"layers", uint64_t{layers}}},
               "could not allocate " + Count(layers) + " layer caches");
}

}  // namespace

Result<DecoderKvCache> DecoderKvCache::Create(const DecoderModel& model, CacheOptions options) {
  const ModelConfig& config = model.config();
  DecoderKvCache cache;
  cache.config_ = config;
  cache.batch_size_ = options.batch_size;
  cache.capacity_ = options.capacity == 0 ? config.max_positions : options.capacity;
  cache.precision_ = options.precision;
  cache.kv_type_ = options.kv_type;
  if (options.kv_type != KvType::kEngine && !IsCompactKvType(options.kv_type)) {
    return Fail(ErrorCode::kUnsupportedBackend, {{"", std::string("unknown")}},
                "KV cache type " + std::to_string(static_cast<int>(options.kv_type)) + " is not available");
  }
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
        LayerKvCache::Create(model, layer, cache.batch_size_, cache.capacity_, cache.precision_, cache.kv_type_);
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
    kv_type_ = other.kv_type_;
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
  copy.kv_type_ = kv_type_;
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

// 32 KiB: one MADV_POPULATE_WRITE call of 8 small pages costs about what 8 of its
// pages cost on their own, and a lane's memory runs ahead of its rows by at most
// this much (9 MiB a slot for the 110M shape's 288 lanes of an f32 cache).
constexpr size_t kBackedBlockBytes = size_t{32} << 10;

Result<void> DecoderKvCache::BackRows(size_t slot, size_t start, size_t end) {
  if (layers_.empty() || start >= end) return {};
  const size_t row_bytes = KvRowBytes(precision_, kv_type_, layers_.front().head_width());
  const size_t block = std::max<size_t>(1, kBackedBlockBytes / std::max<size_t>(1, row_bytes));
  // The blocks the rows enter that begin at or after `start`: a block that starts
  // before it was backed by the step that wrote its first row (or, after a fork,
  // by the copy's writes).
  const size_t from = (start + block - 1) / block * block;
  if (from >= end) return {};
  const size_t to = std::min(capacity_, (end + block - 1) / block * block);
  for (LayerKvCache& layer : layers_) {
    if (!layer.BackRows(slot, from, to)) {
      const size_t elements = (to - from) * layer.heads() * layer.head_width() * 2;
      return Fail(ErrorCode::kAllocationFailed, {{"elements", uint64_t{elements}}},
                  "could not back " + Count(elements) + " KV cache elements of slot " + Count(slot) +
                      " with memory");
    }
  }
  return {};
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
  return batch_size_ * capacity_ * KvBytesPerPosition(config_, precision_, kv_type_);
}

bool DecoderKvCache::operator==(const DecoderKvCache& other) const {
  return config_.SameAs(other.config_) && batch_size_ == other.batch_size_ &&
         capacity_ == other.capacity_ && precision_ == other.precision_ && kv_type_ == other.kv_type_ &&
         layers_ == other.layers_ && slots_ == other.slots_ && work_ == other.work_ &&
         bindings_ == other.bindings_;
}

namespace {

// The total loses what one slot had counted (the total is the sum over slots).
void Subtract(KvWork& total, const KvWork& part) {
  total.token_forwards -= part.token_forwards;
  total.prefill_tokens -= part.prefill_tokens;
  total.decode_tokens -= part.decode_tokens;
  total.cache_appends -= part.cache_appends;
  total.qkv_projection_rows -= part.qkv_projection_rows;
  total.attention_score_values -= part.attention_score_values;
}

}  // namespace

bool DecoderKvCache::TryClaim() {
  bool expected = false;
  return bound_.compare_exchange_strong(expected, true, std::memory_order_acq_rel);
}

void DecoderKvCache::Release() { bound_.store(false, std::memory_order_release); }

void DecoderKvCache::CommitSlot(size_t slot, size_t len, const KvWork& work) {
  if (slots_[slot].len != len) {
    slots_[slot].len = len;
    for (LayerKvCache& layer : layers_) layer.lens_[slot] = len;
  }
  slots_[slot].work = work;
}

void DecoderKvCache::ClearSlot(size_t slot) {
  Subtract(work_, slots_[slot].work);
  for (LayerKvCache& layer : layers_) layer.lens_[slot] = 0;
  slots_[slot] = {};
}

void DecoderKvCache::Clear() {
  for (size_t s = 0; s < slots_.size(); ++s) ClearSlot(s);
  work_ = KvWork{};
}

void DecoderKvCache::TruncateSlot(size_t slot, size_t len) {
  slots_[slot].len = len;
  for (LayerKvCache& layer : layers_) layer.lens_[slot] = len;
}

void DecoderKvCache::ForkSlot(size_t source, size_t destination) {
  const size_t len = slots_[source].len;
  for (LayerKvCache& layer : layers_) {
    layer.CopySlotRows(source, destination, len);
    layer.lens_[destination] = len;
  }
  Subtract(work_, slots_[destination].work);
  slots_[destination] = {len, slots_[source].prefill_complete, KvWork{}};
}

}  // namespace kvrt
