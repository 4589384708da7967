// LLMCP35 version-1 checkpoints (spec/checkpoint.md): reading with every
// validation of §9 in order, and canonical writing.
//
// A checkpoint holds the decoder config and parameters, the tokenizer, the AdamW
// state, the selected step and the sampling RNG state. Reading never trusts a
// length field before checking it against the bytes that remain, so a small file
// cannot make the reader allocate gigabytes; acceptance is all-or-nothing.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "kvrt/config.h"
#include "kvrt/error.h"
#include "model/decoder_model.h"
#include "kvrt/tokenizer.h"

namespace kvrt {

enum class TensorRole : uint8_t {
  kLiteralToken = 1,
  kBpePairs = 2,
  kModelParameter = 3,
  kOptimizerFirstMoment = 4,
  kOptimizerSecondMoment = 5,
};

enum class TensorDType : uint8_t {
  kU8 = 1,
  kU32 = 2,
  kF64 = 3,
};

std::string_view TensorRoleName(TensorRole role);    // "LiteralToken", ...
std::string_view TensorDTypeName(TensorDType dtype);  // "u8", "u32", "f64"

// One record of the tensor directory (spec/checkpoint.md §5).
struct TensorDescriptor {
  TensorRole role = TensorRole::kModelParameter;
  std::string name;
  TensorDType dtype = TensorDType::kF64;
  std::vector<uint64_t> shape;
  uint64_t offset = 0;    // absolute file offset of the payload
  uint64_t byte_len = 0;
};

struct AdamWConfig {
  double learning_rate = 0.0;
  double beta1 = 0.0;
  double beta2 = 0.0;
  double epsilon = 0.0;
  double weight_decay = 0.0;
};

// First and second moments of one parameter.
struct OptimizerMoments {
  std::string name;
  std::vector<size_t> shape;
  std::vector<double> first;
  std::vector<double> second;
};

struct OptimizerState {
  AdamWConfig config;
  bool has_groups = false;
  std::vector<std::string> decay_group;     // byte order
  std::vector<std::string> no_decay_group;  // byte order
  uint64_t step = 0;
  double beta1_power = 1.0;
  double beta2_power = 1.0;
  std::vector<OptimizerMoments> moments;  // byte order of name; empty at step 0
};

struct Checkpoint {
  ModelConfig config;
  Tokenizer tokenizer;
  std::vector<NamedTensor> parameters;  // model order (spec/checkpoint.md §10)
  OptimizerState optimizer;
  uint64_t selected_step = 0;
  uint64_t sampling_rng_state = 0;

  // Facts of the encoded file (filled by the reader and the encoder).
  uint64_t file_bytes = 0;
  uint64_t header_bytes = 0;
  uint64_t payload_bytes = 0;
  uint64_t checksum = 0;
  std::vector<TensorDescriptor> descriptors;

  // A model over new parameter nodes (revision 0) holding these values.
  Result<DecoderModel> BuildModel() const;
};

// FNV-1a 64 over the whole file with bytes [30, 38) hashed as zeros (§3).
uint64_t CheckpointChecksum(std::span<const uint8_t> bytes);

// Parses and validates a whole file image (spec/checkpoint.md §9, steps 1–14).
Result<Checkpoint> ParseCheckpoint(std::span<const uint8_t> bytes);
// Reads `path` (Io{operation: "read"} on failure) and parses it.
Result<Checkpoint> LoadCheckpoint(const std::string& path);

// The canonical encoding of a checkpoint's state: descriptors, offsets, header
// size and checksum are derived from the content (the stored file facts are
// ignored). ParseCheckpoint(EncodeCheckpoint(c)) reproduces c.
Result<std::vector<uint8_t>> EncodeCheckpoint(const Checkpoint& checkpoint);

// Writes EncodeCheckpoint(checkpoint) with the reference's save_atomic procedure
// (temporary file in the same directory, fsync, rename, fsync of the directory),
// except that a destination which is a FIFO, socket or device is refused with
// NotRegularFile before the temporary is made (core/regular_file.h).
Result<void> SaveCheckpointAtomic(const Checkpoint& checkpoint, const std::string& path);

}  // namespace kvrt
