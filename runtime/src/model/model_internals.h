// Runtime-internal access to a model's engine-weight cache.
#pragma once

#include "model/packed_weights.h"
#include "kvrt/model.h"

namespace kvrt::detail {

struct ModelInternals {
  static EngineWeightsCache& WeightsCache(const DecoderModel& model) { return *model.engine_weights_; }
};

}  // namespace kvrt::detail
