#include "model/packed_weights.h"
#include "model/rope.h"

#include <string>
#include <type_traits>

#include "kvrt/simd/pack_matrix.h"

namespace kvrt::detail {
namespace {

Error OutOfMemory(const std::string& what, size_t elements) {
  return Error(ErrorCode::kAllocationFailed, {{"elements", uint64_t{elements}}},
               "could not allocate the packed " + what);
}

// A parameter as a [K, N] matrix for x·W: the matrix itself, or the transpose of a
// [V, D] table (transposed = true gives the [D, V] head).
template <class T>
Result<PackedWeight<T>> PackWeight(const ParameterPtr& parameter, bool transposed) {
  const std::vector<size_t>& shape = parameter->shape();
  const size_t k = transposed ? shape[1] : shape[0], n = transposed ? shape[0] : shape[1];
  PackedWeight<T> packed;
  const ParameterLayout aliasable =
      transposed ? ParameterLayout::kTransposedPanelsF32 : ParameterLayout::kPanelsF32;
  if constexpr (std::is_same_v<T, float>) {
    if (parameter->layout() == aliasable) {
      packed.view = simd::PackedMatrixView<float>::Panels(parameter->panels().data(), k, n);
      packed.source = parameter;
      return packed;
    }
  }
  std::optional<Buffer<T>> owned = Buffer<T>::Allocate(simd::PackedElementCount<T>(k, n));
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

template <class T>
Result<Buffer<T>> ConvertTable(const double* values, size_t count) {
  std::optional<Buffer<T>> out = Buffer<T>::Allocate(count);
  if (!out) return Fail(OutOfMemory("RoPE table", count));
  for (size_t i = 0; i < count; ++i) (*out)[i] = static_cast<T>(values[i]);
  return std::move(*out);
}

}  // namespace

template <class T>
Result<std::shared_ptr<const EngineWeights<T>>> PackEngineWeights(const DecoderModel& model) {
  const ModelConfig& config = model.config();
  auto weights = std::make_shared<EngineWeights<T>>();
  const std::vector<ParameterPtr>& parameters = model.parameters();
  for (size_t layer = 0; layer < config.layers; ++layer) {
    BlockWeights<T> block;
    auto matrix = [&](BlockSlot slot, PackedWeight<T>& out) -> Result<void> {
      Result<PackedWeight<T>> packed = PackWeight<T>(parameters[BlockParameterIndex(layer, slot)], false);
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
    weights->blocks.push_back(std::move(block));
  }
  Result<Buffer<T>> final_norm = ConvertVector<T>(model.final_norm());
  if (!final_norm) return Fail(std::move(final_norm.error()));
  weights->final_norm = std::move(*final_norm);
  Result<PackedWeight<T>> embedding = PackWeight<T>(parameters.front(), true);
  if (!embedding) return Fail(std::move(embedding.error()));
  weights->embedding = std::move(*embedding);
  if (!model.output_head_is_embedding()) {
    Result<PackedWeight<T>> head = PackWeight<T>(parameters.back(), false);
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
  return std::shared_ptr<const EngineWeights<T>>(std::move(weights));
}

template <class T>
Result<std::shared_ptr<const EngineWeights<T>>> EngineWeightsCache::Get(const DecoderModel& model) {
  std::lock_guard<std::mutex> lock(mutex_);
  std::shared_ptr<const EngineWeights<T>>& cached = [&]() -> auto& {
    if constexpr (std::is_same_v<T, float>) {
      return f32_;
    } else {
      return f64_;
    }
  }();
  bool current = cached != nullptr;
  for (size_t i = 0; current && i < model.parameters().size(); ++i) {
    current = cached->revisions[i] == model.parameters()[i]->revision();
  }
  if (!current) {
    cached.reset();  // release a stale packing before building the next one
    Result<std::shared_ptr<const EngineWeights<T>>> packed = PackEngineWeights<T>(model);
    if (!packed) return Fail(std::move(packed.error()));
    cached = std::move(*packed);
  }
  return cached;
}

template Result<std::shared_ptr<const EngineWeights<float>>> PackEngineWeights<float>(const DecoderModel&);
template Result<std::shared_ptr<const EngineWeights<double>>> PackEngineWeights<double>(const DecoderModel&);
template Result<std::shared_ptr<const EngineWeights<float>>> EngineWeightsCache::Get<float>(const DecoderModel&);
template Result<std::shared_ptr<const EngineWeights<double>>> EngineWeightsCache::Get<double>(const DecoderModel&);

}  // namespace kvrt::detail
