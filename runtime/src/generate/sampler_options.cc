// ValidateSamplerOptions (kvrt/sampling.h).
#include <cmath>
#include <string>

#include "core/rust_format.h"
#include "kvrt/sampling.h"

namespace kvrt {
namespace {

std::unexpected<Error> InvalidSetting(const char* setting, double value, const std::string& rule) {
  return Fail(ErrorCode::kInvalidSamplerSetting,
              {{"setting", Identifier{setting}}, {"value", value}},
              std::string(setting) + " must be " + rule + ", received " + RustDisplay(value));
}

bool InUnitInterval(double value) { return value >= 0.0 && value <= 1.0; }  // false for NaN

}  // namespace

Result<void> ValidateSamplerOptions(const SamplerOptions& options, size_t vocabulary_size) {
  for (const LogitBias& entry : options.logit_bias) {
    if (entry.token_id >= vocabulary_size) {
      return Fail(ErrorCode::kLogitBiasOutOfBounds,
                  {{"token_id", uint64_t{entry.token_id}}, {"vocabulary_size", uint64_t{vocabulary_size}}},
                  "logit bias token " + std::to_string(entry.token_id) +
                      " is out of bounds for vocabulary " + std::to_string(vocabulary_size));
    }
    if (!std::isfinite(entry.bias)) return InvalidSetting("logit_bias", entry.bias, "finite");
  }
  if (!std::isfinite(options.repetition_penalty) || options.repetition_penalty <= 0.0) {
    return InvalidSetting("repetition_penalty", options.repetition_penalty, "finite and positive");
  }
  if (!std::isfinite(options.frequency_penalty)) {
    return InvalidSetting("frequency_penalty", options.frequency_penalty, "finite");
  }
  if (!std::isfinite(options.presence_penalty)) {
    return InvalidSetting("presence_penalty", options.presence_penalty, "finite");
  }
  if (options.penalty_last_n < -1) {
    return Fail(ErrorCode::kInvalidSamplerSetting,
                {{"setting", Identifier{"penalty_last_n"}}, {"value", options.penalty_last_n}},
                "penalty_last_n must be -1 (the whole sequence), 0 (none) or a token count, received " +
                    std::to_string(options.penalty_last_n));
  }
  if (!InUnitInterval(options.typical_p)) return InvalidSetting("typical_p", options.typical_p, "in [0, 1]");
  if (!InUnitInterval(options.top_p)) return InvalidSetting("top_p", options.top_p, "in [0, 1]");
  if (!InUnitInterval(options.min_p)) return InvalidSetting("min_p", options.min_p, "in [0, 1]");
  return {};
}

}  // namespace kvrt
