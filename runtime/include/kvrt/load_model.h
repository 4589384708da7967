// Loading a model file of any format kvrt reads: the one entry point for
// embedders, the CLI and the C API.
//
//   kvrt::Result<kvrt::LoadedModel> loaded = kvrt::LoadModel("model.gguf");
//   if (!loaded) { /* loaded.error().name(), .message() */ }
//
// kvrt/model_file.h says how the format is recognised.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "kvrt/error.h"
#include "kvrt/model.h"
#include "kvrt/model_file.h"
#include "kvrt/tokenizer.h"

namespace kvrt {

struct LoadedModel {
  ModelFormat format;
  Model model;
  // The tokenizer the file carries (none for a llama2.c model.bin, nor for a
  // GGUF without tokenizer.ggml.* keys).
  std::optional<Tokenizer> tokenizer;
  // LLMCP35: the sampler state the checkpoint recorded (a generation that
  // continues the checkpoint's run starts from it).
  std::optional<uint64_t> sampling_rng_state;
  uint64_t file_bytes = 0;
};

// Reads the model (and its tokenizer) with the reader of DetectModelFormat's
// answer; every reader validates the whole file before it builds anything.
Result<LoadedModel> LoadModel(const std::string& path);

}  // namespace kvrt
