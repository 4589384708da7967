#include "kvrt/config.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <string>

#include "core/rust_format.h"

namespace kvrt {

ModelConfig ModelConfig::Create(size_t vocabulary_size, size_t model_width, size_t heads,
                                size_t feed_forward_width, size_t layers, size_t max_positions,
                                double rope_base, double rms_epsilon) {
  ModelConfig config;
  config.vocabulary_size = vocabulary_size;
  config.model_width = model_width;
  config.heads = heads;
  config.feed_forward_width = feed_forward_width;
  config.layers = layers;
  config.max_positions = max_positions;
  config.rope_base = rope_base;
  config.rms_epsilon = rms_epsilon;
  config.kv_heads = heads;
  config.tied_output = true;
  return config;
}

Result<void> ModelConfig::Validate() const {
  if (vocabulary_size == 0) {
    return Fail(ErrorCode::kEmptyVocabulary, {}, "decoder vocabulary must be nonempty");
  }
  if (model_width == 0) {
    return Fail(ErrorCode::kZeroModelWidth, {}, "decoder model width must be nonzero");
  }
  if (heads == 0) {
    return Fail(ErrorCode::kZeroHeadCount, {}, "decoder head count must be nonzero");
  }
  if (model_width % heads != 0) {
    return Fail(ErrorCode::kModelWidthNotDivisible,
                {{"model_width", uint64_t{model_width}}, {"heads", uint64_t{heads}}},
                "decoder model width " + std::to_string(model_width) +
                    " must be divisible by head count " + std::to_string(heads));
  }
  if (head_width() % 2 != 0) {
    return Fail(
        ErrorCode::kOddHeadWidth, {{"head_width", uint64_t{head_width()}}},
        "decoder per-head width must be even for RoPE, got " + std::to_string(head_width()));
  }
  if (feed_forward_width == 0) {
    return Fail(ErrorCode::kZeroFeedForwardWidth, {}, "decoder feed-forward width must be nonzero");
  }
  if (max_positions == 0) {
    return Fail(ErrorCode::kZeroPositionCapacity, {}, "decoder context capacity must be nonzero");
  }
  if (!std::isfinite(rope_base) || rope_base <= 0.0) {
    return Fail(ErrorCode::kInvalidRopeBase, {{"value", rope_base}},
                "decoder RoPE base must be finite and positive, got " + RustDebug(rope_base));
  }
  if (!std::isfinite(rms_epsilon) || rms_epsilon < 0.0) {
    return Fail(
        ErrorCode::kInvalidRmsEpsilon, {{"value", rms_epsilon}},
        "decoder RMSNorm epsilon must be finite and nonnegative, got " + RustDebug(rms_epsilon));
  }
  if (kv_heads == 0) {
    return Fail(ErrorCode::kZeroKeyValueHeads, {}, "decoder key/value head count must be nonzero");
  }
  if (heads % kv_heads != 0) {
    return Fail(ErrorCode::kHeadsNotDivisibleByKeyValueHeads,
                {{"heads", uint64_t{heads}}, {"kv_heads", uint64_t{kv_heads}}},
                "decoder head count " + std::to_string(heads) +
                    " must be divisible by key/value head count " + std::to_string(kv_heads));
  }
  if (!std::isfinite(rope_freq_scale) || rope_freq_scale <= 0.0) {
    return Fail(ErrorCode::kInvalidRopeScale, {{"value", rope_freq_scale}},
                "decoder RoPE frequency scale must be finite and positive, got " + RustDebug(rope_freq_scale));
  }
  if (!rope_frequency_factors.empty() && rope_frequency_factors.size() != head_width() / 2) {
    return Fail(ErrorCode::kInvalidRopeScale, {{"value", static_cast<double>(rope_frequency_factors.size())}},
                "decoder RoPE frequency factors must be one per rotated pair (" +
                    std::to_string(head_width() / 2) + "), got " + std::to_string(rope_frequency_factors.size()));
  }
  for (const double factor : rope_frequency_factors) {
    if (!std::isfinite(factor) || factor <= 0.0) {
      return Fail(ErrorCode::kInvalidRopeScale, {{"value", factor}},
                  "decoder RoPE frequency factors must be finite and positive, got " + RustDebug(factor));
    }
  }
  return {};
}

bool ModelConfig::SameAs(const ModelConfig& other) const {
  return vocabulary_size == other.vocabulary_size && model_width == other.model_width &&
         heads == other.heads && feed_forward_width == other.feed_forward_width &&
         layers == other.layers && max_positions == other.max_positions &&
         std::bit_cast<uint64_t>(rope_base) == std::bit_cast<uint64_t>(other.rope_base) &&
         std::bit_cast<uint64_t>(rms_epsilon) == std::bit_cast<uint64_t>(other.rms_epsilon) &&
         kv_heads == other.kv_heads && tied_output == other.tied_output &&
         std::bit_cast<uint64_t>(rope_freq_scale) == std::bit_cast<uint64_t>(other.rope_freq_scale) &&
         attention_bias == other.attention_bias &&
         std::ranges::equal(rope_frequency_factors, other.rope_frequency_factors, [](double a, double b) {
           return std::bit_cast<uint64_t>(a) == std::bit_cast<uint64_t>(b);
         });
}

}  // namespace kvrt
