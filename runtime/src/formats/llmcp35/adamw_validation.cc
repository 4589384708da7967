#include "formats/llmcp35/adamw_validation.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <set>
#include <string_view>
#include <utility>
#include <vector>

#include "formats/llmcp35/checkpoint_errors.h"
#include "core/rust_format.h"

namespace kvrt::llmcp35 {
namespace {

Result<void> AdamWFail(ErrorCode code, std::vector<ErrorField> fields, std::string message) {
  return Fail(Error(code, std::move(fields), std::move(message)).Wrap(ErrorCode::kAdamW));
}

Result<void> StateFail(ErrorCode code, std::vector<ErrorField> fields, std::string message) {
  return Fail(Error(code, std::move(fields), std::move(message)).Wrap(ErrorCode::kAdamWState));
}

// beta in [0, 1) and finite.
bool IsUnitInterval(double value) { return std::isfinite(value) && value >= 0.0 && value < 1.0; }

Result<void> ValidateGroup(std::span<const std::string> names, const char* group_name,
                           const char* group_label) {
  std::set<std::string_view> seen;
  for (const std::string& name : names) {
    if (name.empty()) {
      return AdamWFail(
          ErrorCode::kEmptyGroupedParameterName, {{"group", Identifier{group_name}}},
          std::string("the ") + group_label + " group contains an empty parameter name");
    }
    if (!seen.insert(name).second) {
      return AdamWFail(
          ErrorCode::kDuplicateGroupedParameter,
          {{"group", Identifier{group_name}}, {"name", name}},
          "parameter name " + RustQuoted(name) + " repeats inside the " + group_label + " group");
    }
  }
  return {};
}

Result<void> ValidateBetaPower(const char* name, double value, uint64_t step) {
  const bool valid = step == 0 ? std::bit_cast<uint64_t>(value) == std::bit_cast<uint64_t>(1.0)
                               : IsUnitInterval(value);
  if (valid) return {};
  return StateFail(
      ErrorCode::kInvalidBetaPower, {{"name", std::string(name)}, {"value", value}, {"step", step}},
      std::string(name) + " power must be exactly 1 at step zero or finite in [0,1) later, got " +
          RustDisplay(value) + " at step " + std::to_string(step));
}

std::vector<std::string> SortedUnique(std::vector<std::string> names) {
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  return names;
}

}  // namespace

Result<void> ValidateAdamWConfig(const AdamWConfig& config) {
  const double lr = config.learning_rate;
  if (!std::isfinite(lr) || lr <= 0.0) {
    return AdamWFail(ErrorCode::kInvalidLearningRate, {{"value", lr}},
                     "learning rate must be finite and greater than zero, got " + RustDisplay(lr));
  }
  if (!IsUnitInterval(config.beta1)) {
    return AdamWFail(
        ErrorCode::kInvalidBeta1, {{"value", config.beta1}},
        "beta1 must be finite in the half-open interval [0,1), got " + RustDisplay(config.beta1));
  }
  if (!IsUnitInterval(config.beta2)) {
    return AdamWFail(
        ErrorCode::kInvalidBeta2, {{"value", config.beta2}},
        "beta2 must be finite in the half-open interval [0,1), got " + RustDisplay(config.beta2));
  }
  if (!std::isfinite(config.epsilon) || config.epsilon <= 0.0) {
    return AdamWFail(
        ErrorCode::kInvalidEpsilon, {{"value", config.epsilon}},
        "epsilon must be finite and greater than zero, got " + RustDisplay(config.epsilon));
  }
  const double wd = config.weight_decay;
  if (!std::isfinite(wd) || wd < 0.0) {  // -0.0 passes, as in the reference
    return AdamWFail(ErrorCode::kInvalidWeightDecay, {{"value", wd}},
                     "weight decay must be finite and non-negative, got " + RustDisplay(wd));
  }
  const double product = lr * wd;
  if (wd != 0.0 && (!std::isfinite(product) || product <= 0.0 || product >= 1.0)) {
    return AdamWFail(ErrorCode::kInvalidDecayProduct,
                     {{"learning_rate", lr}, {"weight_decay", wd}, {"product", product}},
                     "positive weight decay requires represented learning_rate * weight_decay in "
                     "(0,1), got " +
                         RustDisplay(lr) + " * " + RustDisplay(wd) + " = " + RustDisplay(product));
  }
  return {};
}

Result<void> ValidateParameterGroups(std::span<const std::string> decay,
                                     std::span<const std::string> no_decay) {
  if (auto valid = ValidateGroup(decay, "Decay", "decay"); !valid) return valid;
  if (auto valid = ValidateGroup(no_decay, "NoDecay", "no-decay"); !valid) return valid;
  if (decay.empty() && no_decay.empty()) {
    return AdamWFail(ErrorCode::kEmptyParameterGroups, {},
                     "explicit AdamW parameter groups must assign at least one stable name");
  }
  // The reference reports the first name of the sorted intersection.
  const std::set<std::string_view> decay_names(decay.begin(), decay.end());
  const std::string* shared = nullptr;
  for (const std::string& name : no_decay) {
    if (decay_names.contains(name) && (shared == nullptr || name < *shared)) shared = &name;
  }
  if (shared != nullptr) {
    return AdamWFail(
        ErrorCode::kParameterInMultipleGroups, {{"name", *shared}},
        "parameter name " + RustQuoted(*shared) + " appears in both the decay and no-decay groups");
  }
  return {};
}

namespace {

Result<void> FirstNonFinite(const std::string& name, const char* kind,
                            const std::vector<double>& values) {
  for (size_t i = 0; i < values.size(); ++i) {
    if (!std::isfinite(values[i])) {
      return StateFail(ErrorCode::kNonFiniteMoment,
                       {{"name", name},
                        {"kind", std::string(kind)},
                        {"index", uint64_t{i}},
                        {"value", values[i]}},
                       "AdamW persistence parameter " + RustQuoted(name) + " has non-finite " +
                           kind + " moment at flat index " + std::to_string(i) + ": " +
                           RustDisplay(values[i]));
    }
  }
  return {};
}

}  // namespace

Result<void> ValidateMomentValues(const OptimizerMoments& moments) {
  if (auto valid = FirstNonFinite(moments.name, "first", moments.first); !valid) return valid;
  if (auto valid = FirstNonFinite(moments.name, "second", moments.second); !valid) return valid;
  for (size_t i = 0; i < moments.second.size(); ++i) {
    const double value = moments.second[i];
    if (value < 0.0) {
      return StateFail(ErrorCode::kNegativeSecondMoment,
                       {{"name", moments.name}, {"index", uint64_t{i}}, {"value", value}},
                       "AdamW persistence parameter " + RustQuoted(moments.name) +
                           " has negative second moment at flat index " + std::to_string(i) + ": " +
                           RustDisplay(value));
    }
  }
  return {};
}

Result<void> ValidateAdamWState(const OptimizerState& state) {
  if (auto valid = ValidateBetaPower("beta1", state.beta1_power, state.step); !valid) return valid;
  if (auto valid = ValidateBetaPower("beta2", state.beta2_power, state.step); !valid) return valid;
  if ((state.step == 0) != state.moments.empty()) {
    return StateFail(ErrorCode::kStatePresence,
                     {{"step", state.step}, {"entries", uint64_t{state.moments.size()}}},
                     "AdamW step " + std::to_string(state.step) + " is incompatible with " +
                         std::to_string(state.moments.size()) + " persisted moment entries");
  }
  std::set<std::string_view> seen;
  for (const OptimizerMoments& moments : state.moments) {
    if (!seen.insert(moments.name).second) {
      return StateFail(ErrorCode::kDuplicateParameterName, {{"name", moments.name}},
                       "AdamW persistence parameter name " + RustQuoted(moments.name) +
                           " appears more than once");
    }
  }
  if (state.has_groups && state.step > 0) {
    std::vector<std::string> expected = state.decay_group;
    expected.insert(expected.end(), state.no_decay_group.begin(), state.no_decay_group.end());
    expected = SortedUnique(std::move(expected));
    std::vector<std::string> actual;
    actual.reserve(state.moments.size());
    for (const OptimizerMoments& moments : state.moments) actual.push_back(moments.name);
    actual = SortedUnique(std::move(actual));
    if (expected != actual) {
      std::string message = "AdamW persistence groups name " + NamesDebug(expected) +
                            ", but moments name " + NamesDebug(actual);
      return StateFail(ErrorCode::kParameterGroupsMismatch,
                       {{"expected", std::move(expected)}, {"actual", std::move(actual)}},
                       std::move(message));
    }
  }
  return {};
}

}  // namespace kvrt::llmcp35
