#include "model/parameter_access.h"
#include "model/decoder_model.h"
#include "model/rope.h"

#include <cmath>
#include <cstdio>
#include <new>
#include <string>
#include <utility>

#include "core/checked_math.h"
#include "model/derived_data.h"
#include "model/panel_layout.h"
#include "core/rust_format.h"

namespace kvrt {
namespace {

std::string ShapeText(const std::vector<size_t>& shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) text += ", ";
    text += std::to_string(shape[i]);
  }
  return text + "]";
}

// 2 + 9·L parameters (+1 for an untied head, +3·L with attention biases), or
// nullopt on overflow.
std::optional<size_t> ExpectedParameterCount(const ModelConfig& config) {
  const size_t per_block = kParametersPerBlock + (config.attention_bias ? kBiasesPerBlock : 0);
  std::optional<size_t> count = CheckedMul(per_block, config.layers);
  if (count) count = CheckedAdd(*count, config.tied_output ? 2 : 3);
  return count;
}

// Σ parameter scalars, computed without listing the parameters (a hostile layer
// count must not make validation allocate), or nullopt on overflow:
// V·D + L·(2D + 2D² + 2D·kv_width + 3D·F) + D (+ D·V untied).
std::optional<size_t> CheckedScalarCount(const ModelConfig& config) {
  const size_t v = config.vocabulary_size, d = config.model_width, f = config.feed_forward_width;
  std::optional<size_t> square = CheckedMul(d, d);
  std::optional<size_t> kv = CheckedMul(d, config.kv_width());
  std::optional<size_t> ffn = CheckedMul(d, f);
  if (!square || !kv || !ffn) return std::nullopt;
  // Biases: d + 2·kv_width more per block.
  std::optional<size_t> block = CheckedMul(config.attention_bias ? 3 : 2, d);
  if (block && config.attention_bias) {
    const std::optional<size_t> biases = CheckedMul(2, config.kv_width());
    block = biases ? CheckedAdd(*block, *biases) : std::nullopt;
  }
  for (const auto& [count, size] : {std::pair<size_t, size_t>{2, *square}, {2, *kv}, {3, *ffn}}) {
    const std::optional<size_t> part = CheckedMul(count, size);
    if (!block || !part) return std::nullopt;
    block = CheckedAdd(*block, *part);
  }
  std::optional<size_t> total = block ? CheckedMul(*block, config.layers) : std::nullopt;
  for (const std::optional<size_t> part :
       {CheckedMul(v, d), std::optional<size_t>(d),
        config.tied_output ? std::optional<size_t>(0) : CheckedMul(d, v)}) {
    if (!total || !part) return std::nullopt;
    total = CheckedAdd(*total, *part);
  }
  return total;
}

