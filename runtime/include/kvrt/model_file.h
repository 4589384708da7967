// Model files: which format a file holds, the tokenizer it carries, and what it
// holds, read without building its model.
//
// The format is recognised by content: the LLMCP35 magic, the GGUF magic, else a
// valid llama2.c header (llama2.c files have no magic). A damaged file with no
// recognisable content is diagnosed by the reader its extension names (.ckpt
// LLMCP35, .gguf GGUF, .bin llama2.c); any other gets UnknownModelFormat, whose
// message names every format tried. Every reader validates counts against the
// file size before it allocates, and opens only regular files (NotRegularFile
// names a FIFO, socket, directory or device).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kvrt/config.h"
#include "kvrt/error.h"
#include "kvrt/tokenizer.h"

namespace kvrt {

enum class ModelFormat : uint8_t {
  kLlmcp35,  // the course's checkpoint: model, tokenizer, optimizer and sampler state
  kLlama2c,  // llama2.c's model.bin: f32 weights only (tokenizer.bin comes separately)
  kGguf,     // llama.cpp's GGUF (architecture llama), with the tokenizer in its metadata
};

std::string_view ModelFormatName(ModelFormat format);  // "llmcp35", "llama2c", "gguf"

// The format of the file at `path`, by content. Io, NotRegularFile, or
// UnknownModelFormat.
Result<ModelFormat> DetectModelFormat(const std::string& path);

// The tokenizer a model file carries, without building its model: also reads
// vocabulary-only GGUF files (no tensors). InvalidArgument when the file carries
// none (a llama2.c model.bin: use LoadLlama2cTokenizer).
Result<Tokenizer> LoadTokenizer(const std::string& path);

// A llama2.c tokenizer.bin (the file does not store its count): every record,
// or exactly `vocabulary_size` of them for a model of that vocabulary
// (VocabularyMismatch otherwise). Truncated, InvalidHeaderValue,
// InvalidTokenLength and the llama2.c vocabulary checks.
Result<Tokenizer> LoadLlama2cTokenizer(const std::string& path,
                                       std::optional<size_t> vocabulary_size = std::nullopt);

// One tensor as a file stores it.
struct FileTensor {
  std::string name;
  std::string type;  // GGUF: "F32", "Q8_0", ...; LLMCP35: "u8", "u32", "f64"
  std::vector<uint64_t> shape;  // GGUF: ne, contiguous dimension first
  std::string role;     // LLMCP35: "ModelParameter", "LiteralToken", ...; GGUF: empty
  uint64_t offset = 0;  // LLMCP35: absolute file offset of the payload
  uint64_t bytes = 0;   // LLMCP35: payload length
};

// What a GGUF file's header says.
struct GgufFileSummary {
  uint32_t version = 0;
  std::string architecture;  // empty when general.architecture is absent
  std::string name;          // general.name
  uint64_t tensor_count = 0;
  uint64_t metadata_count = 0;
  uint64_t data_offset = 0;
  uint32_t alignment = 0;
  std::optional<uint64_t> context_length;  // <architecture>.context_length
  std::string tokenizer_model;             // tokenizer.ggml.model
  std::string tokenizer_pre;               // tokenizer.ggml.pre
  std::map<std::string, uint64_t> tensors_per_type;  // by type name
  std::vector<FileTensor> tensors;  // in file order
};
// Reads and validates the header, metadata and tensor directory.
Result<GgufFileSummary> SummarizeGgufFile(const std::string& path);

// What an LLMCP35 checkpoint holds (spec/checkpoint.md), beside its model.
struct CheckpointFileSummary {
  uint64_t file_bytes = 0;
  uint64_t header_bytes = 0;
  uint64_t payload_bytes = 0;
  uint64_t checksum = 0;  // FNV-1a 64 (spec/checkpoint.md §3)
  ModelConfig config;
  uint64_t parameter_tensors = 0;
  uint64_t parameter_scalars = 0;
  Tokenizer tokenizer;
  uint64_t selected_step = 0;
  uint64_t sampling_rng_state = 0;
  // The training state the course's checkpoints carry (AdamW).
  struct Optimizer {
    double learning_rate = 0.0;
    double beta1 = 0.0;
    double beta2 = 0.0;
    double epsilon = 0.0;
    double weight_decay = 0.0;
    uint64_t step = 0;
    bool has_groups = false;
    size_t moments = 0;
  } optimizer;
  std::vector<FileTensor> tensors;  // the tensor directory
};
// Reads and validates the whole checkpoint, as LoadModel does.
Result<CheckpointFileSummary> SummarizeCheckpointFile(const std::string& path);

}  // namespace kvrt
