// GgufWriter: a small GGUF v3 writer (metadata of the common value types,
// tensors of F32/F16/BF16/Q8_0/Q4_0 quantized the way ggml's reference
// quantizers do), for tests, fuzz seeds and `kvrt synth --gguf`; and
// SaveGgufModel, which writes a kvrt model as a llama-architecture file.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "formats/gguf/tensor_types.h"
#include "kvrt/error.h"
#include "model/decoder_model.h"

namespace kvrt::gguf {

class GgufWriter {
 public:
  // Metadata, written in call order. An allocation failure is remembered and
  // reported by Serialize/Save (AllocationFailed), so these never throw.
  void AddU32(std::string_view key, uint32_t value);
  void AddI32(std::string_view key, int32_t value);
  void AddU64(std::string_view key, uint64_t value);
  void AddF32(std::string_view key, float value);
  void AddBool(std::string_view key, bool value);
  void AddString(std::string_view key, std::string_view value);
  void AddStringArray(std::string_view key, std::span<const std::string> values);
  void AddF32Array(std::string_view key, std::span<const float> values);
  void AddI32Array(std::string_view key, std::span<const int32_t> values);
  // Sets general.alignment and uses it for the data layout; anything but a power
  // of two makes Serialize fail with InvalidAlignment.
  void SetAlignment(uint32_t alignment);

  // A tensor of GGUF shape `ne` (ne[0] contiguous) from `values` in storage order
  // (ne1·ne2·ne3 rows of ne0), quantized to `type`. InvalidArgument for a
  // wrong value count, a shape of 0 or more than 4 dimensions, a row that is
  // not whole blocks, or an unsupported type.
  Result<void> AddTensor(std::string_view name, std::span<const uint64_t> ne, GgmlType type,
                         std::span<const float> values);

  // The whole file.
  Result<std::vector<uint8_t>> Serialize() const;
  // Serialize, then write to a temporary next to `path` renamed over it.
  Result<void> Save(const std::string& path) const;

 private:
  struct PendingTensor {
    std::string name;
    std::vector<uint64_t> ne;
    GgmlType type;
    std::vector<uint8_t> data;
  };
  void AppendKey(std::string_view key, uint32_t type);
  template <class F>
  void Guarded(F&& append);

  std::vector<uint8_t> metadata_;
  uint64_t kv_count_ = 0;
  std::vector<PendingTensor> tensors_;
  uint32_t alignment_ = 32;
  bool allocation_failed_ = false;
  uint32_t invalid_alignment_ = 0;
};

// The tokenizer keys of a llama GGUF file (tokenizer.ggml.*), all optional but
// `tokens`.
struct GgufTokenizerMetadata {
  std::string model = "llama";               // tokenizer.ggml.model
  std::vector<std::string> tokens;           // tokenizer.ggml.tokens
  std::vector<float> scores;                 // tokenizer.ggml.scores (empty: not written)
  std::vector<int32_t> token_types;          // tokenizer.ggml.token_type (empty: not written)
  std::optional<uint32_t> bos_token_id, eos_token_id, unknown_token_id;
};

// Writes `model` as a llama GGUF v3 file: the llama.* hyperparameters (epsilon
// and RoPE base as f32, the GGUF key types), every matrix as `type` (a matrix
// whose rows are not whole 32-value blocks falls back to F16 for Q8_0/Q4_0),
// gains as F32, output.weight only for an untied head, and the tokenizer keys
// when given. InvalidArgument for a size that does not fit u32, an unsupported
// type or a tokenizer whose token count is not the vocabulary size.
Result<void> SaveGgufModel(const DecoderModel& model, GgmlType type, const std::string& path,
                           const std::optional<GgufTokenizerMetadata>& tokenizer = std::nullopt);

}  // namespace kvrt::gguf