// Shape-only checks on the parameter list, in the order of spec/checkpoint.md §9
// step 11: count, names, structural faults of every component, and only then the
// sizes against the config's V, D and F.
Result<void> ValidateParameterLayout(const ModelConfig& config, std::span<const std::string> names,
                                     std::span<const std::vector<size_t>> shapes) {
  // The count is compared arithmetically before any name list is built.
  const size_t expected_count = ExpectedParameterCount(config).value_or(SIZE_MAX);
  if (names.size() != expected_count) {
    return Fail(ErrorCode::kParameterCountMismatch,
                {{"expected", uint64_t{expected_count}}, {"actual", uint64_t{names.size()}}},
                "decoder parameter count must be " + std::to_string(expected_count) + ", got " +
                    std::to_string(names.size()));
  }
  const std::vector<std::string> expected_names = ParameterNames(config);
  for (size_t i = 0; i < names.size(); ++i) {
    if (names[i] != expected_names[i]) {
      return Fail(ErrorCode::kParameterNameMismatch,
                  {{"index", uint64_t{i}}, {"expected", expected_names[i]}, {"actual", names[i]}},
                  "decoder parameter " + std::to_string(i) + " must be named " +
                      RustQuoted(expected_names[i]) + ", got " + RustQuoted(names[i]));
    }
  }

  auto structural = [&](size_t index, std::string requirement) {
    return Error(
        ErrorCode::kParameterShapeMismatch,
        {{"index", uint64_t{index}}, {"name", names[index]}, {"shape", ShapeText(shapes[index])}},
        "decoder parameter " + names[index] + " has shape " + ShapeText(shapes[index]) + ", but " +
            requirement);
  };
  auto is_matrix = [&](size_t index) {
    return shapes[index].size() == 2 && shapes[index][0] > 0 && shapes[index][1] > 0;
  };
  auto is_vector = [&](size_t index, size_t length) {
    return shapes[index].size() == 1 && shapes[index][0] == length && length > 0;
  };

  if (!is_matrix(0)) {
    return Fail(
        structural(0, "the token table must be a nonempty matrix").Wrap(ErrorCode::kEmbedding));
  }
  for (size_t layer = 0; layer < config.layers; ++layer) {
    auto at = [&](BlockSlot slot) { return BlockParameterIndex(layer, slot); };
    auto block_fault = [&](BlockSlot slot, const char* requirement) {
      return Fail(
          structural(at(slot), requirement).Wrap(ErrorCode::kBlock, {{"layer", uint64_t{layer}}}));
    };
    const size_t norm = at(BlockSlot::kAttentionNorm);
    if (shapes[norm].size() != 1 || shapes[norm][0] == 0) {
      return block_fault(BlockSlot::kAttentionNorm, "a norm gain must be a nonempty vector");
    }
    const size_t width = shapes[norm][0];
    for (BlockSlot slot : {BlockSlot::kQuery, BlockSlot::kOutput}) {
      if (shapes[at(slot)] != std::vector<size_t>{width, width}) {
        return block_fault(slot, "query and output projections must be [width, width]");
      }
    }
    if (!is_matrix(at(BlockSlot::kKey)) || shapes[at(BlockSlot::kKey)][0] != width) {
      return block_fault(BlockSlot::kKey, "the key projection must be [width, kv_width]");
    }
    if (shapes[at(BlockSlot::kValue)] != shapes[at(BlockSlot::kKey)]) {
      return block_fault(BlockSlot::kValue, "the value projection must match the key projection");
    }
    if (!is_vector(at(BlockSlot::kFeedForwardNorm), width)) {
      return block_fault(BlockSlot::kFeedForwardNorm, "the FFN norm gain must be [width]");
    }
    if (!is_matrix(at(BlockSlot::kGate)) || shapes[at(BlockSlot::kGate)][0] != width) {
      return block_fault(BlockSlot::kGate, "the gate must be [width, ffn_width]");
    }
    const size_t ffn = shapes[at(BlockSlot::kGate)][1];
    if (shapes[at(BlockSlot::kUp)] != std::vector<size_t>{width, ffn}) {
      return block_fault(BlockSlot::kUp, "the up projection must match the gate");
    }
    if (shapes[at(BlockSlot::kDown)] != std::vector<size_t>{ffn, width}) {
      return block_fault(BlockSlot::kDown, "the down projection must be [ffn_width, width]");
    }
  }
  const size_t final_norm = 1 + kParametersPerBlock * config.layers;
  if (shapes[final_norm].size() != 1 || shapes[final_norm][0] == 0) {
    return Fail(structural(final_norm, "a norm gain must be a nonempty vector")
                    .Wrap(ErrorCode::kFinalNorm));
  }
  if (!config.tied_output && !is_matrix(final_norm + 1)) {
    return Fail(structural(final_norm + 1, "the output head must be a nonempty matrix"));
  }
  for (size_t layer = 0; config.attention_bias && layer < config.layers; ++layer) {
    const size_t width = shapes[BlockParameterIndex(layer, BlockSlot::kAttentionNorm)][0];
    const size_t kv_width = shapes[BlockParameterIndex(layer, BlockSlot::kKey)][1];
    for (const auto& [slot, length] : {std::pair{BlockSlot::kQuery, width}, {BlockSlot::kKey, kv_width},
                                      {BlockSlot::kValue, kv_width}}) {
      const size_t index = AttentionBiasIndex(config, layer, slot);
      if (!is_vector(index, length)) {
        return Fail(structural(index, "a projection's bias must be a vector of its output width")
                        .Wrap(ErrorCode::kBlock, {{"layer", uint64_t{layer}}}));
      }
    }
  }

  // Sizes against the configuration.
  auto mismatch = [](ErrorCode code, std::vector<ErrorField> fields, size_t expected, size_t actual,
                     std::string what) {
    fields.push_back({"expected", uint64_t{expected}});
    fields.push_back({"actual", uint64_t{actual}});
    return Fail(code, std::move(fields),
                what + " must be " + std::to_string(expected) + ", got " + std::to_string(actual));
  };
  if (shapes[0][0] != config.vocabulary_size) {
    return mismatch(ErrorCode::kEmbeddingVocabularyMismatch, {}, config.vocabulary_size,
                    shapes[0][0], "token embedding vocabulary");
  }
  if (shapes[0][1] != config.model_width) {
    return mismatch(ErrorCode::kEmbeddingWidthMismatch, {}, config.model_width, shapes[0][1],
                    "token embedding width");
  }
  for (size_t layer = 0; layer < config.layers; ++layer) {
    const std::string block = "decoder block " + std::to_string(layer);
    const size_t width = shapes[BlockParameterIndex(layer, BlockSlot::kAttentionNorm)][0];
    if (width != config.model_width) {
      return mismatch(ErrorCode::kBlockModelWidthMismatch, {{"layer", uint64_t{layer}}},
                      config.model_width, width, block + " model width");
    }
    const size_t kv_width = shapes[BlockParameterIndex(layer, BlockSlot::kKey)][1];
    if (kv_width != config.kv_width()) {
      return mismatch(ErrorCode::kBlockModelWidthMismatch, {{"layer", uint64_t{layer}}},
                      config.kv_width(), kv_width, block + " key/value width");
    }
    const size_t ffn = shapes[BlockParameterIndex(layer, BlockSlot::kGate)][1];
    if (ffn != config.feed_forward_width) {
      return mismatch(ErrorCode::kBlockFeedForwardWidthMismatch, {{"layer", uint64_t{layer}}},
                      config.feed_forward_width, ffn, block + " feed-forward width");
    }
  }
  if (shapes[final_norm][0] != config.model_width) {
    return mismatch(ErrorCode::kFinalNormWidthMismatch, {}, config.model_width,
                    shapes[final_norm][0], "final norm width");
  }
  if (!config.tied_output &&
      shapes[final_norm + 1] != std::vector<size_t>{config.model_width, config.vocabulary_size}) {
    return Fail(structural(final_norm + 1, "the output head must be [model_width, vocabulary]"));
  }
  return {};
}

