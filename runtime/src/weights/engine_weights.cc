#include "weights/engine_weights.h"
#include "weights/prepare_weights.h"
#include "model/rope.h"

#include <string>
#include <type_traits>

#include "kvrt/simd/bf16_activations.h"
#include "kvrt/simd/int8_activations.h"
#include "kvrt/simd/pack_matrix.h"
#include "weights/weight_arena.h"
#include "weights/compressed_format.h"
#include "weights/weight_plan.h"

namespace kvrt::detail {
namespace {

Error OutOfMemory(const std::string& what, size_t elements) {
  return Error(ErrorCode::kAllocationFailed, {{"elements", uint64_t{elements}}},
               "could not allocate the packed " + what);
}

// A parameter as a [K, N] matrix for x·W: the matrix itself, or the transpose of a
// [V, D] table (transposed = true gives the [D, V] head), in the format `plan`
// gives it for the requested `format`.
// `weight` moved into another layout of its bytes, `pack`'s (the int8-activation quads,
// the bf16-activation pairs); the old layout's buffer is released once the copy is made.
template <class Pack>
Result<void> Relayout(const std::string& name, const char* layout, CompressedWeight& weight, Pack pack) {
  std::optional<Buffer<uint8_t>> moved = Buffer<uint8_t>::Allocate(weight.owned.size(), Pages::kHuge);
  if (!moved) return Fail(OutOfMemory(name + " (" + layout + ")", weight.owned.size()));
  weight.view = pack(weight.view, moved->data());
  weight.owned = std::move(*moved);
  return {};
}

template <class T>
Result<PackedWeight<T>> PackWeight(const ParameterPtr& parameter, bool transposed,
                                   const MatrixWeightFormat& plan, WeightFormat format,
                                   ActivationRounding activations) {
  const std::vector<size_t>& shape = parameter->shape();
  const size_t k = transposed ? shape[1] : shape[0], n = transposed ? shape[0] : shape[1];
  PackedWeight<T> packed;
  if constexpr (std::is_same_v<T, float>) {
    if (CompressedFormatOf(plan.effective)) {
      Result<CompressedWeight> compressed = PackCompressedWeight(*parameter, transposed, plan);
      if (!compressed) return Fail(std::move(compressed.error()));
      packed.compressed = std::move(*compressed);
      const simd::CompressedMatrixView& view = packed.compressed.view;
      Result<void> moved;
      if (activations.int8 && simd::HasInt8Quads(view.type)) {
        moved = Relayout(parameter->name(), "int8-activation layout", packed.compressed, simd::PackInt8Quads);
      } else if (activations.bf16 && simd::HasBf16Pairs(view)) {
        moved = Relayout(parameter->name(), "bf16-activation layout", packed.compressed, simd::PackBf16Pairs);
      }
      if (!moved) return Fail(std::move(moved.error()));
      return packed;
    }
  } else if (format != WeightFormat::kAsStored) {
    // f64 on the values the format gives the f32 engine (the oracle's weights).
    std::optional<Buffer<double>> dense = Buffer<double>::Allocate(parameter->element_count());
    std::optional<Buffer<T>> owned =
        Buffer<T>::Allocate(simd::PackedElementCount<T>(k, n), Pages::kHuge);
    if (!dense || !owned) return Fail(OutOfMemory(parameter->name(), k * n));
    if (Result<void> values = QuantizedValues(*parameter, transposed, plan, dense->span()); !values) {
      return Fail(std::move(values.error()));
    }
    packed.view = simd::PackMatrix(dense->data(), k, n, transposed, owned->data());
    packed.owned = std::move(*owned);
    return packed;
  }
  const ParameterLayout aliasable =
      transposed ? ParameterLayout::kTransposedPanelsF32 : ParameterLayout::kPanelsF32;
  if constexpr (std::is_same_v<T, float>) {
    if (parameter->layout() == aliasable) {
      packed.view = simd::PackedMatrixView<float>::Panels(parameter->panels().data(), k, n);
      packed.source = parameter;
      return packed;
    }
  }
  std::optional<Buffer<T>> owned =
      Buffer<T>::Allocate(simd::PackedElementCount<T>(k, n), Pages::kHuge);
  if (!owned) return Fail(OutOfMemory(parameter->name(), k * n));
  if (parameter->is_dense()) {
    packed.view = simd::PackMatrix(parameter->values().data(), k, n, transposed, owned->data());
  } else {
    // f32 panels into another precision or orientation: through row-major f64.
    std::optional<Buffer<double>> dense = Buffer<double>::Allocate(parameter->element_count());
    if (!dense) return Fail(OutOfMemory(parameter->name(), k * n));
    parameter->ReadValues(dense->span());
    packed.view = simd::PackMatrix(dense->data(), k, n, transposed, owned->data());
  }
  packed.owned = std::move(*owned);
  return packed;
}

template <class T>
Result<Buffer<T>> ConvertVector(const Parameter& parameter) {
  std::optional<Buffer<double>> values = Buffer<double>::Allocate(parameter.element_count());
  std::optional<Buffer<T>> out = Buffer<T>::Allocate(parameter.element_count());
  if (!values || !out) return Fail(OutOfMemory(parameter.name(), parameter.element_count()));
  parameter.ReadValues(values->span());
  for (size_t i = 0; i < values->size(); ++i) (*out)[i] = static_cast<T>((*values)[i]);
  return std::move(*out);
}

// A block's query, key and value biases as one [D + 2·kv_width] vector.
template <class T>
Result<Buffer<T>> ConcatenateBiases(const DecoderModel& model, size_t layer) {
  const ModelConfig& config = model.config();
  const size_t width = config.model_width + 2 * config.kv_width();
  std::optional<Buffer<T>> out = Buffer<T>::Allocate(width);
  std::optional<Buffer<double>> values = Buffer<double>::Allocate(config.model_width);
  if (!out || !values) return Fail(OutOfMemory("attention biases", width));
  size_t offset = 0;
  for (BlockSlot slot : {BlockSlot::kQuery, BlockSlot::kKey, BlockSlot::kValue}) {
    const Parameter& bias = model.parameter(AttentionBiasIndex(config, layer, slot));
    const std::span<double> part = values->span().first(bias.element_count());
    bias.ReadValues(part);
    for (const double value : part) (*out)[offset++] = static_cast<T>(value);
  }
  return std::move(*out);
}

template <class T>
Result<Buffer<T>> ConvertTable(const double* values, size_t count) {
  std::optional<Buffer<T>> out = Buffer<T>::Allocate(count);
  if (!out) return Fail(OutOfMemory("RoPE table", count));
  for (size_t i = 0; i < count; ++i) (*out)[i] = static_cast<T>(values[i]);
  return std::move(*out);
}

}  // namespace

template <class T>
Result<std::shared_ptr<const EngineWeights<T>>> PackEngineWeights(const DecoderModel& model,
                                                                  WeightFormat format,
                                                                  ActivationRounding activations) {
  const ModelConfig& config = model.config();
  auto weights = std::make_shared<EngineWeights<T>>();
  weights->format = format;
  if constexpr (std::is_same_v<T, float>) weights->activations = activations;
  weights->plan = PlanWeightFormats(model, format);
  // The plan lists the token table, 7 matrices per block, then an untied head.
  auto plan_of = [&](size_t layer, BlockSlot slot) -> const MatrixWeightFormat& {
    size_t within = 0;
    while (kBlockMatrixSlots[within] != slot) ++within;
    return weights->plan[1 + layer * kBlockMatrixSlots.size() + within];
  };
  const std::vector<ParameterPtr>& parameters = model.parameters();
  for (size_t layer = 0; layer < config.layers; ++layer) {
    BlockWeights<T> block;
    auto matrix = [&](BlockSlot slot, PackedWeight<T>& out) -> Result<void> {
      Result<PackedWeight<T>> packed = PackWeight<T>(parameters[BlockParameterIndex(layer, slot)],
                                                     false, plan_of(layer, slot), format,
                                                     weights->activations);
      if (!packed) return Fail(std::move(packed.error()));
      out = std::move(*packed);
      return {};
    };
    for (auto [slot, out] : {std::pair{BlockSlot::kQuery, &block.query}, {BlockSlot::kKey, &block.key},
                             {BlockSlot::kValue, &block.value}, {BlockSlot::kOutput, &block.output},
                             {BlockSlot::kGate, &block.gate}, {BlockSlot::kUp, &block.up},
                             {BlockSlot::kDown, &block.down}}) {
      if (Result<void> packed = matrix(slot, *out); !packed) return Fail(std::move(packed.error()));
    }
    Result<Buffer<T>> attention_norm = ConvertVector<T>(model.block(layer, BlockSlot::kAttentionNorm));
    Result<Buffer<T>> ffn_norm = ConvertVector<T>(model.block(layer, BlockSlot::kFeedForwardNorm));
    if (!attention_norm) return Fail(std::move(attention_norm.error()));
    if (!ffn_norm) return Fail(std::move(ffn_norm.error()));
    block.attention_norm = std::move(*attention_norm);
    block.ffn_norm = std::move(*ffn_norm);
    if (config.attention_bias) {
      Result<Buffer<T>> biases = ConcatenateBiases<T>(model, layer);
      if (!biases) return Fail(std::move(biases.error()));
      block.qkv_bias = std::move(*biases);
    }
    weights->blocks.push_back(std::move(block));
  }
  Result<Buffer<T>> final_norm = ConvertVector<T>(model.final_norm());
  if (!final_norm) return Fail(std::move(final_norm.error()));
  weights->final_norm = std::move(*final_norm);
  Result<PackedWeight<T>> embedding =
      PackWeight<T>(parameters.front(), true, weights->plan.front(), format,
                    weights->activations);
  if (!embedding) return Fail(std::move(embedding.error()));
  weights->embedding = std::move(*embedding);
  if (!model.output_head_is_embedding()) {
    Result<PackedWeight<T>> head =
        PackWeight<T>(parameters[OutputHeadIndex(config)], false, weights->plan.back(), format,
                      weights->activations);
    if (!head) return Fail(std::move(head.error()));
    weights->head = std::move(*head);
  }
  const RopeTable& rope = model.rope();
  const size_t entries = rope.tabulated() * rope.pairs();  // the rest is computed per step
  Result<Buffer<T>> cos = ConvertTable<T>(rope.cos(0), entries);
  Result<Buffer<T>> sin = ConvertTable<T>(rope.sin(0), entries);
  if (!cos) return Fail(std::move(cos.error()));
  if (!sin) return Fail(std::move(sin.error()));
  weights->rope_cos = std::move(*cos);
  weights->rope_sin = std::move(*sin);
  for (const ParameterPtr& parameter : parameters) weights->revisions.push_back(parameter->revision());
  GatherIntoArena(*weights);
  return std::shared_ptr<const EngineWeights<T>>(std::move(weights));
}

template <class T>
Result<std::shared_ptr<const EngineWeights<T>>> EngineWeightsCache::Get(const DecoderModel& model,
                                                                        WeightFormat format,
                                                                        ActivationRounding activations) {
  if (!IsKnownWeightFormat(format)) {
    return Fail(ErrorCode::kUnsupportedBackend, {{"", std::string("unknown")}},
                "weight format " + std::to_string(static_cast<int>(format)) + " is not available");
  }
  std::lock_guard<std::mutex> lock(mutex_);
  const size_t slot = static_cast<size_t>(format);
  std::shared_ptr<const EngineWeights<T>>& cached = [&]() -> auto& {
    if constexpr (std::is_same_v<T, float>) {
      return activations.index() == 0 ? f32_[slot] : f32_rounded_[activations.index() - 1][slot];
    } else {
      return f64_[slot];
    }
  }();
  bool current = cached != nullptr;
  for (size_t i = 0; current && i < model.parameters().size(); ++i) {
    current = cached->revisions[i] == model.parameters()[i]->revision();
  }
  if (!current) {
    cached.reset();  // release a stale packing before building the next one
    Result<std::shared_ptr<const EngineWeights<T>>> packed = PackEngineWeights<T>(model, format, activations);
    if (!packed) return Fail(std::move(packed.error()));
    cached = std::move(*packed);
  }
  return cached;
}

Result<std::shared_ptr<const DecoderModel>> EngineWeightsCache::Dequantized(const DecoderModel& model,
                                                                           WeightFormat format) {
  if (!IsKnownWeightFormat(format)) {
    return Fail(ErrorCode::kUnsupportedBackend, {{"", std::string("unknown")}},
                "weight format " + std::to_string(static_cast<int>(format)) + " is not available");
  }
  std::lock_guard<std::mutex> lock(mutex_);
  DequantizedEntry& entry = dequantized_[static_cast<size_t>(format)];
  bool current = entry.model != nullptr;
  for (size_t i = 0; current && i < model.parameters().size(); ++i) {
    current = entry.revisions[i] == model.parameters()[i]->revision();
  }
  if (!current) {
    entry = {};
    Result<DecoderModel> dequantized = DequantizedModel(model, format);
    if (!dequantized) return Fail(std::move(dequantized.error()));
    entry.model = std::make_shared<const DecoderModel>(std::move(*dequantized));
    for (const ParameterPtr& parameter : model.parameters()) entry.revisions.push_back(parameter->revision());
  }
  return entry.model;
}

template Result<std::shared_ptr<const EngineWeights<float>>> PackEngineWeights<float>(const DecoderModel&, WeightFormat, ActivationRounding);
template Result<std::shared_ptr<const EngineWeights<double>>> PackEngineWeights<double>(const DecoderModel&, WeightFormat, ActivationRounding);
template Result<std::shared_ptr<const EngineWeights<float>>> EngineWeightsCache::Get<float>(const DecoderModel&, WeightFormat, ActivationRounding);
template Result<std::shared_ptr<const EngineWeights<double>>> EngineWeightsCache::Get<double>(const DecoderModel&, WeightFormat, ActivationRounding);

}  // namespace kvrt::detail

namespace kvrt {

bool ReachedByInt8Activations(WeightFormat format) {
  const std::optional<simd::CompressedFormat> type = detail::CompressedFormatOf(format);
  return type && simd::HasInt8Quads(*type);
}

}  // namespace kvrt
