// Reading the two header parts of an LLMCP35 file: the fixed 38 bytes with the
// extent and checksum checks (spec/checkpoint.md §9 steps 1–6) and the variable
// header with its field-by-field checks (step 7).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "formats/llmcp35/checkpoint.h"
#include "kvrt/config.h"
#include "kvrt/error.h"

namespace kvrt::llmcp35 {

struct FixedHeader {
  uint64_t header_bytes = 0;   // H
  uint64_t payload_bytes = 0;  // P
  uint64_t checksum = 0;
};

// Steps 1–6 over the whole file: length, magic, version, endianness marker,
// H + P = file length, then the checksum.
Result<FixedHeader> ReadFixedHeader(std::span<const uint8_t> file);

struct VariableHeader {
  uint8_t tokenizer_kind = 0;
  size_t tokenizer_vocabulary = 0;
  ModelConfig config;
  AdamWConfig adamw;
  bool has_groups = false;
  std::vector<std::string> decay_group;     // file order
  std::vector<std::string> no_decay_group;  // file order
  uint64_t optimizer_step = 0;
  double beta1_power = 0.0;
  double beta2_power = 0.0;
  uint64_t selected_step = 0;
  uint64_t rng_state = 0;
  size_t model_parameter_count = 0;  // M
  size_t optimizer_state_count = 0;  // S
  std::vector<TensorDescriptor> descriptors;
};

// Step 7 over bytes [38, H): every field in file order, each validated as it is
// read, and no bytes may remain after the last descriptor.
Result<VariableHeader> ReadVariableHeader(std::span<const uint8_t> header);

}  // namespace kvrt::llmcp35