// The configuration rules of spec/model.md §1.2, then sizes that would overflow.
Result<void> ValidateConfigSizes(const ModelConfig& config) {
  if (auto valid = config.Validate(); !valid) return Fail(std::move(valid.error()));
  if (!CheckedScalarCount(config)) {
    return Fail(ErrorCode::kSizeOverflow, {{"context", std::string("parameter count")}},
                "decoder parameter sizes overflow");
  }
  return {};
}

Result<std::shared_ptr<const RopeTable>> BuildRope(const ModelConfig& config) {
  Result<RopeTable> rope =
      RopeTable::Create(config.head_width(), config.max_positions, config.rope_base, config.rope_freq_scale,
                        config.rope_frequency_factors);
  if (!rope) return Fail(std::move(rope.error()));
  return std::make_shared<const RopeTable>(std::move(*rope));
}

// Everything a parameter list must satisfy, in the order of spec/checkpoint.md §9
// step 11 (config, count, names, shapes, then the RoPE table being computable),
// as `Model(...)` errors; nothing is allocated in proportion to hostile sizes.
Result<void> ValidateModelLayout(const ModelConfig& config, std::span<const std::string> names,
                                 std::span<const std::vector<size_t>> shapes) {
  if (auto sizes = ValidateConfigSizes(config); !sizes) {
    return Fail(std::move(sizes.error()).Wrap(ErrorCode::kModel));
  }
  if (auto layout = ValidateParameterLayout(config, names, shapes); !layout) {
    return Fail(std::move(layout.error()).Wrap(ErrorCode::kModel));
  }
  if (auto rope = RopeTable::Validate(config.head_width(), config.max_positions, config.rope_base,
                                      config.rope_freq_scale, config.rope_frequency_factors);
      !rope) {
    return Fail(std::move(rope.error()).Wrap(ErrorCode::kModel));
  }
  return {};
}

