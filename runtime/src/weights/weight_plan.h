// Which format every weight matrix of a model is kept in for a requested format
// (fallbacks included): the plan the fast engine packs by.
#pragma once

#include <string>
#include <vector>

#include "kvrt/weight_format.h"
#include "model/decoder_model.h"

namespace kvrt {

// Every weight matrix of `model` (token table, per block query, key, value,
// output, gate, up, down, then an untied head) with the format the fast f32
// engine keeps it in for `requested`. Cheap: reads shapes and stored types only.
std::vector<MatrixWeightFormat> PlanWeightFormats(const DecoderModel& model,
                                                  WeightFormat requested);

}  // namespace kvrt
