// The binding checks of spec/kv-cache.md §3.3 (and the per-layer check of §2.1
// step 5): may this cache serve a session over `model`? Side-effect free; the
// session code (session.cc) runs it under the parameters' shared borrows.
#include <bit>
#include <string>

#include "kv/decoder_kv_cache.h"
#include "model/rope.h"

namespace kvrt {
namespace {

std::string Count(size_t n) { return std::to_string(n); }

}  // namespace

Result<void> DecoderKvCache::CheckBinding(const DecoderModel& model) const {
  const ModelConfig& model_config = model.config();
  if (!config_.SameAs(model_config)) {
    return Fail(ErrorCode::kModelConfigMismatch, {},
                "decoder KV cache was built for a different model configuration");
  }
  const std::vector<ParameterPtr>& parameters = model.parameters();
  if (bindings_.size() != parameters.size()) {
    return Fail(ErrorCode::kModelParameterCountMismatch,
                {{"cache", uint64_t{bindings_.size()}}, {"model", uint64_t{parameters.size()}}},
                "decoder KV cache records " + Count(bindings_.size()) + " parameters, model has " +
                    Count(parameters.size()));
  }
  for (size_t i = 0; i < parameters.size(); ++i) {
    if (bindings_[i].node != parameters[i]) {
      return Fail(ErrorCode::kModelParameterMismatch, {{"index", uint64_t{i}}},
                  "decoder KV cache parameter " + Count(i) + " belongs to a different model");
    }
  }
  for (size_t i = 0; i < parameters.size(); ++i) {
    const uint64_t current = parameters[i]->revision();
    if (bindings_[i].revision != current) {
      return Fail(ErrorCode::kModelParameterRevisionMismatch,
                  {{"index", uint64_t{i}}, {"cache", bindings_[i].revision}, {"model", current}},
                  "decoder KV cache parameter " + Count(i) + " was captured at revision " +
                      Count(bindings_[i].revision) + ", model is at revision " + Count(current));
    }
  }
  if (layers_.size() != model_config.layers) {
    return Fail(ErrorCode::kLayerCountMismatch,
                {{"cache", uint64_t{layers_.size()}}, {"model", uint64_t{model_config.layers}}},
                "decoder KV cache has " + Count(layers_.size()) + " layer caches, model has " +
                    Count(model_config.layers) + " blocks");
  }
  // Step 6, for every slot: each layer holds exactly the slot's committed rows.
  for (size_t l = 0; l < layers_.size(); ++l) {
    for (size_t s = 0; s < slots_.size(); ++s) {
      const size_t expected = slots_[s].len, actual = layers_[l].slot_len(s);
      if (actual != expected) {
        return Fail(ErrorCode::kLayerLengthInvariant,
                    {{"layer", uint64_t{l}}, {"expected", uint64_t{expected}},
                     {"actual", uint64_t{actual}}},
                    "layer cache " + Count(l) + " has length " + Count(actual) + ", expected " +
                        Count(expected));
      }
    }
  }
  for (size_t l = 0; l < layers_.size(); ++l) {
    const LayerKvCache& layer = layers_[l];
    auto in_layer = [&](Error inner) {
      return Fail(
          std::move(inner).Wrap(ErrorCode::kIncrementalAttention, {{"layer", uint64_t{l}}}));
    };
    if (layer.batch_size() != batch_size_) {
      return Fail(ErrorCode::kLayerBatchSizeMismatch,
                  {{"layer", uint64_t{l}},
                   {"expected", uint64_t{batch_size_}},
                   {"actual", uint64_t{layer.batch_size()}}},
                  "layer cache " + Count(l) + " has batch size " + Count(layer.batch_size()));
    }
    if (layer.capacity() != capacity_) {
      return Fail(ErrorCode::kLayerCapacityMismatch,
                  {{"layer", uint64_t{l}},
                   {"expected", uint64_t{capacity_}},
                   {"actual", uint64_t{layer.capacity()}}},
                  "layer cache " + Count(l) + " has capacity " + Count(layer.capacity()));
    }
    // The per-layer binding check of spec/kv-cache.md §2.1 step 5.
    if (layer.model_width() != model_config.model_width) {
      return in_layer(Error(
          ErrorCode::kCacheModelWidthMismatch,
          {{"layer", uint64_t{model_config.model_width}}, {"cache", uint64_t{layer.model_width()}}},
          "cache model width differs from the layer's"));
    }
    if (layer.heads() != model_config.kv_heads) {
      return in_layer(
          Error(ErrorCode::kCacheHeadCountMismatch,
                {{"layer", uint64_t{model_config.kv_heads}}, {"cache", uint64_t{layer.heads()}}},
                "cache head count differs from the layer's"));
    }
    if (layer.head_width() != model_config.head_width()) {
      return in_layer(Error(
          ErrorCode::kCacheHeadWidthMismatch,
          {{"layer", uint64_t{model_config.head_width()}}, {"cache", uint64_t{layer.head_width()}}},
          "cache head width differs from the layer's"));
    }
    const BlockSlot slots[4] = {BlockSlot::kQuery, BlockSlot::kKey, BlockSlot::kValue,
                                BlockSlot::kOutput};
    for (size_t p = 0; p < 4; ++p) {
      if (layer.bindings()[p].node != parameters[BlockParameterIndex(l, slots[p])]) {
        return in_layer(Error(ErrorCode::kCacheLayerMismatch, {},
                              "cache was built for a different attention layer"));
      }
    }
    for (size_t p = 0; p < 4; ++p) {
      const uint64_t current = parameters[BlockParameterIndex(l, slots[p])]->revision();
      if (layer.bindings()[p].revision != current) {
        return in_layer(Error(ErrorCode::kCacheLayerRevisionMismatch,
                              {{"parameter", uint64_t{p}},
                               {"cache", layer.bindings()[p].revision},
                               {"layer", current}},
                              "cache attention parameter " + Count(p) + " revision differs"));
      }
    }
    const RopeTable& rope = model.rope();
    if (layer.rope_feature_width_ != rope.head_width() ||
        layer.rope_max_positions_ != rope.positions() ||
        layer.rope_base_bits_ != std::bit_cast<uint64_t>(rope.base())) {
      return in_layer(Error(ErrorCode::kCacheRopeMismatch,
                            {{"cache_feature_width", uint64_t{layer.rope_feature_width_}},
                             {"layer_feature_width", uint64_t{rope.head_width()}},
                             {"cache_max_positions", uint64_t{layer.rope_max_positions_}},
                             {"layer_max_positions", uint64_t{rope.positions()}},
                             {"cache_base", std::bit_cast<double>(layer.rope_base_bits_)},
                             {"layer_base", rope.base()}},
                            "cache RoPE configuration differs from the layer's"));
    }
  }
  return {};
}

}  // namespace kvrt