// Parameter names are lowercase ASCII letters, digits, '_' and '.', with no empty
// dot-separated segment.
Result<void> ValidateName(const std::string& name) {
  for (size_t i = 0; i < name.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(name[i]);
    const bool allowed = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '.';
    if (!allowed) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "0x%02x", c);
      return Fail(ErrorCode::kInvalidNameCharacter, {{"index", uint64_t{i}}, {"byte", uint64_t{c}}},
                  "parameter name byte " + std::to_string(i) +
                      " must be lowercase ASCII, a digit, underscore, or dot; got " + hex);
    }
  }
  size_t segment_start = 0;
  for (size_t i = 0; i <= name.size(); ++i) {
    if (i == name.size() || name[i] == '.') {
      if (i == segment_start) {
        return Fail(ErrorCode::kEmptyNameSegment, {},
                    "parameter name " + RustQuoted(name) + " has an empty dot-separated segment");
      }
      segment_start = i + 1;
    }
  }
  return {};
}

// Xavier-uniform limit of a [fan_in, fan_out] matrix: sqrt(6 / (fan_in + fan_out)),
// the integer sum converted, one division, one sqrt (spec/model.md §10.2).
double XavierLimit(const std::vector<size_t>& shape) {
  return std::sqrt(6.0 / static_cast<double>(shape[0] + shape[1]));
}

// A seeded matrix written straight into f32 panels: the same draws in the same
// row-major order as the dense f64 model, each rounded to f32. The token table
// (transposed) is kept as the [D, V] vocabulary-head matrix.
Result<ParameterPtr> SeededPanels(const std::string& name, const std::vector<size_t>& shape,
                                  bool transposed, SplitMix64& draws) {
  const size_t k = transposed ? shape[1] : shape[0], n = transposed ? shape[0] : shape[1];
  std::optional<Buffer<float>> panels =
      Buffer<float>::Allocate(simd::PackedElementCount<float>(k, n), Pages::kHuge);
  if (!panels) {
    return Fail(ErrorCode::kAllocationFailed, {{"elements", uint64_t{shape[0] * shape[1]}}},
                "could not allocate the panels of " + name);
  }
  const double limit = XavierLimit(shape);
  for (size_t row = 0; row < shape[0]; ++row) {
    for (size_t column = 0; column < shape[1]; ++column) {
      const double value = limit * ((2.0 * draws.NextUnit()) - 1.0);
      const detail::PanelCoordinates at =
          detail::PanelCoordinatesOf(row, column, shape[0], shape[1], transposed);
      (*panels)[detail::PanelOffset<float>(at.k, at.n, at.rows)] = static_cast<float>(value);
    }
  }
  return Parameter::CreatePanels(
      name, shape, transposed ? ParameterLayout::kTransposedPanelsF32 : ParameterLayout::kPanelsF32,
      std::move(*panels));
}

}  // namespace

