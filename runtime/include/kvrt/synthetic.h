// Model files of random weights, for tests, benchmarks and trying a shape before
// a trained model exists: the reference's seeded initialisation (Xavier-uniform
// draws from a SplitMix64 seed, spec/model.md §10) in any shape, written in each
// format kvrt reads. The same seed gives the same draws in every format; each
// format rounds them its own way. Every writer goes through a temporary file
// renamed over `path`.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "kvrt/config.h"
#include "kvrt/error.h"
#include "kvrt/weight_format.h"

namespace kvrt {

// A llama-architecture GGUF whose matrices are in `type` (f32, f16, bf16, q8_0 or
// q4_0, converted with ggml's quantizers), with a synthetic SentencePiece
// vocabulary when the model has at least 259 tokens (so text prompts work).
Result<void> WriteSyntheticGguf(const ModelConfig& config, uint64_t seed, WeightFormat type,
                                const std::string& path);

// A llama2.c model.bin (f32); returns the file's length. The configuration must
// be one llama2.c records (rope base 10000).
Result<uint64_t> WriteSyntheticLlama2c(const ModelConfig& config, uint64_t seed,
                                       const std::string& path);

// An LLMCP35 checkpoint (f64) in the golden cases' form: literal tokenizer
// "0".."V-1", step 0, AdamW at learning rate 1e-300, no moments, the seed as the
// sampling state. Tied models with kv_heads == heads only (InvalidArgument).
Result<void> WriteSyntheticCheckpoint(const ModelConfig& config, uint64_t seed,
                                      const std::string& path);

// A llama2.c tokenizer.bin of `vocabulary_size` pieces (unknown, BOS, EOS, the
// 256 byte pieces, then pieces made from the seed); returns the piece count.
Result<size_t> WriteSyntheticLlama2cTokenizer(size_t vocabulary_size, uint64_t seed,
                                              const std::string& path);

}  // namespace kvrt
