// The GGUF tensor names of a llama (or qwen2) model and where each goes in kvrt's
// parameter list (model/decoder_model.h order), computed per (layer, slot) so a
// hostile block count never sizes a list.
#pragma once

#include <array>
#include <cstdint>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "kvrt/config.h"
#include "model/decoder_model.h"

namespace kvrt::gguf {

inline constexpr std::string_view kTokenEmbedding = "token_embd.weight";
inline constexpr std::string_view kOutputNorm = "output_norm.weight";
inline constexpr std::string_view kOutput = "output.weight";

// GGUF suffix of each BlockSlot, in BlockSlot order.
inline constexpr std::array<std::string_view, kParametersPerBlock> kBlockSuffixes = {
    "attn_norm", "attn_q", "attn_k", "attn_v", "attn_output", "ffn_norm", "ffn_gate", "ffn_up", "ffn_down"};

inline std::string BlockTensorName(size_t layer, BlockSlot slot) {
  return "blk." + std::to_string(layer) + "." + std::string(kBlockSuffixes[static_cast<size_t>(slot)]) +
         ".weight";
}

inline constexpr std::string_view kRopeFrequencies = "rope_freqs.weight";

// With attention biases: the parameter at `index` is the bias of this projection
// (kQuery, kKey or kValue) of this layer.
struct BiasPosition {
  size_t layer = 0;
  BlockSlot projection = BlockSlot::kQuery;
};
inline std::optional<BiasPosition> BiasAt(const ModelConfig& config, size_t index) {
  if (!config.attention_bias) return std::nullopt;
  const size_t first = AttentionBiasIndex(config, 0, BlockSlot::kQuery);
  if (index < first) return std::nullopt;
  const size_t offset = index - first;
  return BiasPosition{offset / kBiasesPerBlock,
                      static_cast<BlockSlot>(static_cast<size_t>(BlockSlot::kQuery) + offset % kBiasesPerBlock)};
}

// The GGUF name of kvrt parameter `index` of a model with `config`.
inline std::string GgufTensorName(const ModelConfig& config, size_t index) {
  if (index == 0) return std::string(kTokenEmbedding);
  if (const std::optional<BiasPosition> bias = BiasAt(config, index)) {
    return "blk." + std::to_string(bias->layer) + "." +
           std::string(kBlockSuffixes[static_cast<size_t>(bias->projection)]) + ".bias";
  }
  const size_t final_norm = 1 + kParametersPerBlock * config.layers;
  if (index == final_norm) return std::string(kOutputNorm);
  if (index == final_norm + 1) return std::string(kOutput);
  return BlockTensorName((index - 1) / kParametersPerBlock,
                         static_cast<BlockSlot>((index - 1) % kParametersPerBlock));
}

// Number of kvrt parameters (and GGUF tensors) of `config`, saturating instead
// of wrapping for absurd block counts.
inline size_t ParameterCount(const ModelConfig& config) {
  const size_t extra = config.tied_output ? 2 : 3;
  const size_t per_block = kParametersPerBlock + (config.attention_bias ? kBiasesPerBlock : 0);
  if (config.layers > (SIZE_MAX - extra) / per_block) return SIZE_MAX;
  return per_block * config.layers + extra;
}

// The GGUF ne of kvrt parameter `index`, padded with 1s: kvrt's [in, out] is
// [ne0, ne1]; the token table, [V, D] in kvrt, is ne (D, V): the same rows.
struct ExpectedShape {
  std::array<uint64_t, 4> ne{1, 1, 1, 1};
  size_t n_dims = 1;
};
inline ExpectedShape ExpectedGgufShape(const ModelConfig& config, size_t index) {
  const uint64_t v = config.vocabulary_size, d = config.model_width, f = config.feed_forward_width;
  const uint64_t kv = config.kv_width();
  const size_t final_norm = 1 + kParametersPerBlock * config.layers;
  if (const std::optional<BiasPosition> bias = BiasAt(config, index)) {
    return {{bias->projection == BlockSlot::kQuery ? d : kv, 1, 1, 1}, 1};
  }
  if (index == 0 || index == final_norm + 1) return {{d, v, 1, 1}, 2};
  if (index == final_norm) return {{d, 1, 1, 1}, 1};
  switch (static_cast<BlockSlot>((index - 1) % kParametersPerBlock)) {
    case BlockSlot::kAttentionNorm:
    case BlockSlot::kFeedForwardNorm: return {{d, 1, 1, 1}, 1};
    case BlockSlot::kQuery:
    case BlockSlot::kOutput: return {{d, d, 1, 1}, 2};
    case BlockSlot::kKey:
    case BlockSlot::kValue: return {{d, kv, 1, 1}, 2};
    case BlockSlot::kGate:
    case BlockSlot::kUp: return {{d, f, 1, 1}, 2};
    case BlockSlot::kDown: return {{f, d, 1, 1}, 2};
  }
  return {};
}

// Whether `name` is one of the tensors a llama or qwen2 model of `config` has:
// the parameters' tensors, and rope_freqs.weight when the configuration has
// frequency factors.
inline bool IsLlamaTensorName(std::string_view name, const ModelConfig& config) {
  if (name == kTokenEmbedding || name == kOutputNorm || name == kOutput) return true;
  if (name == kRopeFrequencies) return !config.rope_frequency_factors.empty();
  constexpr std::string_view kPrefix = "blk.", kWeight = ".weight", kBias = ".bias";
  if (!name.starts_with(kPrefix)) return false;
  const bool bias = name.ends_with(kBias);
  if (!bias && !name.ends_with(kWeight)) return false;
  const size_t tail = bias ? kBias.size() : kWeight.size();
  std::string_view rest = name.substr(kPrefix.size(), name.size() - kPrefix.size() - tail);
  const size_t dot = rest.find('.');
  if (dot == std::string_view::npos || dot == 0 || dot > 9) return false;
  size_t layer = 0;
  for (char c : rest.substr(0, dot)) {
    if (c < '0' || c > '9') return false;
    layer = layer * 10 + static_cast<size_t>(c - '0');
  }
  if (rest[0] == '0' && dot > 1) return false;  // canonical decimal only
  if (layer >= config.layers) return false;
  const std::string_view suffix = rest.substr(dot + 1);
  if (bias) {
    return config.attention_bias && (suffix == "attn_q" || suffix == "attn_k" || suffix == "attn_v");
  }
  for (std::string_view known : kBlockSuffixes) {
    if (suffix == known) return true;
  }
  return false;
}

}  // namespace kvrt::gguf
