// The samplers that change logit values before any candidate is dropped
// (docs/sampling.md §2): the logit bias, then the repetition, frequency and
// presence penalties of the tokens in a penalty window.
#pragma once

#include <span>

#include "generate/penalty_window.h"
#include "kvrt/error.h"
#include "kvrt/sampling.h"

namespace kvrt::sampling {

// Whether the penalties change anything: a window of some tokens and a penalty
// away from its identity value (repetition 1, frequency 0, presence 0).
bool PenaltiesActive(const SamplerOptions& options);

// `shaped` (logits.size() values) becomes the logits, plus every bias in list
// order, then penalised for each id `window` counts (when given). A shaped
// value that is not finite is NonFiniteLogit{token_id, value}, the lowest such
// id first.
Result<void> ShapeLogits(std::span<const double> logits, const SamplerOptions& options,
                         const PenaltyWindow* window, std::span<double> shaped);

}  // namespace kvrt::sampling
