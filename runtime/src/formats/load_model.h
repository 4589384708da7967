// The one model-file dispatch, over the library's own model type: what
// LoadModel (kvrt/load_model.h) and the C API's kvrt_model_load read.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "kvrt/error.h"
#include "kvrt/model_file.h"
#include "kvrt/tokenizer.h"
#include "model/decoder_model.h"

namespace kvrt {

struct ModelFile {
  ModelFormat format;
  DecoderModel model;
  std::optional<Tokenizer> tokenizer;          // the file's own, when it has one
  std::optional<uint64_t> sampling_rng_state;  // LLMCP35 only
  uint64_t file_bytes = 0;
};

// Reads the model (and its tokenizer) with the reader of DetectModelFormat's
// answer; every reader validates the whole file before it builds anything.
Result<ModelFile> ReadModelFile(const std::string& path);

}  // namespace kvrt
