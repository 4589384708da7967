#include "generate/logit_shaping.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "core/rust_format.h"

namespace kvrt::sampling {

bool PenaltiesActive(const SamplerOptions& options) {
  return options.penalty_last_n != 0 &&
         (options.repetition_penalty != 1.0 || options.frequency_penalty != 0.0 ||
          options.presence_penalty != 0.0);
}

Result<void> ShapeLogits(std::span<const double> logits, const SamplerOptions& options,
                         const PenaltyWindow* window, std::span<double> shaped) {
  std::copy(logits.begin(), logits.end(), shaped.begin());
  for (const LogitBias& entry : options.logit_bias) {
    shaped[entry.token_id] = shaped[entry.token_id] + entry.bias;
  }
  if (window != nullptr) {
    const double repetition = options.repetition_penalty;
    const double frequency = options.frequency_penalty, presence = options.presence_penalty;
    for (const uint32_t id : window->counted()) {
      // Multiplying a negative logit (instead of dividing it) makes a repeated
      // token less likely whatever the logit's sign, as llama.cpp does.
      double value = shaped[id];
      value = value <= 0.0 ? value * repetition : value / repetition;
      shaped[id] = value - (static_cast<double>(window->count(id)) * frequency + presence);
    }
  }
  for (size_t id = 0; id < shaped.size(); ++id) {
    if (!std::isfinite(shaped[id])) {
      return Fail(ErrorCode::kNonFiniteLogit, {{"token_id", uint64_t{id}}, {"value", shaped[id]}},
                  "logit for token " + std::to_string(id) +
                      " is not finite after the logit bias and penalties: " + RustDisplay(shaped[id]));
    }
  }
  return {};
}

}  // namespace kvrt::sampling
