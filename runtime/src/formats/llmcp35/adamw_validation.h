// Validation of the persisted AdamW state (spec/checkpoint.md §7.4, §9 steps 7
// and 12), with the reference's AdamWError / AdamWStateError variants. Every error
// is returned already wrapped as the checkpoint reports it: `AdamW(...)` for the
// config and the groups, `AdamWState(...)` for moments and the state as a whole.
#pragma once

#include <span>
#include <string>

#include "formats/llmcp35/checkpoint.h"
#include "kvrt/error.h"

namespace kvrt::llmcp35 {

// AdamWConfig::new: learning rate, beta1, beta2, epsilon, weight decay, then the
// decay product lr·wd when wd ≠ 0.
Result<void> ValidateAdamWConfig(const AdamWConfig& config);

// AdamWParameterGroups::new over the lists in file order: empty or repeated names
// per list (decay first), both lists empty, then the byte-order-first name found
// in both lists.
Result<void> ValidateParameterGroups(std::span<const std::string> decay,
                                     std::span<const std::string> no_decay);

// AdamWStateEntry::new for one decoded moment pair whose lengths already match its
// shape: non-finite first, then second moments, then a negative second moment.
Result<void> ValidateMomentValues(const OptimizerMoments& moments);

// AdamWState::new over entries in the given order: beta1 and beta2 powers, step
// versus presence of moments, repeated names, and (groups present, t > 0) the
// union of the groups against the moment names.
Result<void> ValidateAdamWState(const OptimizerState& state);

}  // namespace kvrt::llmcp35
