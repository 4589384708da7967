// Model configuration: the eight DecoderModelConfig fields of the reference
// (spec/model.md §1) plus the two extensions real checkpoints need.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "kvrt/error.h"

namespace kvrt {

struct ModelConfig {
  size_t vocabulary_size = 0;     // V: rows of the token table, width of the logits
  size_t model_width = 0;         // D: residual-stream width
  size_t heads = 0;               // H: query heads
  size_t feed_forward_width = 0;  // F: SwiGLU hidden width
  size_t layers = 0;              // L: decoder blocks (0 is legal)
  size_t max_positions = 0;       // P: context capacity = RoPE table rows
  double rope_base = 10000.0;
  double rms_epsilon = 1e-6;  // 0 is legal
  // Extensions (LLMCP35 models always have kv_heads == heads, a tied head and
  // rope_freq_scale 1).
  size_t kv_heads = 0;      // key/value heads for grouped-query attention; divides H
  bool tied_output = true;  // logits = final · Eᵀ; false: a separate output matrix
  // Linear RoPE scaling (llama.cpp's freq_scale = 1/rope.scaling.factor): every
  // rotation angle p·inv_f is multiplied by it, as if positions were p·scale.
  // Finite and positive; 1 leaves the angles' bits unchanged.
  double rope_freq_scale = 1.0;
  // Biases on the query, key and value projections (qwen2): q = x·Wq + bq, ...
  // They are three more parameters per block, listed after all the others.
  bool attention_bias = false;
  // Per-pair RoPE frequency divisors (Llama 3.1's rope_freqs): pair i of every
  // head turns at inv_f[i] / factor[i]. Empty: none. Otherwise head_width/2
  // finite, positive values; a factor of 1 leaves its angles' bits unchanged.
  std::vector<double> rope_frequency_factors;

  // The reference constructor: arguments in DecoderModelConfig::new order,
  // kv_heads = heads, tied output head.
  static ModelConfig Create(size_t vocabulary_size, size_t model_width, size_t heads,
                            size_t feed_forward_width, size_t layers, size_t max_positions,
                            double rope_base, double rms_epsilon);

  size_t head_width() const { return heads == 0 ? 0 : model_width / heads; }
  size_t kv_width() const { return kv_heads * head_width(); }
  size_t query_heads_per_kv_head() const { return kv_heads == 0 ? 0 : heads / kv_heads; }

  // spec/model.md §1.2, in that order (first failure wins); then the GQA and RoPE
  // extensions.
  Result<void> Validate() const;

  // Integers and flags equal and every float bit-equal (spec/kv-cache.md §3.3 step 1).
  bool SameAs(const ModelConfig& other) const;
};

}  // namespace kvrt