std::vector<std::string> ParameterNames(const ModelConfig& config) {
  std::vector<std::string> names;
  names.reserve(2 + kParametersPerBlock * config.layers + (config.tied_output ? 0 : 1));
  names.push_back("token_embedding.weight");
  for (size_t layer = 0; layer < config.layers; ++layer) {
    const std::string prefix = "blocks." + std::to_string(layer) + ".";
    for (const char* suffix :
         {"attention_norm.gain", "attention.query.weight", "attention.key.weight",
          "attention.value.weight", "attention.output.weight", "ffn_norm.gain", "ffn.gate.weight",
          "ffn.up.weight", "ffn.down.weight"}) {
      names.push_back(prefix + suffix);
    }
  }
  names.push_back("final_norm.gain");
  if (!config.tied_output) names.push_back("output.weight");
  for (size_t layer = 0; config.attention_bias && layer < config.layers; ++layer) {
    const std::string prefix = "blocks." + std::to_string(layer) + ".attention.";
    for (const char* projection : {"query", "key", "value"}) names.push_back(prefix + projection + ".bias");
  }
  return names;
}

std::vector<std::vector<size_t>> ParameterShapes(const ModelConfig& config) {
  const size_t v = config.vocabulary_size, d = config.model_width, f = config.feed_forward_width;
  const size_t kv = config.kv_width();
  std::vector<std::vector<size_t>> shapes;
  shapes.push_back({v, d});
  for (size_t layer = 0; layer < config.layers; ++layer) {
    shapes.insert(shapes.end(),
                  {{d}, {d, d}, {d, kv}, {d, kv}, {d, d}, {d}, {d, f}, {d, f}, {f, d}});
  }
  shapes.push_back({d});
  if (!config.tied_output) shapes.push_back({d, v});
  for (size_t layer = 0; config.attention_bias && layer < config.layers; ++layer) {
    shapes.insert(shapes.end(), {{d}, {kv}, {kv}});
  }
  return shapes;
}

DecoderModel::DecoderModel(ModelConfig config, std::vector<ParameterPtr> parameters,
                           std::shared_ptr<const RopeTable> rope)
    : config_(config),
      parameters_(std::move(parameters)),
      rope_(std::move(rope)),
      derived_(std::make_shared<DerivedData>()) {}

DecoderModel DecoderModel::WithParameters(std::vector<ParameterPtr> parameters) const {
  return DecoderModel(config_, std::move(parameters), rope_);
}

Result<DecoderModel> DecoderModel::FromSeed(const ModelConfig& config, SplitMix64& rng,
                                            ModelStorage storage) try {
  if (auto sizes = ValidateConfigSizes(config); !sizes) return Fail(std::move(sizes.error()));
  Result<std::shared_ptr<const RopeTable>> rope = BuildRope(config);
  if (!rope) return Fail(std::move(rope.error()));
  SplitMix64 draws = rng;  // transactional: the caller's generator moves only on success
  const std::vector<std::string> names = ParameterNames(config);
  const std::vector<std::vector<size_t>> shapes = ParameterShapes(config);
  std::vector<ParameterPtr> parameters;
  parameters.reserve(names.size());
  std::vector<double> values;
  for (size_t i = 0; i < names.size(); ++i) {
    const std::vector<size_t>& shape = shapes[i];
    Result<ParameterPtr> node = Fail(ErrorCode::kInvalidArgument, {}, "unreachable");
    if (shape.size() == 2 && storage == ModelStorage::kPanelsF32) {
      node = SeededPanels(names[i], shape, i == 0, draws);
    } else {
      // Gains start at exactly 1.0 and attention biases at 0.0, no draws.
      const bool bias = config.attention_bias && i >= AttentionBiasIndex(config, 0, BlockSlot::kQuery);
      values.assign(*CheckedProduct(shape), bias ? 0.0 : 1.0);
      if (shape.size() == 2) {
        const double limit = XavierLimit(shape);
        for (double& value : values) value = limit * ((2.0 * draws.NextUnit()) - 1.0);
      }
      node = Parameter::Create(names[i], shape, values);
    }
    if (!node) return Fail(std::move(node.error()));
    parameters.push_back(std::move(*node));
  }
  DecoderModel model(config, std::move(parameters), std::move(*rope));
  rng = draws;  // only now: building the model handle can still fail
  return model;
} catch (const std::bad_alloc&) {
  // The name list of a configuration with billions of layers, or the model's
  // bookkeeping; the parameter values are allocated without throwing.
  return Fail(ErrorCode::kAllocationFailed, {{"elements", uint64_t{config.layers}}},
              "could not allocate the parameter list of " + std::to_string(config.layers) + " layers");
}

