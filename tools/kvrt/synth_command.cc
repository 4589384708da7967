// kvrt synth: random-weight models of a named or explicit shape, from a seed, in
// GGUF, llama2.c format (f32) and LLMCP35 (f64), and a matching synthetic
// tokenizer.bin (kvrt/synthetic.h). Every file holds the same seeded draws,
// rounded as its format stores them.
#include <cctype>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "commands.h"
#include "common.h"
#include "kvrt/synthetic.h"
#include "kvrt/weight_format.h"
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

// The GGUF tensor type of --type, and its name as ggml spells it.
Result<WeightFormat> GgufTypeFromFlag(const Flags& flags) {
  const std::string name = flags.Value("type").value_or("f32");
  const std::optional<WeightFormat> format = ParseWeightFormat(name);
  if (!format || *format == WeightFormat::kAsStored) {
    return std::unexpected(InvalidArgument("--type must be f32, f16, bf16, q8_0 or q4_0, got '" + name + "'"));
  }
  return *format;
}

std::string GgmlName(WeightFormat format) {
  std::string name(WeightFormatName(format));
  for (char& c : name) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return name;
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
  Result<WeightFormat> gguf_type = GgufTypeFromFlag(*flags);
  if (!gguf_type) return ReportError(gguf_type.error());
  if (gguf_path) {
    if (Result<void> written = WriteSyntheticGguf(*config, *seed, *gguf_type, *gguf_path); !written) {
      return ReportError(written.error());
    }
    PrintStdout("wrote %s (gguf, %s)\n", gguf_path->c_str(), GgmlName(*gguf_type).c_str());
  }
  if (llama2c) {
    Result<uint64_t> bytes = WriteSyntheticLlama2c(*config, *seed, *llama2c);
    if (!bytes) return ReportError(bytes.error());
    PrintStdout("wrote %s (llama2c, %llu bytes)\n", llama2c->c_str(), static_cast<unsigned long long>(*bytes));
  }
  if (llmcp35) {
    if (Result<void> written = WriteSyntheticCheckpoint(*config, *seed, *llmcp35); !written) {
      return ReportError(written.error());
    }
    PrintStdout("wrote %s (llmcp35)\n", llmcp35->c_str());
  }
  if (tokenizer) {
    Result<size_t> pieces = WriteSyntheticLlama2cTokenizer(config->vocabulary_size, *seed, *tokenizer);
    if (!pieces) return ReportError(pieces.error());
    PrintStdout("wrote %s (llama2c tokenizer, %zu pieces)\n", tokenizer->c_str(), *pieces);
  }
  return 0;
}

}  // namespace kvrt::cli
