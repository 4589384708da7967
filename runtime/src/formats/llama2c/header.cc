// The llama2.c header and the model it describes. The checks here run before any
// size derived from the header is used, so a hostile header costs nothing.
#include "formats/llama2c/llama2c.h"

#include <cstring>
#include <limits>
#include <string>

#include "formats/byte_order.h"
#include "formats/llama2c/errors.h"

namespace kvrt {
namespace {

// run.c and export.py fix these; the file has no field for them.
constexpr double kRopeBase = 10000.0;
constexpr double kRmsEpsilon = 1e-5;

}  // namespace

namespace llama2c {

Llama2cHeader DecodeHeader(const std::array<uint8_t, kLlama2cHeaderBytes>& bytes) {
  int32_t fields[7];
  for (size_t i = 0; i < 7; ++i) {
    fields[i] = static_cast<int32_t>(llmcp35::LoadLittleEndian<uint32_t>(bytes.data() + 4 * i));
  }
  return Llama2cHeader{fields[0], fields[1], fields[2], fields[3], fields[4], fields[5], fields[6]};
}

std::array<uint8_t, kLlama2cHeaderBytes> EncodeHeader(const Llama2cHeader& header) {
  std::vector<uint8_t> out;
  for (const int32_t field : {header.dim, header.hidden_dim, header.n_layers, header.n_heads,
                              header.n_kv_heads, header.vocab_size, header.seq_len}) {
    llmcp35::AppendLittleEndian(out, static_cast<uint32_t>(field));
  }
  std::array<uint8_t, kLlama2cHeaderBytes> bytes{};
  std::memcpy(bytes.data(), out.data(), bytes.size());
  return bytes;
}

}  // namespace llama2c

Result<ModelConfig> Llama2cConfig(const Llama2cHeader& header) {
  // Every field but vocab_size must be positive; vocab_size carries the tied
  // flag in its sign, so only 0 is invalid there. int32 bounds every field, and
  // the file length bounds their products (checked by the reader).
  const std::pair<const char*, int32_t> positive[] = {
      {"dim", header.dim},         {"hidden_dim", header.hidden_dim},
      {"n_layers", header.n_layers}, {"n_heads", header.n_heads},
      {"n_kv_heads", header.n_kv_heads}, {"seq_len", header.seq_len}};
  for (const auto& [field, value] : positive) {
    if (value <= 0) return Fail(llama2c::InvalidHeaderValue(field, value, "it must be positive"));
  }
  if (header.vocab_size == 0) {
    return Fail(llama2c::InvalidHeaderValue("vocab_size", 0, "it must not be zero"));
  }
  if (header.dim % header.n_heads != 0) {
    return Fail(llama2c::InconsistentHeader("dim " + std::to_string(header.dim) +
                                            " is not divisible by n_heads " +
                                            std::to_string(header.n_heads)));
  }
  const int32_t head_size = header.dim / header.n_heads;
  if (head_size % 2 != 0) {
    return Fail(llama2c::InconsistentHeader("head size " + std::to_string(head_size) +
                                            " is odd, but RoPE rotates pairs"));
  }
  if (header.n_kv_heads > header.n_heads || header.n_heads % header.n_kv_heads != 0) {
    return Fail(llama2c::InconsistentHeader("n_kv_heads " + std::to_string(header.n_kv_heads) +
                                            " does not divide n_heads " +
                                            std::to_string(header.n_heads)));
  }
  // |INT32_MIN| does not fit int32, so the magnitude is taken in 64 bits.
  const int64_t vocab = header.vocab_size;
  ModelConfig config = ModelConfig::Create(
      static_cast<size_t>(vocab < 0 ? -vocab : vocab), static_cast<size_t>(header.dim),
      static_cast<size_t>(header.n_heads), static_cast<size_t>(header.hidden_dim),
      static_cast<size_t>(header.n_layers), static_cast<size_t>(header.seq_len), kRopeBase,
      kRmsEpsilon);
  config.kv_heads = static_cast<size_t>(header.n_kv_heads);
  config.tied_output = header.vocab_size > 0;
  if (auto valid = config.Validate(); !valid) return Fail(std::move(valid.error()));
  return config;
}

Result<Llama2cHeader> Llama2cHeaderOf(const ModelConfig& config) {
  if (auto valid = config.Validate(); !valid) return Fail(std::move(valid.error()));
  if (config.rope_base != kRopeBase || config.rms_epsilon != kRmsEpsilon || config.rope_freq_scale != 1.0) {
    return Fail(ErrorCode::kInvalidArgument, {},
                "a llama2.c checkpoint implies rope_base 10000, rms_epsilon 1e-5 and no RoPE scaling");
  }
  constexpr size_t kMax = std::numeric_limits<int32_t>::max();
  for (const size_t value : {config.model_width, config.feed_forward_width, config.layers,
                             config.heads, config.kv_heads, config.vocabulary_size,
                             config.max_positions}) {
    if (value == 0 || value > kMax) {
      return Fail(ErrorCode::kInvalidArgument, {},
                  "every llama2.c header field must be in [1, 2^31 - 1], got " +
                      std::to_string(value));
    }
  }
  const auto field = [](size_t value) { return static_cast<int32_t>(value); };
  const int32_t vocab = field(config.vocabulary_size);
  return Llama2cHeader{field(config.model_width), field(config.feed_forward_width),
                       field(config.layers),      field(config.heads),
                       field(config.kv_heads),    config.tied_output ? vocab : -vocab,
                       field(config.max_positions)};
}

}  // namespace kvrt
