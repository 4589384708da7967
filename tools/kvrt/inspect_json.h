// `kvrt inspect --json` for a llama2.c model.bin: the file, its config and its
// parameters (a model.bin holds no tokenizer, step or RNG state).
#pragma once

#include <string>

#include "json_writer.h"
#include "kvrt/load_model.h"

namespace kvrt::cli {

void PrintLlama2cJson(const std::string& path, const LoadedModel& loaded);

// The "config" object every model file's inspect --json carries.
void WriteConfigJson(JsonWriter& json, const ModelConfig& config);

}  // namespace kvrt::cli
