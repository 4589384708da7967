// kvrt inspect PATH --weights FORMAT: the format every weight matrix of the model
// is kept in by the fast engine for FORMAT, fallbacks marked.
#pragma once

#include <string>

#include "kvrt/weight_format.h"

namespace kvrt::cli {

// Loads the model at `path` and prints its weight plan (text or one JSON object).
// Returns the process status.
int PrintWeightPlan(const std::string& path, WeightFormat format, bool json_output);

}  // namespace kvrt::cli
