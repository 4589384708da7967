// The TinyStories-shaped models the engine benchmarks run, built in memory from a
// seed straight into the fast engine's f32 layout (no f64 copy), once per process.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "model/decoder_model.h"

namespace kvrt::bench {

struct ModelShape {
  const char* name;
  size_t dim, layers, heads, ffn, vocab, context;
};

// 15M, 42M and 110M of llama2.c's TinyStories family, context 1024.
const std::vector<ModelShape>& TinyStoriesShapes();
const ModelShape& ShapeNamed(const std::string& name);

// The model of `shape` (seed 1, f32 panels), built on first use and kept.
const DecoderModel& SyntheticModel(const ModelShape& shape);

// Bytes of weights one decode step reads: every matrix once (the tied head
// included) and every gain, in f32.
double WeightBytesPerToken(const DecoderModel& model);
// Parameter count (FLOPs of a forward ≈ 2 × this per token).
double ParameterCount(const DecoderModel& model);

// `n` token ids, deterministic, within the vocabulary.
std::vector<uint32_t> PromptTokens(size_t n, size_t vocabulary);

}  // namespace kvrt::bench
