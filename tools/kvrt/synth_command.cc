// kvrt synth: random-weight models of a named or explicit shape, from a seed, in
// llama2.c format (f32), in LLMCP35 (f64) and with a matching synthetic
// tokenizer.bin. Both model files hold the same seeded draws (DecoderModel::
// FromSeed); the llama2.c file rounds them to f32.
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "commands.h"
#include "common.h"
#include "formats/gguf/gguf_writer.h"
#include "formats/llmcp35/checkpoint.h"
#include "formats/llama2c/llama2c.h"
#include "kvrt/model.h"
#include "output.h"

namespace kvrt::cli {
namespace {

constexpr FlagSpec kFlags[] = {
    {"shape", true, "15M, 42M or 110M (llama2.c's TinyStories shapes); flags below override"},
    {"dim", true, "model width D"},
    {"layers", true, "decoder blocks L"},
    {"heads", true, "query heads H"},
    {"kv-heads", true, "key/value heads (default: heads)"},
    {"ffn", true, "SwiGLU hidden width F"},
    {"vocab", true, "vocabulary size V"},
    {"seq-len", true, "context length (max_positions)"},
    {"untied", false, "a separate output matrix instead of the tied embedding"},
    {"seed", true, "SplitMix64 seed of the weights and the tokenizer (default 0)"},
    {"llama2c", true, "write the model here in llama2.c format (f32)"},
    {"llmcp35", true, "write the model here as an LLMCP35 checkpoint (f64, literal tokenizer)"},
    {"gguf", true, "write the model here as a llama-architecture GGUF (with a synthetic vocabulary)"},
    {"type", true, "tensor type of the GGUF's matrices: f32 (default), f16, bf16, q8_0 or q4_0"},
    {"tokenizer", true, "write a synthetic llama2.c tokenizer.bin of V pieces here"},
    {"help", false, "show this help"},
};

struct NamedShape {
  const char* name;
  size_t dim, layers, heads, ffn, vocab, seq_len;
};
// llama2.c's TinyStories models (its README); ffn as model.py derives it.
constexpr NamedShape kShapes[] = {
    {"15M", 288, 6, 6, 768, 32000, 256},
    {"42M", 512, 8, 8, 1376, 32000, 1024},
    {"110M", 768, 12, 12, 2048, 32000, 1024},
};

Result<ModelConfig> ConfigFromFlags(const Flags& flags) {
  NamedShape shape{"", 0, 0, 0, 0, 0, 0};
  if (std::optional<std::string> name = flags.Value("shape")) {
    bool found = false;
    for (const NamedShape& candidate : kShapes) {
      if (*name == candidate.name) {
        shape = candidate;
        found = true;
      }
    }
    if (!found) return std::unexpected(InvalidArgument("--shape must be 15M, 42M or 110M, got '" + *name + "'"));
  }
  auto dimension = [&](const char* flag, size_t fallback) -> Result<size_t> {
    Result<uint64_t> value = flags.Unsigned(flag, fallback);
    if (!value) return std::unexpected(value.error());
    if (*value == 0 || *value > INT32_MAX) {
      return std::unexpected(InvalidArgument(std::string("--") + flag + " must be in [1, 2^31 - 1]" +
                                             (flags.Has("shape") ? "" : " (give --shape or every dimension)")));
    }
    return static_cast<size_t>(*value);
  };
  Result<size_t> dim = dimension("dim", shape.dim), layers = dimension("layers", shape.layers),
                 heads = dimension("heads", shape.heads), ffn = dimension("ffn", shape.ffn),
                 vocab = dimension("vocab", shape.vocab), seq_len = dimension("seq-len", shape.seq_len);
  for (const Result<size_t>* value : {&dim, &layers, &heads, &ffn, &vocab, &seq_len}) {
    if (!*value) return std::unexpected(value->error());
  }
  Result<size_t> kv_heads = dimension("kv-heads", *heads);
  if (!kv_heads) return std::unexpected(kv_heads.error());
  // run.c's constants, which a llama2.c file cannot record.
  ModelConfig config = ModelConfig::Create(*vocab, *dim, *heads, *ffn, *layers, *seq_len, 10000.0, 1e-5);
  config.kv_heads = *kv_heads;
  config.tied_output = !flags.Has("untied");
  if (auto valid = config.Validate(); !valid) return std::unexpected(valid.error());
  return config;
}

// The golden cases' form of a seeded model (fixtures/golden/FORMAT.md §4): literal
// tokenizer "0".."V-1", step 0, AdamW at learning rate 1e-300, no moments.
Result<Checkpoint> SeededCheckpoint(const DecoderModel& model, uint64_t seed) {
  Checkpoint checkpoint;
  checkpoint.config = model.config();
  std::vector<std::string> pieces;
  for (size_t id = 0; id < model.config().vocabulary_size; ++id) pieces.push_back(std::to_string(id));
  Result<Tokenizer> tokenizer = Tokenizer::Literal(std::move(pieces));
  if (!tokenizer) return std::unexpected(tokenizer.error());
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

Result<void> WriteLlmcp35(const ModelConfig& config, uint64_t seed, const std::string& path) {
  if (config.kv_heads != config.heads || !config.tied_output) {
    return std::unexpected(InvalidArgument("LLMCP35 holds tied models with kv-heads = heads only"));
  }
  // The model goes out of scope once its values are in the tensors.
  Result<Checkpoint> checkpoint = [&]() -> Result<Checkpoint> {
    SplitMix64 rng(seed);
    Result<DecoderModel> model = DecoderModel::FromSeed(config, rng, ModelStorage::kDenseF64);
    if (!model) return std::unexpected(model.error());
    return SeededCheckpoint(*model, seed);
  }();
  if (!checkpoint) return std::unexpected(checkpoint.error());
  return SaveCheckpointAtomic(*checkpoint, path);
}

Result<void> WriteLlama2c(const ModelConfig& config, uint64_t seed, const std::string& path) {
  SplitMix64 rng(seed);
  // Panels: the f32 values only, one copy, however large the shape.
  Result<DecoderModel> model = DecoderModel::FromSeed(config, rng, ModelStorage::kPanelsF32);
  if (!model) return std::unexpected(model.error());
  return SaveLlama2cModel(*model, path);
}

Result<gguf::GgmlType> GgufTypeFromFlag(const Flags& flags) {
  const std::string name = flags.Value("type").value_or("f32");
  if (name == "f32") return gguf::GgmlType::kF32;
  if (name == "f16") return gguf::GgmlType::kF16;
  if (name == "bf16") return gguf::GgmlType::kBF16;
  if (name == "q8_0") return gguf::GgmlType::kQ8_0;
  if (name == "q4_0") return gguf::GgmlType::kQ4_0;
  return std::unexpected(InvalidArgument("--type must be f32, f16, bf16, q8_0 or q4_0, got '" + name + "'"));
}

// The synthetic llama2.c vocabulary as GGUF SentencePiece metadata (unk 0,
// controls 1 and 2, the byte pieces 3..258), so `generate --prompt` works on the
// file. Vocabularies under 259 pieces get none.
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

Result<void> WriteGguf(const ModelConfig& config, uint64_t seed, gguf::GgmlType type, const std::string& path) {
  SplitMix64 rng(seed);
  Result<DecoderModel> model = DecoderModel::FromSeed(config, rng, ModelStorage::kPanelsF32);
  if (!model) return std::unexpected(model.error());
  return gguf::SaveGgufModel(*model, type, path, SyntheticGgufVocabulary(config.vocabulary_size, seed));
}

}  // namespace

int RunSynth(std::span<char* const> args) {
  Result<Flags> flags = Flags::Parse(args, kFlags);
  if (!flags) return ReportError(flags.error());
  if (flags->Has("help")) {
    PrintStdout("%s", Usage("kvrt synth (--shape NAME | --dim D --layers L --heads H --ffn F --vocab V "
                            "--seq-len P) [--kv-heads K] [--untied] [--seed S] [--llama2c PATH] "
                            "[--llmcp35 PATH] [--gguf PATH [--type T]] [--tokenizer PATH]",
                            kFlags)
                          .c_str());
    return 0;
  }
  Result<ModelConfig> config = ConfigFromFlags(*flags);
  if (!config) return ReportError(config.error());
  Result<uint64_t> seed = flags->Unsigned("seed", 0);
  if (!seed) return ReportError(seed.error());
  const std::optional<std::string> llama2c = flags->Value("llama2c"), llmcp35 = flags->Value("llmcp35"),
                                   tokenizer = flags->Value("tokenizer"), gguf_path = flags->Value("gguf");
  if (!llama2c && !llmcp35 && !tokenizer && !gguf_path) {
    return ReportError(InvalidArgument("give at least one of --llama2c, --llmcp35, --gguf and --tokenizer"));
  }
  Result<gguf::GgmlType> gguf_type = GgufTypeFromFlag(*flags);
  if (!gguf_type) return ReportError(gguf_type.error());
  if (gguf_path) {
    if (Result<void> written = WriteGguf(*config, *seed, *gguf_type, *gguf_path); !written) {
      return ReportError(written.error());
    }
    PrintStdout("wrote %s (gguf, %s)\n", gguf_path->c_str(), std::string(gguf::GgmlTypeName(*gguf_type)).c_str());
  }
  if (llama2c) {
    if (Result<void> written = WriteLlama2c(*config, *seed, *llama2c); !written) {
      return ReportError(written.error());
    }
    PrintStdout("wrote %s (llama2c, %llu bytes)\n", llama2c->c_str(),
                static_cast<unsigned long long>(*Llama2cFileBytes(*config)));
  }
  if (llmcp35) {
    if (Result<void> written = WriteLlmcp35(*config, *seed, *llmcp35); !written) {
      return ReportError(written.error());
    }
    PrintStdout("wrote %s (llmcp35)\n", llmcp35->c_str());
  }
  if (tokenizer) {
    Result<Tokenizer> synthetic = SyntheticLlama2cTokenizer(config->vocabulary_size, *seed);
    if (!synthetic) return ReportError(synthetic.error());
    if (Result<void> written = SaveLlama2cTokenizer(*synthetic, *tokenizer); !written) {
      return ReportError(written.error());
    }
    PrintStdout("wrote %s (llama2c tokenizer, %zu pieces)\n", tokenizer->c_str(), synthetic->vocabulary_size());
  }
  return 0;
}

}  // namespace kvrt::cli
