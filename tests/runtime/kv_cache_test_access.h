// White-box access for tests that break a cache's internal invariants on purpose
// (spec/kv-cache.md §8: bind steps 5–7 and the commit checks cannot fail through
// the public API; they are defence in depth and need tampering to be exercised).
#pragma once

#include <memory>
#include <vector>

#include "engine/engine.h"
#include "kv/decoder_kv_cache.h"
#include "model/parameter_access.h"
#include "session/decoder_kv_session.h"

namespace kvrt {

struct KvCacheTestAccess {
  static std::vector<ParameterBinding>& bindings(DecoderKvCache& cache) { return cache.bindings_; }
  static std::vector<LayerKvCache>& layers(DecoderKvCache& cache) { return cache.layers_; }
  static KvWork& work(DecoderKvCache& cache) { return cache.work_; }
  static size_t& layer_len(LayerKvCache& layer) { return layer.lens_[0]; }  // slot 0
  static size_t& layer_batch(LayerKvCache& layer) { return layer.batch_size_; }
  static size_t& layer_capacity(LayerKvCache& layer) { return layer.capacity_; }
  static size_t& layer_model_width(LayerKvCache& layer) { return layer.model_width_; }
  static size_t& layer_heads(LayerKvCache& layer) { return layer.heads_; }
  static size_t& layer_head_width(LayerKvCache& layer) { return layer.head_width_; }
  static std::vector<ParameterBinding>& layer_bindings(LayerKvCache& layer) {
    return layer.bindings_;
  }
  static size_t& layer_rope_positions(LayerKvCache& layer) { return layer.rope_max_positions_; }

  // A session over `cache` whose arithmetic is `engine` (no bind checks).
  static DecoderKvSession BindWithEngine(DecoderKvCache& cache, const DecoderModel& model,
                                         std::unique_ptr<detail::Engine> engine) {
    cache.bound_.store(true);
    return DecoderKvSession(
        cache, model, ReferenceEngine(), std::make_unique<SharedBorrows>(model.parameters()), std::move(engine),
        *Buffer<double>::Allocate(cache.batch_size() * cache.config().vocabulary_size));
  }
};

}  // namespace kvrt
