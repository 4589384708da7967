#include "formats/llmcp35/checkpoint_validation.h"

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/checked_math.h"
#include "formats/llmcp35/adamw_validation.h"
#include "formats/llmcp35/checkpoint_errors.h"
#include "core/result_macros.h"
#include "model/decoder_model.h"
#include "core/rust_format.h"

namespace kvrt::llmcp35 {
namespace {

// The record-level checks of the reference's TensorRecord::new for an f64 tensor:
// a non-empty name and exactly product(shape) values.
Result<void> CheckF64Record(const std::string& name, const std::vector<size_t>& shape,
                            size_t value_count) {
  if (name.empty()) return Fail(Layout("a tensor descriptor has an empty logical name"));
  const std::optional<size_t> elements = CheckedProduct(shape);
  const std::optional<size_t> expected =
      elements ? CheckedMul(*elements, sizeof(double)) : std::nullopt;
  if (!expected) return Fail(SizeOverflow("tensor shape times dtype width"));
  const size_t actual = value_count * sizeof(double);
  if (value_count != *elements) {
    return Fail(Layout("tensor " + RustQuoted(name) + " with shape " + ShapeDebug(shape) +
                       " and dtype f64 needs " + std::to_string(*expected) + " bytes, got " +
                       std::to_string(actual)));
  }
  return {};
}

std::vector<std::string> SortedNames(const std::vector<OptimizerMoments>& moments) {
  std::vector<std::string> names;
  names.reserve(moments.size());
  for (const OptimizerMoments& entry : moments) names.push_back(entry.name);
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace

Result<void> ValidateCrossComponents(const Checkpoint& checkpoint) {
  const size_t tokenizer_vocabulary = checkpoint.tokenizer.vocabulary_size();
  if (tokenizer_vocabulary != checkpoint.config.vocabulary_size) {
    return Fail(VocabularyMismatch(tokenizer_vocabulary, checkpoint.config.vocabulary_size));
  }
  const OptimizerState& optimizer = checkpoint.optimizer;
  if (checkpoint.selected_step != optimizer.step) {
    return Fail(StepMismatch(checkpoint.selected_step, optimizer.step));
  }
  if (checkpoint.selected_step == 0) return {};

  std::map<std::string_view, const std::vector<size_t>*> model_shapes;
  for (const NamedTensor& parameter : checkpoint.parameters) {
    model_shapes.emplace(parameter.name, &parameter.shape);
  }
  std::vector<std::string> expected;
  expected.reserve(model_shapes.size());
  for (const auto& [name, shape] : model_shapes) expected.emplace_back(name);
  std::vector<std::string> actual = SortedNames(optimizer.moments);
  if (actual != expected) return Fail(OptimizerNames(std::move(expected), std::move(actual)));

  std::map<std::string_view, const std::vector<size_t>*> moment_shapes;
  for (const OptimizerMoments& entry : optimizer.moments) {
    moment_shapes.emplace(entry.name, &entry.shape);
  }
  for (const auto& [name, shape] : model_shapes) {
    const std::vector<size_t>& moment_shape = *moment_shapes.at(name);
    if (moment_shape != *shape) {
      return Fail(OptimizerShape(std::string(name), *shape, moment_shape));
    }
  }
  return {};
}

Result<void> ValidateCheckpointState(const Checkpoint& checkpoint) {
  // Sizes first: every later check may rely on values matching shapes.
  for (const NamedTensor& parameter : checkpoint.parameters) {
    KVRT_RETURN_IF_ERROR(CheckF64Record(parameter.name, parameter.shape, parameter.values.size()));
  }
  for (const OptimizerMoments& entry : checkpoint.optimizer.moments) {
    KVRT_RETURN_IF_ERROR(CheckF64Record(entry.name, entry.shape, entry.first.size()));
    KVRT_RETURN_IF_ERROR(CheckF64Record(entry.name, entry.shape, entry.second.size()));
  }
  // LLMCP35 stores the eight reference config fields only.
  if (checkpoint.config.kv_heads != checkpoint.config.heads || !checkpoint.config.tied_output) {
    return Fail(
        Layout("LLMCP35 stores only tied-output models whose key/value heads equal the "
               "query heads"));
  }
  if (checkpoint.tokenizer.vocabulary_size() == 0) {
    // The default-constructed tokenizer; the factories never produce an empty one.
    return Fail(Error(ErrorCode::kTokenizer,
                      {{"", std::string("a literal tokenizer needs at least one ordered token")}},
                      "invalid checkpoint tokenizer: a literal tokenizer needs at least one "
                      "ordered token"));
  }
  if (checkpoint.parameters.empty()) return Fail(Layout("decoder parameter table is empty"));
  KVRT_RETURN_IF_ERROR(ValidateModelTensors(checkpoint.config, checkpoint.parameters));

  const OptimizerState& optimizer = checkpoint.optimizer;
  KVRT_RETURN_IF_ERROR(ValidateAdamWConfig(optimizer.config));
  if (optimizer.has_groups) {
    KVRT_RETURN_IF_ERROR(ValidateParameterGroups(optimizer.decay_group, optimizer.no_decay_group));
  }
  for (const OptimizerMoments& entry : optimizer.moments) {
    KVRT_RETURN_IF_ERROR(ValidateMomentValues(entry));
  }
  KVRT_RETURN_IF_ERROR(ValidateAdamWState(optimizer));
  return ValidateCrossComponents(checkpoint);
}

}  // namespace kvrt::llmcp35
