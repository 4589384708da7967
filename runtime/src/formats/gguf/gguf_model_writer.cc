// SaveGgufModel: a kvrt model as a llama-architecture GGUF file, one tensor
// converted at a time from whatever layout the model keeps.
#include <limits>
#include <new>
#include <string>
#include <vector>

#include "formats/gguf/gguf_llama_names.h"
#include "formats/gguf/gguf_writer.h"
#include "model/parameter_access.h"
#include "model/parameter.h"

namespace kvrt::gguf {
namespace {

uint32_t FileType(GgmlType type) {
  switch (type) {
    case GgmlType::kF16: return 1;
    case GgmlType::kQ4_0: return 2;
    case GgmlType::kQ8_0: return 7;
    case GgmlType::kBF16: return 32;
    default: return 0;  // all F32
  }
}

// The tensor's values in GGUF storage order (ne1 rows of ne0) as floats.
std::vector<float> StoredValues(const Parameter& parameter, bool token_table) {
  std::vector<double> values(parameter.element_count());
  parameter.ReadValues(values);  // row-major in kvrt's shape
  std::vector<float> stored(values.size());
  const std::vector<size_t>& shape = parameter.shape();
  if (shape.size() == 1 || token_table) {
    for (size_t i = 0; i < values.size(); ++i) stored[i] = static_cast<float>(values[i]);
    return stored;
  }
  const size_t in = shape[0], out = shape[1];  // kvrt [in, out] → out rows of in
  for (size_t row = 0; row < out; ++row) {
    for (size_t column = 0; column < in; ++column) stored[row * in + column] = static_cast<float>(values[column * out + row]);
  }
  return stored;
}

void AddHyperparameters(GgufWriter& writer, const ModelConfig& config, GgmlType type) {
  writer.AddString("general.architecture", "llama");
  writer.AddString("general.name", "kvrt");
  writer.AddU32("general.file_type", FileType(type));
  writer.AddU32("llama.vocab_size", static_cast<uint32_t>(config.vocabulary_size));
  writer.AddU32("llama.context_length", static_cast<uint32_t>(config.max_positions));
  writer.AddU32("llama.embedding_length", static_cast<uint32_t>(config.model_width));
  writer.AddU32("llama.block_count", static_cast<uint32_t>(config.layers));
  writer.AddU32("llama.feed_forward_length", static_cast<uint32_t>(config.feed_forward_width));
  writer.AddU32("llama.attention.head_count", static_cast<uint32_t>(config.heads));
  writer.AddU32("llama.attention.head_count_kv", static_cast<uint32_t>(config.kv_heads));
  writer.AddU32("llama.rope.dimension_count", static_cast<uint32_t>(config.head_width()));
  // GGUF keeps both as float32: a value that is not an f32 is rounded.
  writer.AddF32("llama.rope.freq_base", static_cast<float>(config.rope_base));
  writer.AddF32("llama.attention.layer_norm_rms_epsilon", static_cast<float>(config.rms_epsilon));
  if (config.rope_freq_scale != 1.0) {  // CheckSavable: 1/scale is an f32 that reads back exactly
    writer.AddString("llama.rope.scaling.type", "linear");
    writer.AddF32("llama.rope.scaling.factor", static_cast<float>(1.0 / config.rope_freq_scale));
  }
}

void AddTokenizer(GgufWriter& writer, const GgufTokenizerMetadata& tokenizer) {
  writer.AddString("tokenizer.ggml.model", tokenizer.model);
  writer.AddStringArray("tokenizer.ggml.tokens", tokenizer.tokens);
  if (!tokenizer.scores.empty()) writer.AddF32Array("tokenizer.ggml.scores", tokenizer.scores);
  if (!tokenizer.token_types.empty()) writer.AddI32Array("tokenizer.ggml.token_type", tokenizer.token_types);
  if (tokenizer.bos_token_id) writer.AddU32("tokenizer.ggml.bos_token_id", *tokenizer.bos_token_id);
  if (tokenizer.eos_token_id) writer.AddU32("tokenizer.ggml.eos_token_id", *tokenizer.eos_token_id);
  if (tokenizer.unknown_token_id) writer.AddU32("tokenizer.ggml.unknown_token_id", *tokenizer.unknown_token_id);
}

Result<void> CheckSavable(const ModelConfig& config, GgmlType type,
                          const std::optional<GgufTokenizerMetadata>& tokenizer) {
  if (auto supported = RequireWritable(type, "(every matrix)"); !supported) return supported;
  for (size_t size : {config.vocabulary_size, config.max_positions, config.model_width, config.layers,
                      config.feed_forward_width, config.heads, config.kv_heads}) {
    if (size > std::numeric_limits<uint32_t>::max()) {
      return Fail(ErrorCode::kInvalidArgument, {}, "a model size does not fit GGUF's u32 hyperparameters");
    }
  }
  // qwen2's biases belong to the qwen2 architecture, whose NEOX rotation the
  // loaded model no longer has (its q/k rows were interleaved at load).
  if (config.attention_bias) {
    return Fail(ErrorCode::kInvalidArgument, {},
                "a model with attention biases (qwen2) cannot be written as a llama-architecture GGUF file");
  }
  for (const double factor : config.rope_frequency_factors) {
    if (static_cast<double>(static_cast<float>(factor)) != factor) {
      return Fail(ErrorCode::kInvalidArgument, {},
                  "RoPE frequency factor " + std::to_string(factor) + " is not an f32, so rope_freqs.weight cannot store it");
    }
  }
  // llama.cpp reads the scale back as 1.0f / factor, with the factor an f32.
  const float factor = static_cast<float>(1.0 / config.rope_freq_scale);
  if (config.rope_freq_scale != 1.0 && static_cast<double>(1.0f / factor) != config.rope_freq_scale) {
    return Fail(ErrorCode::kInvalidArgument, {},
                "rope_freq_scale " + std::to_string(config.rope_freq_scale) +
                    " is not 1/f for an f32 factor f, so llama.rope.scaling.factor cannot store it");
  }
  if (tokenizer && (tokenizer->tokens.size() != config.vocabulary_size ||
                    (!tokenizer->scores.empty() && tokenizer->scores.size() != config.vocabulary_size) ||
                    (!tokenizer->token_types.empty() && tokenizer->token_types.size() != config.vocabulary_size))) {
    return Fail(ErrorCode::kInvalidArgument, {},
                "the tokenizer's token, score and type lists must each have one entry per vocabulary id");
  }
  return {};
}

}  // namespace

Result<void> SaveGgufModel(const DecoderModel& model, GgmlType type, const std::string& path,
                           const std::optional<GgufTokenizerMetadata>& tokenizer) try {
  const ModelConfig& config = model.config();
  if (auto savable = CheckSavable(config, type, tokenizer); !savable) return savable;
  SharedBorrows reading(model.parameters());  // no update may change values mid-file
  GgufWriter writer;
  AddHyperparameters(writer, config, type);
  if (tokenizer) AddTokenizer(writer, *tokenizer);
  if (!config.rope_frequency_factors.empty()) {  // Llama 3.1's per-pair divisors
    const std::vector<float> factors(config.rope_frequency_factors.begin(), config.rope_frequency_factors.end());
    const uint64_t ne[] = {factors.size()};
    if (auto added = writer.AddTensor(std::string(kRopeFrequencies), ne, GgmlType::kF32, factors); !added) return added;
  }
  for (size_t i = 0; i < model.parameters().size(); ++i) {
    const Parameter& parameter = model.parameter(i);
    const std::vector<size_t>& shape = parameter.shape();
    const bool token_table = i == 0;
    // GGUF ne: the kvrt [in, out] shape, the token table's [V, D] reversed.
    std::vector<uint64_t> ne(shape.begin(), shape.end());
    if (token_table) std::swap(ne[0], ne[1]);
    GgmlType tensor_type = shape.size() == 1 ? GgmlType::kF32 : type;
    if (TypeInfo(tensor_type).block_elements > 1 && ne[0] % TypeInfo(tensor_type).block_elements != 0) {
      tensor_type = GgmlType::kF16;  // rows that are not whole blocks
    }
    const std::vector<float> stored = StoredValues(parameter, token_table);
    if (auto added = writer.AddTensor(GgufTensorName(config, i), ne, tensor_type, stored); !added) return added;
  }
  return writer.Save(path);
} catch (const std::bad_alloc&) {
  return Fail(ErrorCode::kAllocationFailed, {}, "could not allocate while writing " + path);
}

}  // namespace kvrt::gguf