namespace {

// The bookkeeping of the functions below (name and shape lists, parameter
// nodes, the model handle) lives in std containers; out of memory there must
// still come back as a typed error, with nothing changed.
std::unexpected<Error> BookkeepingAllocationFailed(const char* what) {
  return Fail(ErrorCode::kAllocationFailed, {}, std::string("could not allocate ") + what);
}

}  // namespace

Result<void> ValidateModelTensors(const ModelConfig& config,
                                  std::span<const NamedTensor> tensors) try {
  for (const NamedTensor& tensor : tensors) {
    if (auto named = ValidateName(tensor.name); !named) {
      return Fail(std::move(named.error()).Wrap(ErrorCode::kInitialization));
    }
    for (size_t i = 0; i < tensor.values.size(); ++i) {
      const double value = tensor.values[i];
      if (!std::isfinite(value)) {
        return Fail(
            Error(
                ErrorCode::kNonFiniteLeaf,
                {{"operation", Identifier{"Parameter"}}, {"index", uint64_t{i}}, {"value", value}},
                "parameter tensor value at flat index " + std::to_string(i) +
                    " must be finite, got " + RustDisplay(value))
                .Wrap(ErrorCode::kAutodiff)
                .Wrap(ErrorCode::kInitialization));
      }
    }
  }
  std::vector<std::string> names;
  std::vector<std::vector<size_t>> shapes;
  for (const NamedTensor& tensor : tensors) {
    names.push_back(tensor.name);
    shapes.push_back(tensor.shape);
  }
  return ValidateModelLayout(config, names, shapes);
} catch (const std::bad_alloc&) {
  return BookkeepingAllocationFailed("the parameter names and shapes");
}

Result<DecoderModel> DecoderModel::FromTensors(const ModelConfig& config,
                                               std::span<const NamedTensor> tensors) try {
  if (auto valid = ValidateModelTensors(config, tensors); !valid) {
    return Fail(std::move(valid.error()));
  }
  Result<std::shared_ptr<const RopeTable>> rope = BuildRope(config);
  if (!rope) return Fail(std::move(rope.error()).Wrap(ErrorCode::kModel));
  std::vector<ParameterPtr> parameters;
  parameters.reserve(tensors.size());
  for (const NamedTensor& tensor : tensors) {
    Result<ParameterPtr> node = Parameter::Create(tensor.name, tensor.shape, tensor.values);
    if (!node) return Fail(std::move(node.error()));
    parameters.push_back(std::move(*node));
  }
  return DecoderModel(config, std::move(parameters), std::move(*rope));
} catch (const std::bad_alloc&) {
  return BookkeepingAllocationFailed("the model's parameter list");
}

Result<DecoderModel> DecoderModel::FromParameters(const ModelConfig& config,
                                                  std::vector<ParameterPtr> parameters) try {
  std::vector<std::string> names;
  std::vector<std::vector<size_t>> shapes;
  for (const ParameterPtr& parameter : parameters) {
    names.push_back(parameter->name());
    shapes.push_back(parameter->shape());
  }
  if (auto layout = ValidateModelLayout(config, names, shapes); !layout) {
    return Fail(std::move(layout.error()));
  }
  Result<std::shared_ptr<const RopeTable>> rope = BuildRope(config);
  if (!rope) return Fail(std::move(rope.error()).Wrap(ErrorCode::kModel));
  return DecoderModel(config, std::move(parameters), std::move(*rope));
} catch (const std::bad_alloc&) {
  return BookkeepingAllocationFailed("the model's parameter list");
}

