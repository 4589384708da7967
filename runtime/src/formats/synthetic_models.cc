// Synthetic model files (kvrt/synthetic.h).
#include <optional>
#include <string>
#include <vector>

#include "formats/gguf/gguf_writer.h"
#include "formats/llama2c/llama2c.h"
#include "formats/llmcp35/checkpoint.h"
#include "kvrt/synthetic.h"
#include "model/decoder_model.h"

namespace kvrt {
namespace {

// The golden cases' form of a seeded model (fixtures/golden/FORMAT.md §4).
Result<Checkpoint> SeededCheckpoint(const DecoderModel& model, uint64_t seed) {
  Checkpoint checkpoint;
  checkpoint.config = model.config();
  std::vector<std::string> pieces;
  for (size_t id = 0; id < model.config().vocabulary_size; ++id) pieces.push_back(std::to_string(id));
  Result<Tokenizer> tokenizer = Tokenizer::Literal(std::move(pieces));
  if (!tokenizer) return Fail(std::move(tokenizer.error()));
  checkpoint.tokenizer = std::move(*tokenizer);
  for (const ParameterPtr& parameter : model.parameters()) {
    NamedTensor tensor{parameter->name(), parameter->shape(), std::vector<double>(parameter->element_count())};
    parameter->ReadValues(tensor.values);
    checkpoint.parameters.push_back(std::move(tensor));
  }
  checkpoint.optimizer.config = AdamWConfig{1e-300, 0.9, 0.999, 1e-8, 0.0};
  checkpoint.sampling_rng_state = seed;
  return checkpoint;
}

// The synthetic llama2.c vocabulary as GGUF SentencePiece metadata (unk 0,
// controls 1 and 2, the byte pieces 3..258). Vocabularies under 259 pieces get none.
std::optional<gguf::GgufTokenizerMetadata> SyntheticGgufVocabulary(size_t vocabulary_size, uint64_t seed) {
  Result<Tokenizer> synthetic = SyntheticLlama2cTokenizer(vocabulary_size, seed);
  if (!synthetic) return std::nullopt;
  gguf::GgufTokenizerMetadata vocabulary;
  vocabulary.tokens = synthetic->pieces();
  vocabulary.scores = synthetic->scores();
  vocabulary.token_types.assign(vocabulary.tokens.size(), 1);
  vocabulary.token_types[0] = 2;
  vocabulary.token_types[1] = vocabulary.token_types[2] = 3;
  for (size_t id = 3; id < 259; ++id) vocabulary.token_types[id] = 6;
  vocabulary.unknown_token_id = 0;
  vocabulary.bos_token_id = 1;
  vocabulary.eos_token_id = 2;
  return vocabulary;
}

Result<gguf::GgmlType> GgufTypeOf(WeightFormat type) {
  switch (type) {
    case WeightFormat::kF32: return gguf::GgmlType::kF32;
    case WeightFormat::kF16: return gguf::GgmlType::kF16;
    case WeightFormat::kBf16: return gguf::GgmlType::kBF16;
    case WeightFormat::kQ8_0: return gguf::GgmlType::kQ8_0;
    case WeightFormat::kQ4_0: return gguf::GgmlType::kQ4_0;
    default: break;
  }
  return Fail(ErrorCode::kInvalidArgument, {},
              "a GGUF's matrices are f32, f16, bf16, q8_0 or q4_0, not " +
                  std::string(WeightFormatName(type)));
}

}  // namespace

Result<void> WriteSyntheticGguf(const ModelConfig& config, uint64_t seed, WeightFormat type,
                                const std::string& path) {
  Result<gguf::GgmlType> ggml_type = GgufTypeOf(type);
  if (!ggml_type) return Fail(std::move(ggml_type.error()));
  SplitMix64 rng(seed);
  // Panels: the f32 values only, one copy, however large the shape.
  Result<DecoderModel> model = DecoderModel::FromSeed(config, rng, ModelStorage::kPanelsF32);
  if (!model) return Fail(std::move(model.error()));
  return gguf::SaveGgufModel(*model, *ggml_type, path,
                             SyntheticGgufVocabulary(config.vocabulary_size, seed));
}

Result<uint64_t> WriteSyntheticLlama2c(const ModelConfig& config, uint64_t seed,
                                       const std::string& path) {
  Result<uint64_t> bytes = Llama2cFileBytes(config);
  if (!bytes) return Fail(std::move(bytes.error()));
  SplitMix64 rng(seed);
  Result<DecoderModel> model = DecoderModel::FromSeed(config, rng, ModelStorage::kPanelsF32);
  if (!model) return Fail(std::move(model.error()));
  if (Result<void> saved = SaveLlama2cModel(*model, path); !saved) return Fail(std::move(saved.error()));
  return *bytes;
}

Result<void> WriteSyntheticCheckpoint(const ModelConfig& config, uint64_t seed,
                                      const std::string& path) {
  if (config.kv_heads != config.heads || !config.tied_output) {
    return Fail(ErrorCode::kInvalidArgument, {},
                "LLMCP35 holds tied models with kv-heads = heads only");
  }
  // The model goes out of scope once its values are in the tensors.
  Result<Checkpoint> checkpoint = [&]() -> Result<Checkpoint> {
    SplitMix64 rng(seed);
    Result<DecoderModel> model = DecoderModel::FromSeed(config, rng, ModelStorage::kDenseF64);
    if (!model) return Fail(std::move(model.error()));
    return SeededCheckpoint(*model, seed);
  }();
  if (!checkpoint) return Fail(std::move(checkpoint.error()));
  return SaveCheckpointAtomic(*checkpoint, path);
}

Result<size_t> WriteSyntheticLlama2cTokenizer(size_t vocabulary_size, uint64_t seed,
                                              const std::string& path) {
  Result<Tokenizer> synthetic = SyntheticLlama2cTokenizer(vocabulary_size, seed);
  if (!synthetic) return Fail(std::move(synthetic.error()));
  if (Result<void> written = SaveLlama2cTokenizer(*synthetic, path); !written) {
    return Fail(std::move(written.error()));
  }
  return synthetic->vocabulary_size();
}

}  // namespace kvrt
