// Llama-architecture models in GGUF files (general.architecture = "llama", or
// "qwen2": the same blocks with q/k/v biases): hyperparameters from the llama.*
// (qwen2.*) keys, weights from the token_embd / blk.N.* /
// output_norm / output tensors, dequantized at load into a kvrt DecoderModel.
//
// Tensor names and shapes (ne0 is the contiguous input dimension, so a matrix is
// ne1 rows of ne0, i.e. [out, in] — the transpose of kvrt's [in, out] x·W):
//   token_embd.weight  [D, V]     → token_embedding.weight [V, D] (the same bytes)
//   blk.N.attn_norm / ffn_norm.weight [D], output_norm.weight [D] (gains)
//   blk.N.attn_q [D, D], attn_k / attn_v [D, kv_width], attn_output [D, D],
//   ffn_gate / ffn_up [D, F], ffn_down [F, D]
//   output.weight [D, V] (optional: absent means a tied head)
// RoPE: kvrt rotates interleaved pairs (2i, 2i+1), which is what llama.cpp's
// LLAMA architecture does on GGUF weights as stored, so Q and K are used as
// stored (the HF → GGUF converter already permuted them).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "formats/gguf/gguf_file.h"
#include "kvrt/config.h"
#include "kvrt/error.h"
#include "kvrt/model_file.h"
#include "model/decoder_model.h"

namespace kvrt::gguf {

// The decoder architectures kvrt reads from GGUF (general.architecture). qwen2 is
// llama with q/k/v biases and NEOX RoPE (see BuildLlamaModel).
enum class GgufArchitecture { kLlama, kQwen2 };
// UnsupportedArchitecture{architecture} (naming the supported ones) for any other.
Result<GgufArchitecture> ArchitectureOf(const GgufFile& file);

// The ModelConfig of a llama or qwen2 GGUF file (keys under "llama." or "qwen2."), checked against its metadata (not yet
// against the tensors). Every llama.* key llama.cpp honours for the architecture
// either means the same here or refuses the file: UnsupportedArchitecture
// {architecture}, UnsupportedRopeScaling{key, type} (YaRN, LongRoPE, an invalid
// factor, attn_factor ≠ 1), UnsupportedSlidingWindow, UnsupportedExperts{key,
// count}, HeadWidthMismatch{key, value, head_width} (attention.key_length or
// value_length), PartialRotaryDimension{rotated, head_width}, MissingKey /
// KeyTypeMismatch / KeyValueOutOfRange, and the config's own errors for a zero or
// non-dividing head count. qwen2 sets attention_bias; a llama file's
// rope_freqs.weight (F32, head_width/2 values, else UnsupportedTensorType or
// TensorShapeMismatch) gives rope_frequency_factors. Linear RoPE scaling (a missing or "linear"
// rope.scaling.type with rope.scaling.factor or rope.scale_linear) sets
// rope_freq_scale = 1/factor. vocabulary_size comes from llama.vocab_size, else
// the token_embd rows; tied_output from the presence of output.weight.
Result<ModelConfig> LlamaConfig(const GgufFile& file);

// Every tensor present with the expected type support and shape, none other:
// MissingTensor{tensor}, UnexpectedTensor{tensor}, TensorShapeMismatch{tensor,
// expected, actual}, UnsupportedTensorType{tensor, type}, VocabularyMismatch
// (tokenizer.ggml.tokens count against the vocabulary).
Result<void> ValidateLlamaTensors(const GgufFile& file, const ModelConfig& config);

// The model: LlamaConfig, ValidateLlamaTensors, then every tensor dequantized
// into its parameter. qwen2 rotates pairs (i, i + hw/2) of each head (NEOX),
// kvrt pairs (2i, 2i + 1): the query and key rows and biases of each head are
// interleaved at load (new row 2i = stored row i, new row 2i + 1 = stored row
// i + hw/2), which turns one rotation into the other and leaves every q·k product
// unchanged. kDenseF64 keeps exact f64 values (the reference engine);
// kPanelsF32 writes f32 straight into the fast engine's panels (gains stay f64),
// one tensor at a time, so the weights exist once plus at most one dequantized
// row. NonFiniteParameter{name, index, value} for a NaN or infinite weight.
Result<DecoderModel> BuildLlamaModel(const GgufFile& file, ModelStorage storage);
// GgufFile::Open, then BuildLlamaModel.
Result<DecoderModel> LoadGgufModel(const std::string& path, ModelStorage storage = ModelStorage::kPanelsF32);

// What `kvrt inspect` shows about a GGUF file (kvrt/model_file.h).
Result<GgufFileSummary> SummarizeGguf(const GgufFile& file);

}  // namespace kvrt::gguf
