// LlamaConfig and ValidateLlamaTensors: everything about a llama GGUF file that
// can be checked before a single weight is read.
#include <array>
#include <cmath>
#include <string>
#include <vector>

#include "formats/gguf/gguf_llama.h"
#include "formats/gguf/gguf_llama_names.h"
#include "formats/gguf/tensor_types.h"

namespace kvrt::gguf {
namespace {

std::string ShapeText(const std::array<uint64_t, kMaxDimensions>& ne, size_t n_dims) {
  std::string text = "[";
  for (size_t d = 0; d < n_dims; ++d) text += (d ? ", " : "") + std::to_string(ne[d]);
  return text + "]";
}

Result<void> Unsupported(ErrorCode code, std::vector<ErrorField> fields, std::string message) {
  return Fail(code, std::move(fields), std::move(message));
}

// The architecture's hyperparameter keys: "llama.block_count", "qwen2.block_count", ...
struct ArchitectureKeys {
  std::string_view prefix;
  std::string operator()(std::string_view key) const { return std::string(prefix) + std::string(key); }
};

// What llama.cpp (b4747, llm_load_hparams and the context's RoPE setup) makes of
// the RoPE scaling keys of a llama model: a missing type is "linear"; the factor
// comes from rope.scaling.factor, else the older rope.scale_linear, 0 or absent
// meaning none; freq_scale = 1/factor as an f32; "none" never scales. Returns the
// frequency scale, or refuses what kvrt does not implement: YaRN and LongRoPE
// (their own ramps and magnitudes), any other type (llama.cpp aborts), a factor
// that is negative or not finite, and rope.scaling.attn_factor ≠ 1 (llama.cpp
// multiplies the rotated queries and keys by it). original_context_length and
// finetuned only matter to YaRN.
Result<double> RopeFrequencyScale(const GgufFile& file, const ArchitectureKeys& keys) {
  const std::string type_key = keys("rope.scaling.type");
  Result<std::optional<std::string_view>> type = file.GetOptional<std::string_view>(type_key);
  if (!type) return Fail(std::move(type.error()));
  const std::string_view scaling = type->value_or("linear");
  if (scaling != "none" && scaling != "linear") {
    return Fail(ErrorCode::kUnsupportedRopeScaling, {{"key", type_key}, {"type", std::string(scaling)}},
                type_key + " = " + std::string(scaling) + ": kvrt implements plain RoPE and linear scaling only");
  }
  const std::string attention_key = keys("rope.scaling.attn_factor");
  Result<std::optional<float>> attention_factor = file.GetOptional<float>(attention_key);
  if (!attention_factor) return Fail(std::move(attention_factor.error()));
  if (*attention_factor && **attention_factor != 1.0f) {
    return Fail(ErrorCode::kUnsupportedRopeScaling, {{"key", attention_key}, {"type", std::string(scaling)}},
                attention_key + " = " + std::to_string(**attention_factor) +
                    ": kvrt does not scale the rotated queries and keys");
  }
  std::string factor_key = keys("rope.scaling.factor");
  Result<std::optional<float>> factor = file.GetOptional<float>(factor_key);
  if (!factor) return Fail(std::move(factor.error()));
  if (!*factor) {
    factor_key = keys("rope.scale_linear");
    factor = file.GetOptional<float>(factor_key);
    if (!factor) return Fail(std::move(factor.error()));
  }
  const float value = factor->value_or(0.0f);
  if (!std::isfinite(value) || value < 0.0f) {
    return Fail(ErrorCode::kUnsupportedRopeScaling, {{"key", factor_key}, {"type", std::string(scaling)}},
                factor_key + " = " + std::to_string(value) + ": a scaling factor must be finite and positive");
  }
  if (scaling == "none" || value == 0.0f) return 1.0;
  return static_cast<double>(1.0f / value);
}

// Refuses llama variants whose arithmetic kvrt does not implement.
Result<void> RejectVariants(const GgufFile& file, const ArchitectureKeys& keys) {
  if (const std::string window = keys("attention.sliding_window"); file.Find(window) != nullptr) {
    return Unsupported(ErrorCode::kUnsupportedSlidingWindow, {{"key", window}},
                       window + " is set: kvrt implements full causal attention only");
  }
  // llama.cpp builds a mixture of experts when expert_count > 0 (and refuses
  // expert_used_count > 0 without experts).
  for (const std::string& key : {keys("expert_count"), keys("expert_used_count")}) {
    Result<std::optional<uint32_t>> count = file.GetOptional<uint32_t>(key);
    if (!count) return Fail(std::move(count.error()));
    if (count->value_or(0) != 0) {
      return Unsupported(ErrorCode::kUnsupportedExperts, {{"key", key}, {"count", uint64_t{**count}}},
                         key + " = " + std::to_string(**count) +
                             ": kvrt runs dense models only, not mixtures of experts");
    }
  }
  return {};
}

// attention.key_length and value_length give the head widths of queries/keys and
// of values (llama.cpp sizes attn_q, attn_k, attn_v and attn_output by them); kvrt
// runs heads of width embedding_length / head_count only.
Result<void> RequireHeadWidths(const GgufFile& file, const ArchitectureKeys& keys, size_t head_width) {
  for (const std::string& key : {keys("attention.key_length"), keys("attention.value_length")}) {
    Result<std::optional<uint32_t>> width = file.GetOptional<uint32_t>(key);
    if (!width) return Fail(std::move(width.error()));
    if (*width && **width != head_width) {
      return Fail(ErrorCode::kHeadWidthMismatch,
                  {{"key", key}, {"value", uint64_t{**width}}, {"head_width", uint64_t{head_width}}},
                  key + " = " + std::to_string(**width) + " contradicts the head width " +
                      std::to_string(head_width) + " (embedding_length / head_count): kvrt runs heads of that width only");
    }
  }
  return {};
}

// Llama 3.1's rope_freqs.weight: one f32 divisor per rotated pair of a head
// (llama.cpp turns pair i at pos·base^(−2i/hw) / factor[i]). Absent: none.
// Refuses another type (ggml's rope reads f32 only) and another length.
Result<std::vector<double>> RopeFrequencyFactors(const GgufFile& file, size_t head_width) {
  const TensorInfo* tensor = file.FindTensor(kRopeFrequencies);
  if (tensor == nullptr) return std::vector<double>{};
  const std::string name(kRopeFrequencies);
  if (tensor->type != GgmlType::kF32) {
    return Fail(ErrorCode::kUnsupportedTensorType, {{"tensor", name}, {"type", std::string(TypeInfo(tensor->type).name)}},
                "tensor " + name + " must be F32 (ggml's RoPE reads its frequency factors as f32), got " +
                    std::string(TypeInfo(tensor->type).name));
  }
  const std::array<uint64_t, kMaxDimensions> expected{head_width / 2, 1, 1, 1};
  if (tensor->ne != expected) {
    return Fail(ErrorCode::kTensorShapeMismatch,
                {{"tensor", name}, {"expected", ShapeText(expected, 1)}, {"actual", ShapeText(tensor->ne, tensor->n_dims)}},
                "tensor " + name + " has shape " + ShapeText(tensor->ne, tensor->n_dims) + ", expected " +
                    ShapeText(expected, 1) + " (one factor per rotated pair)");
  }
  std::vector<float> values(head_width / 2);
  Dequantize(GgmlType::kF32, tensor->data, values);
  return std::vector<double>(values.begin(), values.end());
}

template <class T>
Result<T> Required(const GgufFile& file, const std::string& key) {
  return file.Get<T>(key);
}

}  // namespace

Result<GgufArchitecture> ArchitectureOf(const GgufFile& file) {
  Result<std::string_view> architecture = file.Get<std::string_view>("general.architecture");
  if (!architecture) return Fail(std::move(architecture.error()));
  if (*architecture == "llama") return GgufArchitecture::kLlama;
  if (*architecture == "qwen2") return GgufArchitecture::kQwen2;
  return Fail(ErrorCode::kUnsupportedArchitecture, {{"architecture", std::string(*architecture)}},
              "general.architecture = " + std::string(*architecture) +
                  ": kvrt reads GGUF models of the architectures llama and qwen2 only");
}

Result<ModelConfig> LlamaConfig(const GgufFile& file) {
  Result<GgufArchitecture> architecture = ArchitectureOf(file);
  if (!architecture) return Fail(std::move(architecture.error()));
  const ArchitectureKeys keys{*architecture == GgufArchitecture::kQwen2 ? "qwen2." : "llama."};
  if (auto variants = RejectVariants(file, keys); !variants) return Fail(std::move(variants.error()));
  Result<double> freq_scale = RopeFrequencyScale(file, keys);
  if (!freq_scale) return Fail(std::move(freq_scale.error()));

  Result<uint32_t> width = Required<uint32_t>(file, keys("embedding_length"));
  Result<uint32_t> layers = Required<uint32_t>(file, keys("block_count"));
  Result<uint32_t> ffn = Required<uint32_t>(file, keys("feed_forward_length"));
  Result<uint32_t> heads = Required<uint32_t>(file, keys("attention.head_count"));
  Result<uint32_t> context = Required<uint32_t>(file, keys("context_length"));
  Result<float> epsilon = Required<float>(file, keys("attention.layer_norm_rms_epsilon"));
  for (const Error* error : {width ? nullptr : &width.error(), layers ? nullptr : &layers.error(),
                             ffn ? nullptr : &ffn.error(), heads ? nullptr : &heads.error(),
                             context ? nullptr : &context.error(), epsilon ? nullptr : &epsilon.error()}) {
    if (error != nullptr) return Fail(*error);
  }
  Result<std::optional<uint32_t>> kv_heads = file.GetOptional<uint32_t>(keys("attention.head_count_kv"));
  if (!kv_heads) return Fail(std::move(kv_heads.error()));
  Result<std::optional<float>> base = file.GetOptional<float>(keys("rope.freq_base"));
  if (!base) return Fail(std::move(base.error()));
  const std::string rotated_key = keys("rope.dimension_count");
  Result<std::optional<uint32_t>> rotated = file.GetOptional<uint32_t>(rotated_key);
  if (!rotated) return Fail(std::move(rotated.error()));
  Result<std::optional<uint32_t>> vocabulary = file.GetOptional<uint32_t>(keys("vocab_size"));
  if (!vocabulary) return Fail(std::move(vocabulary.error()));

  size_t vocabulary_size = 0;
  if (*vocabulary) {
    vocabulary_size = **vocabulary;
  } else if (const TensorInfo* embedding = file.FindTensor(kTokenEmbedding)) {
    vocabulary_size = embedding->n_dims == 2 ? embedding->ne[1] : 0;
  } else {
    return Fail(ErrorCode::kMissingTensor, {{"tensor", std::string(kTokenEmbedding)}},
                "tensor token_embd.weight is missing from " + file.path());
  }
  // llama.cpp keeps epsilon as a float32; its exact value, widened, is kvrt's.
  ModelConfig config = ModelConfig::Create(vocabulary_size, *width, *heads, *ffn, *layers, *context,
                                           base->value_or(10000.0f), *epsilon);
  config.kv_heads = kv_heads->value_or(*heads);
  config.tied_output = file.FindTensor(kOutput) == nullptr;
  config.rope_freq_scale = *freq_scale;
  // llama.cpp requires q/k/v biases in qwen2 and loads none for llama.
  config.attention_bias = *architecture == GgufArchitecture::kQwen2;
  if (auto valid = config.Validate(); !valid) return Fail(std::move(valid.error()));
  const size_t head_width = config.head_width();
  if (auto widths = RequireHeadWidths(file, keys, head_width); !widths) return Fail(std::move(widths.error()));
  if (*rotated && **rotated != head_width) {
    return Fail(ErrorCode::kPartialRotaryDimension,
                {{"key", rotated_key}, {"rotated", uint64_t{**rotated}}, {"head_width", uint64_t{head_width}}},
                rotated_key + " = " + std::to_string(**rotated) + " rotates part of each head of width " +
                    std::to_string(head_width) + " (partial rotary dimension): kvrt rotates whole heads");
  }
  if (*architecture == GgufArchitecture::kLlama) {
    Result<std::vector<double>> factors = RopeFrequencyFactors(file, head_width);
    if (!factors) return Fail(std::move(factors.error()));
    config.rope_frequency_factors = std::move(*factors);
    if (auto valid = config.Validate(); !valid) return Fail(std::move(valid.error()));
  }
  return config;
}

Result<void> ValidateLlamaTensors(const GgufFile& file, const ModelConfig& config) {
  // 9·L + 2 or 3 tensors, looked up one at a time: the first missing one ends the
  // loop, so a hostile block count costs at most tensor_count + 1 lookups.
  const size_t count = ParameterCount(config);
  for (size_t i = 0; i < count; ++i) {
    const std::string name = GgufTensorName(config, i);
    const TensorInfo* tensor = file.FindTensor(name);
    if (tensor == nullptr) {
      return Fail(ErrorCode::kMissingTensor, {{"tensor", name}}, "tensor " + name + " is missing from " + file.path());
    }
    const ExpectedShape expected = ExpectedGgufShape(config, i);
    if (tensor->ne != expected.ne) {
      return Fail(ErrorCode::kTensorShapeMismatch,
                  {{"tensor", name},
                   {"expected", ShapeText(expected.ne, expected.n_dims)},
                   {"actual", ShapeText(tensor->ne, tensor->n_dims)}},
                  "tensor " + name + " has shape " + ShapeText(tensor->ne, tensor->n_dims) + ", expected " +
                      ShapeText(expected.ne, expected.n_dims));
    }
    if (auto supported = RequireSupported(tensor->type, name); !supported) return supported;
  }
  for (const TensorInfo& tensor : file.tensors()) {
    if (!IsLlamaTensorName(tensor.name, config)) {
      const std::string name(tensor.name);
      return Fail(ErrorCode::kUnexpectedTensor, {{"tensor", name}},
                  "tensor " + name + " is not part of a model kvrt can run (it reads llama models with an "
                  "optional rope_freqs.weight, and qwen2 models with q/k/v biases; other tensors are not supported)");
    }
  }
  if (const Value* tokens = file.Find("tokenizer.ggml.tokens");
      tokens != nullptr && tokens->type == ValueType::kArray && tokens->count != config.vocabulary_size) {
    return Fail(ErrorCode::kVocabularyMismatch,
                {{"key", std::string("tokenizer.ggml.tokens")},
                 {"tokenizer", tokens->count},
                 {"decoder", uint64_t{config.vocabulary_size}}},
                "tokenizer.ggml.tokens has " + std::to_string(tokens->count) + " tokens, but the model's vocabulary has " +
                    std::to_string(config.vocabulary_size));
  }
  return {};
}

}  // namespace kvrt::gguf
