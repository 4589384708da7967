// llama2.c files: the legacy checkpoint (model.bin) and the tokenizer
// (tokenizer.bin) of Karpathy's llama2.c, so kvrt runs the models its run.c runs.
//
// Checkpoint: a header of 7 little-endian int32 (dim, hidden_dim, n_layers,
// n_heads, n_kv_heads, vocab_size — negative when an untied classifier follows —,
// seq_len), then float32 tensors in this order: token embedding [V, D]; per-layer
// stacks of rms_att [L, D]; wq [L, D, D]; wk, wv [L, kv_dim, D]; wo [L, D, D];
// rms_ffn [L, D]; w1 (gate) [L, F, D]; w2 (down) [L, D, F]; w3 (up) [L, F, D]; then
// rms_final [D]; two RoPE tables [seq_len, head_size/2] that kvrt recomputes; and
// wcls [V, D] when untied. Matrices are stored [out, in], the transpose of
// kvrt's [in, out] x·W weights.
//
// A loaded model keeps its matrices in the fast engine's f32 panel layout
// (ModelStorage::kPanelsF32) and its gains as exact f64, with rope_base 10000,
// rms_epsilon 1e-5, max_positions = seq_len, kv_heads = n_kv_heads. Loading reads
// the file through a bounded buffer straight into the panels: the weights exist
// once in memory, and every size is checked against the file length, with
// overflow-checked products, before anything is allocated.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "kvrt/config.h"
#include "kvrt/error.h"
#include "kvrt/model_file.h"
#include "model/decoder_model.h"
#include "kvrt/tokenizer.h"

namespace kvrt {

inline constexpr size_t kLlama2cHeaderBytes = 7 * sizeof(int32_t);

struct Llama2cHeader {
  int32_t dim = 0;
  int32_t hidden_dim = 0;
  int32_t n_layers = 0;
  int32_t n_heads = 0;
  int32_t n_kv_heads = 0;
  int32_t vocab_size = 0;  // < 0: untied classifier weights follow the RoPE tables
  int32_t seq_len = 0;
};

// The header's model, or InvalidHeaderValue{field, value} (a field that is zero,
// negative — except vocab_size — or too large) and InconsistentHeader{reason}
// (dim not divisible by n_heads, odd head size, n_kv_heads not dividing n_heads).
Result<ModelConfig> Llama2cConfig(const Llama2cHeader& header);
// The header that describes `config` (InvalidArgument when a size does not fit
// int32 or the configuration is not llama2.c's: rope_base 10000 is required).
Result<Llama2cHeader> Llama2cHeaderOf(const ModelConfig& config);
// The exact length of a checkpoint of `config` (SizeOverflow when it does not fit).
Result<uint64_t> Llama2cFileBytes(const ModelConfig& config);

// Reads a checkpoint: Io{operation, path, os_error}; Truncated{context} (the file
// is shorter than its header says, or shorter than the header);
// TrailingBytes{expected, actual}; the header errors above; NonFiniteParameter
// {name, index, value} for a NaN or infinite weight; AllocationFailed.
Result<DecoderModel> LoadLlama2cModel(const std::string& path);
// Writes `model` as a llama2.c checkpoint (f32, an untied head as wcls), through
// a bounded buffer, to a temporary file renamed over `path`.
Result<void> SaveLlama2cModel(const DecoderModel& model, const std::string& path);

// tokenizer.bin: int32 max_token_length, then per token a float32 score, an
// int32 byte length and the bytes, up to the end of the file (the file does not
// store its count; run.c reads as many records as the model has tokens).
// Truncated{context}, InvalidHeaderValue{field: "max_token_length"},
// InvalidTokenLength{token_id, length}, then Tokenizer::Llama2c's checks.
// At most `max_pieces` records are decoded: a file with more is only walked to
// count them, then VocabularyMismatch{tokenizer: count, decoder: max_pieces}, so
// the work is bounded by the vocabulary the caller accepts.
Result<Tokenizer> ParseLlama2cTokenizer(std::span<const uint8_t> bytes, size_t max_pieces = SIZE_MAX);
Result<Tokenizer> ReadLlama2cTokenizer(const std::string& path, size_t max_pieces = SIZE_MAX);
// LoadLlama2cTokenizer (kvrt/model_file.h) is ReadLlama2cTokenizer plus a check
// that the file has exactly the model's vocabulary: a tokenizer.bin does not name
// its model.
// The tokenizer.bin bytes of a llama2.c tokenizer (InvalidArgument for other kinds).
Result<std::vector<uint8_t>> EncodeLlama2cTokenizer(const Tokenizer& tokenizer);
Result<void> SaveLlama2cTokenizer(const Tokenizer& tokenizer, const std::string& path);

// A synthetic llama2.c vocabulary of `vocabulary_size` pieces, deterministic in
// `seed`: <unk>, BOS "\n<s>\n" and EOS "\n</s>\n" (as llama2.c exports them), the
// 256 byte tokens <0x00>..<0xFF>, the printable ASCII characters, then merge
// pieces (concatenations of earlier pieces, at most 16 bytes) scored by rank.
// InvalidArgument when vocabulary_size < 259.
Result<Tokenizer> SyntheticLlama2cTokenizer(size_t vocabulary_size, uint64_t seed);

namespace llama2c {

// The 28-byte header as seven little-endian int32 (formats/llama2c/header.cc).
Llama2cHeader DecodeHeader(const std::array<uint8_t, kLlama2cHeaderBytes>& bytes);
std::array<uint8_t, kLlama2cHeaderBytes> EncodeHeader(const Llama2cHeader& header);

}  // namespace llama2c
}  // namespace kvrt
