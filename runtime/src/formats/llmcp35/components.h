// Decoding the three record groups of a directory that already passed the
// layout checks (spec/checkpoint.md §9 steps 10–12): tokenizer records, model
// parameters, optimizer moment pairs. Each span of descriptors refers to
// payloads inside `file`, contiguous and in bounds.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "formats/llmcp35/header.h"
#include "formats/llmcp35/checkpoint.h"
#include "kvrt/error.h"
#include "model/decoder_model.h"
#include "kvrt/tokenizer.h"

namespace kvrt::llmcp35 {

// Step 10: literal pieces or BPE pairs, then the vocabulary field check.
Result<Tokenizer> DecodeTokenizer(uint8_t kind, size_t vocabulary,
                                  std::span<const TensorDescriptor> descriptors,
                                  std::span<const uint8_t> file);

// Step 11: role/dtype, name and finiteness per record, then the whole list
// against the config (ValidateModelTensors).
Result<std::vector<NamedTensor>> DecodeModel(const ModelConfig& config,
                                             std::span<const TensorDescriptor> descriptors,
                                             std::span<const uint8_t> file);

// Step 12: moment pairs one at a time, then the AdamW state as a whole. The
// returned state keeps the header's groups and the pairs in file order.
Result<OptimizerState> DecodeOptimizer(const VariableHeader& header,
                                       std::span<const TensorDescriptor> descriptors,
                                       std::span<const uint8_t> file);

}  // namespace kvrt::llmcp35