Result<DecoderModel> DecoderModel::RebuildFromValues() const try {
  std::vector<ParameterPtr> copies;
  copies.reserve(parameters_.size());
  for (const ParameterPtr& parameter : parameters_) {
    SharedBorrows reading({parameter});
    Result<ParameterPtr> copy = parameter->CopyAsNewNode();
    if (!copy) return Fail(std::move(copy.error()));
    copies.push_back(std::move(*copy));
  }
  return DecoderModel(config_, std::move(copies), rope_);
} catch (const std::bad_alloc&) {
  return BookkeepingAllocationFailed("the rebuilt model's parameter list");
}

Result<void> DecoderModel::UpdateParameters(std::span<const ParameterUpdate> updates) try {
  // Phase 1: validate everything before touching any borrow.
  std::vector<bool> listed(parameters_.size(), false);
  for (const ParameterUpdate& update : updates) {
    if (update.index >= parameters_.size()) {
      return Fail(ErrorCode::kUnknownParameter, {{"index", uint64_t{update.index}}},
                  "parameter index " + std::to_string(update.index) + " is out of range for " +
                      std::to_string(parameters_.size()) + " parameters");
    }
    const Parameter& parameter = *parameters_[update.index];
    if (listed[update.index]) {
      return Fail(ErrorCode::kInvalidArgument, {{"", parameter.name()}},
                  "parameter " + parameter.name() + " is listed twice in one update");
    }
    listed[update.index] = true;
    if (update.values.size() != parameter.element_count()) {
      return Fail(ErrorCode::kParameterShapeMismatch,
                  {{"index", uint64_t{update.index}},
                   {"name", parameter.name()},
                   {"shape", ShapeText(parameter.shape())}},
                  "update for " + parameter.name() + " has " +
                      std::to_string(update.values.size()) + " values, expected " +
                      std::to_string(parameter.element_count()));
    }
    for (size_t i = 0; i < update.values.size(); ++i) {
      if (!std::isfinite(update.values[i])) {
        return Fail(
            ErrorCode::kNonFiniteParameter,
            {{"name", parameter.name()}, {"index", uint64_t{i}}, {"value", update.values[i]}},
            "update for " + parameter.name() + " has a non-finite value at flat index " +
                std::to_string(i));
      }
    }
    if (parameter.revision() == UINT64_MAX) {
      return Fail(ErrorCode::kParameterRevisionOverflow, {{"name", parameter.name()}},
                  "value revision of " + parameter.name() + " would overflow");
    }
  }
  // Phase 2: exclusive borrows in list order; the first conflict aborts and
  // releases what was taken.
  size_t acquired = 0;
  for (; acquired < updates.size(); ++acquired) {
    if (!ParameterWriter::TryAcquireExclusive(*parameters_[updates[acquired].index])) break;
  }
  if (acquired < updates.size()) {
    const std::string& name = parameters_[updates[acquired].index]->name();
    for (size_t i = 0; i < acquired; ++i) {
      ParameterWriter::ReleaseExclusive(*parameters_[updates[i].index]);
    }
    return Fail(
        ErrorCode::kParameterValueBorrowed, {{"name", name}},
        "parameter " + RustQuoted(name) + " is borrowed by a live session and cannot be updated");
  }
  // Phase 3: commit; cannot fail.
  for (const ParameterUpdate& update : updates) {
    Parameter& parameter = *parameters_[update.index];
    ParameterWriter::WriteValues(parameter, update.values);
    ParameterWriter::AdvanceRevision(parameter);
    ParameterWriter::ReleaseExclusive(parameter);
  }
  return {};
} catch (const std::bad_alloc&) {
  // Phases 1 and 2 only (the list of seen indices, error messages); phase 2
  // releases what it took before building its error, so nothing is held.
  return BookkeepingAllocationFailed("the parameter update");
}

}  // namespace kvrt
