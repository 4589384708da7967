// Loading a model file of any format kvrt reads: the one entry point for
// embedders, the CLI and the C API.
//
//   Result<LoadedModel> loaded = kvrt::LoadModel("model.gguf");
//   if (!loaded) { /* loaded.error().name(), .message() */ }
//
// The format is recognised by content: the LLMCP35 magic, the GGUF magic, else a
// valid llama2.c header (llama2.c files have no magic). A damaged file with no
// recognisable content is diagnosed by the reader its extension names (.ckpt
// LLMCP35, .gguf GGUF, .bin llama2.c); any other gets UnknownModelFormat, whose
// message names every format tried.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "kvrt/error.h"
#include "model/decoder_model.h"
#include "kvrt/tokenizer.h"

namespace kvrt {

enum class ModelFormat : uint8_t {
  kLlmcp35,  // the course's checkpoint: model, tokenizer, optimizer and sampler state
  kLlama2c,  // llama2.c's model.bin: f32 weights only (tokenizer.bin comes separately)
  kGguf,     // llama.cpp's GGUF (architecture llama), with the tokenizer in its metadata
};

std::string_view ModelFormatName(ModelFormat format);  // "llmcp35", "llama2c", "gguf"

struct LoadedModel {
  ModelFormat format;
  DecoderModel model;
  // The tokenizer the file carries (none for a llama2.c model.bin, nor for a
  // GGUF without tokenizer.ggml.* keys).
  std::optional<Tokenizer> tokenizer;
  // LLMCP35: the sampler state the checkpoint recorded (a generation that
  // continues the checkpoint's run starts from it).
  std::optional<uint64_t> sampling_rng_state;
  uint64_t file_bytes = 0;
};

// The format of the file at `path`, by content (see above). Io, a typed error
// for paths that are not regular files, or UnknownModelFormat.
Result<ModelFormat> DetectModelFormat(const std::string& path);

// Reads the model (and its tokenizer) with the reader of DetectModelFormat's
// answer; every reader validates the whole file before it builds anything.
Result<LoadedModel> LoadModel(const std::string& path);

// The tokenizer of a model file without building its model: also reads
// vocabulary-only GGUF files (no tensors). InvalidArgument when the file carries
// no tokenizer (llama2.c: give its tokenizer.bin instead).
Result<Tokenizer> LoadTokenizer(const std::string& path);

}  // namespace kvrt
