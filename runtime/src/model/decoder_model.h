// DecoderModel: configuration, named parameters and the RoPE tables of a
// Llama-style decoder (spec/model.md).
//
// A model is a cheap handle: copying it shares the parameter nodes (a "shallow
// copy", which binds to the same caches). Parameters are ordered as in
// spec/model.md §9: token_embedding.weight, then per block attention_norm.gain,
// attention.{query,key,value,output}.weight, ffn_norm.gain,
// ffn.{gate,up,down}.weight, then final_norm.gain (and output.weight when the
// output head is untied), then with ModelConfig::attention_bias the query, key and
// value biases of every block. Linear weights are [in, out], applied as x·W.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "kvrt/config.h"
#include "kvrt/error.h"
#include "model/parameter.h"
#include "kvrt/rng.h"

namespace kvrt {

class RopeTable;  // model/rope.h (internal): the precomputed RoPE tables

class DerivedData;  // model/derived_data.h (internal)

// Position of a parameter inside one block's group of nine.
enum class BlockSlot : size_t {
  kAttentionNorm = 0,
  kQuery = 1,
  kKey = 2,
  kValue = 3,
  kOutput = 4,
  kFeedForwardNorm = 5,
  kGate = 6,
  kUp = 7,
  kDown = 8,
};
inline constexpr size_t kParametersPerBlock = 9;

// Index of a block parameter in DecoderModel::parameters().
inline size_t BlockParameterIndex(size_t layer, BlockSlot slot) {
  return 1 + kParametersPerBlock * layer + static_cast<size_t>(slot);
}

// Index of final_norm.gain, after the blocks.
inline size_t FinalNormIndex(const ModelConfig& config) { return 1 + kParametersPerBlock * config.layers; }
// Index of an untied output head: right after the final norm (and before any
// attention biases), so it is not always the last parameter.
inline size_t OutputHeadIndex(const ModelConfig& config) { return FinalNormIndex(config) + 1; }

// With ModelConfig::attention_bias, the query, key and value biases of every block
// follow all the other parameters, three per block: blocks.N.attention.query.bias,
// .key.bias, .value.bias ([D], [kv_width], [kv_width]).
inline constexpr size_t kBiasesPerBlock = 3;
inline size_t AttentionBiasIndex(const ModelConfig& config, size_t layer, BlockSlot projection) {
  const size_t first = OutputHeadIndex(config) + (config.tied_output ? 0 : 1);
  return first + kBiasesPerBlock * layer + (static_cast<size_t>(projection) - static_cast<size_t>(BlockSlot::kQuery));
}

// The parameter names and shapes a configuration requires, in model order.
std::vector<std::string> ParameterNames(const ModelConfig& config);
std::vector<std::vector<size_t>> ParameterShapes(const ModelConfig& config);

// A parameter as stored in a file: name, shape and row-major values.
struct NamedTensor {
  std::string name;
  std::vector<size_t> shape;
  std::vector<double> values;
};

// The checks DecoderModel::FromTensors runs before it creates any node: per tensor
// the name and finiteness (`Initialization(...)` errors), then config, count,
// names and shapes (`Model(...)` errors), in the order of spec/checkpoint.md §9
// step 11.
Result<void> ValidateModelTensors(const ModelConfig& config, std::span<const NamedTensor> tensors);

// New values for one parameter (by model index), for DecoderModel::UpdateParameters.
struct ParameterUpdate {
  size_t index = 0;
  std::vector<double> values;
};

// How a model keeps its weight matrices (see parameter.h).
enum class ModelStorage {
  kDenseF64,  // exact f64 values: every engine and the bit-exact reference path
  kPanelsF32, // f32 in the fast engine's layout only: one copy of the weights, no f64
};

class DecoderModel {
 public:
  // Seeded initialisation (spec/model.md §10): Xavier-uniform draws from `rng` in
  // parameter order, gains 1.0. Transactional: `rng` advances only on success.
  // With kPanelsF32 every draw is rounded to f32 and written straight into the
  // panels, so building a large model never holds an f64 copy.
  static Result<DecoderModel> FromSeed(const ModelConfig& config, SplitMix64& rng,
                                       ModelStorage storage = ModelStorage::kDenseF64);

  // Rebuilds a model from named tensors in model order, with the validation of
  // spec/checkpoint.md §9 step 11: per tensor the name and finiteness
  // (`Initialization(...)` errors), then config, count, names and shapes
  // (`Model(...)` errors). Makes new nodes at revision 0.
  static Result<DecoderModel> FromTensors(const ModelConfig& config,
                                          std::span<const NamedTensor> tensors);

  // A model over existing nodes, possibly with another configuration (for example
  // the same nodes with a different epsilon). Checks config, names and shapes.
  static Result<DecoderModel> FromParameters(const ModelConfig& config,
                                             std::vector<ParameterPtr> parameters);

  const ModelConfig& config() const { return config_; }
  const std::vector<ParameterPtr>& parameters() const { return parameters_; }
  const Parameter& parameter(size_t index) const { return *parameters_[index]; }
  const Parameter& embedding() const { return *parameters_.front(); }
  const Parameter& block(size_t layer, BlockSlot slot) const {
    return *parameters_[BlockParameterIndex(layer, slot)];
  }
  const Parameter& final_norm() const {
    return *parameters_[FinalNormIndex(config_)];
  }
  // The vocabulary projection, [D, V] as x·W; for a tied head this is the embedding
  // [V, D] read transposed (see output_head_is_embedding()).
  const Parameter& output_head() const {
    return config_.tied_output ? embedding() : *parameters_[OutputHeadIndex(config_)];
  }
  bool output_head_is_embedding() const { return config_.tied_output; }
  // The RoPE tables (internal type; engines and tests include model/rope.h).
  const RopeTable& rope() const { return *rope_; }

  // The same values in new nodes (a model "rebuilt from equal values"): binds to no
  // cache of this model.
  Result<DecoderModel> RebuildFromValues() const;

  // A model of this configuration and RoPE tables over other nodes, which must
  // have this model's names and shapes (weights/dequantized_model.cc makes them).
  DecoderModel WithParameters(std::vector<ParameterPtr> parameters) const;

  // What engines derive from this model's parameters, shared by its copies.
  DerivedData& derived() const { return *derived_; }

  // The in-process equivalent of an optimiser step (spec/kv-cache.md §5.2–5.3).
  // Validates every update first (index, size, finite values, revision overflow),
  // then takes an exclusive borrow of each listed parameter in list order; the
  // first one a session is reading fails the whole update with
  // ParameterValueBorrowed{name} and nothing changes. On success every listed
  // parameter holds its new values and its revision advanced by exactly one.
  Result<void> UpdateParameters(std::span<const ParameterUpdate> updates);

 private:
  DecoderModel(ModelConfig config, std::vector<ParameterPtr> parameters,
               std::shared_ptr<const RopeTable> rope);

  ModelConfig config_;
  std::vector<ParameterPtr> parameters_;
  std::shared_ptr<const RopeTable> rope_;
  // What engines derive from the parameters (packed weights, dequantized
  // models); shared by copies of this handle, which share the nodes too.
  std::shared_ptr<DerivedData> derived_;
};

}  // namespace kvrt
