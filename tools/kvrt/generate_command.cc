// kvrt generate: sample a continuation with the cached loop (prefill once, then
// decode) or, with --uncached, the complete-prefix replay loop. Text streams to
// stdout as tokens arrive; load time, prefill and decode speed and the KV-cache
// size go to stderr.
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "commands.h"
#include "common.h"
#include "generation_stats.h"
#include "build_facts.h"
#include "json_writer.h"
#include "kvrt/generation.h"
#include "formats/llama2c/llama2c.h"
#include "text_stream.h"

namespace kvrt::cli {
namespace {

constexpr FlagSpec kCommandFlags[] = {
    {"model", true, "model file (LLMCP35 checkpoint or llama2.c model.bin)"},
    {"tokenizer", true, "llama2.c tokenizer.bin (replaces the checkpoint's tokenizer)"},
    {"tokens", true, "prompt as comma-separated token ids"},
    {"prompt", true,
     "prompt text, encoded with the tokenizer (byte-BPE: no BOS; llama2.c: BOS first, as run.c)"},
    {"greedy", false, "pick the largest logit (the default)"},
    {"temperature", true, "sample with this temperature (needs --top-k); 0 means greedy, as in the C API"},
    {"top-k", true, "keep the k best tokens when sampling"},
    {"rng-state", true, "SplitMix64 state, 1-16 hex digits, optionally after 0x (default: the model file's sampling state)"},
    {"seed", true, "SplitMix64 seed (the state itself)"},
    {"eos", true,
     "stop after generating this token id (default: a byte-BPE model's own EOS; llama2.c tokenizer: BOS 1, as run.c)"},
    {"no-eos", false, "never stop at an end token: generate until the budget or the context runs out"},
    {"max-new-tokens", true, "token budget (default 64)"},
    {"uncached", false, "replay the complete prefix every step"},
    {"json", false, "print one JSON object with tokens, steps, stop, RNG state and work"},
    {"help", false, "show this help"},
};
constexpr auto kFlags = JoinFlags(kCommandFlags, kEngineFlags);

Result<SamplingMode> ModeFromFlags(const Flags& flags) {
  const bool has_temperature = flags.Has("temperature"), has_top_k = flags.Has("top-k");
  if (flags.Has("greedy")) {
    if (has_temperature || has_top_k) {
      return std::unexpected(InvalidArgument("--greedy excludes --temperature and --top-k"));
    }
    return SamplingMode::Greedy();
  }
  if (!has_temperature && !has_top_k) return SamplingMode::Greedy();
  Result<double> temperature = flags.Double("temperature", 1.0);
  if (!temperature) return std::unexpected(temperature.error());
  // Temperature 0 is the limit of sharper and sharper sampling: the largest logit,
  // as kvrt_generation_options reads it. --top-k is then irrelevant.
  if (has_temperature && *temperature == 0.0) return SamplingMode::Greedy();
  if (!has_temperature || !has_top_k) {
    return std::unexpected(InvalidArgument("--temperature and --top-k go together"));
  }
  Result<uint64_t> top_k = flags.Unsigned("top-k", 1);
  if (!top_k) return std::unexpected(top_k.error());
  return SamplingMode::TemperatureTopK(*temperature, *top_k);
}

Result<uint64_t> RngStateFromFlags(const Flags& flags, uint64_t checkpoint_state) {
  if (flags.Has("rng-state") && flags.Has("seed")) {
    return std::unexpected(InvalidArgument("--rng-state and --seed exclude each other"));
  }
  if (flags.Has("rng-state")) return flags.Hex("rng-state", 0);
  if (flags.Has("seed")) return flags.Unsigned("seed", 0);
  return checkpoint_state;
}

std::string Hex16(uint64_t value) {
  char buffer[24];
  std::snprintf(buffer, sizeof buffer, "%016llx", static_cast<unsigned long long>(value));
  return buffer;
}

// The text of the generated tokens, as the reference pipeline decodes it: a final
// EOS is dropped, the rest is decoded strictly; nullopt when that fails.
std::optional<std::string> GeneratedText(const Tokenizer& tokenizer, const GenerationResult& run) {
  std::vector<uint32_t> ids = run.generated;
  if (run.stop == GenerationStop::kEos && !ids.empty()) ids.pop_back();
  Result<std::string> text = tokenizer.DecodeContentUtf8(ids);
  if (!text) return std::nullopt;
  return *text;
}

void PrintJson(const GenerationResult& run, const std::optional<std::string>& text, uint64_t rng_state,
               bool cached, const EngineOptions& engine) {
  JsonWriter json;
  json.BeginObject();
  WriteBuildFacts(json, CurrentBuildFacts(EngineThreads(engine)));
  json.Key("prompt").UnsignedArray(std::span<const uint32_t>(run.prompt));
  json.Key("generated").UnsignedArray(std::span<const uint32_t>(run.generated));
  json.Key("text");
  if (text) {
    json.String(*text);
  } else {
    json.Null();
  }
  json.Key("stop").String(GenerationStopName(run.stop));
  json.Key("steps").BeginArray();
  for (const GenerationStep& step : run.steps) {
    json.BeginObject();
    json.Key("prefix_length").Unsigned(step.prefix_length);
    json.Key("token_id").Unsigned(step.token_id);
    json.Key("unit_draw");
    if (step.unit_draw) {
      json.Number(*step.unit_draw);
    } else {
      json.Null();
    }
    json.Key("interval_start").Number(step.interval_start);
    json.Key("interval_end").Number(step.interval_end);
    json.EndObject();
  }
  json.EndArray();
  json.Key("final_rng_state").String(Hex16(rng_state));
  json.Key("final_cache_len");
  if (cached) {
    json.Unsigned(run.final_cache_len);
  } else {
    json.Null();
  }
  json.Key("work").BeginObject();
  if (cached) {
    json.Key("prefill_tokens").Unsigned(run.work.prefill_tokens);
    json.Key("decode_tokens").Unsigned(run.work.decode_tokens);
    json.Key("layer_cache_count").Unsigned(run.work.layer_cache_count);
    json.Key("cache_appends").Unsigned(run.work.cache_appends);
    json.Key("qkv_projection_rows").Unsigned(run.work.qkv_projection_rows);
    json.Key("cached_attention_score_values").Unsigned(run.work.cached_attention_score_values);
  } else {
    json.Key("full_prefix_calls").Unsigned(run.model_calls);
  }
  json.Key("complete_prefix_attention_score_values")
      .Unsigned(run.work.complete_prefix_attention_score_values);
  json.EndObject();
  json.EndObject();
  std::printf("%s\n", json.text().c_str());
}

}  // namespace

int RunGenerate(std::span<char* const> args) {
  Result<Flags> flags = Flags::Parse(args, kFlags);
  if (!flags) return ReportError(flags.error());
  if (flags->Has("help")) {
    std::printf("%s", Usage("kvrt generate --model PATH (--tokens IDS | --prompt TEXT) [options]", kFlags)
                          .c_str());
    return 0;
  }
  Result<std::string> path = flags->Required("model");
  if (!path) return ReportError(path.error());
  if (flags->Has("tokens") == flags->Has("prompt")) {
    return ReportError(InvalidArgument("give exactly one of --tokens and --prompt"));
  }
  Result<SamplingMode> mode = ModeFromFlags(*flags);
  if (!mode) return ReportError(mode.error());
  Result<uint64_t> max_new_tokens = flags->Unsigned("max-new-tokens", 64);
  if (!max_new_tokens) return ReportError(max_new_tokens.error());
  Result<EngineChoice> engine_choice = EngineFromFlags(*flags);
  if (!engine_choice) return ReportError(engine_choice.error());
  const EngineOptions* engine = &engine_choice->options;
  GenerationConfig config;
  config.mode = *mode;
  config.max_new_tokens = *max_new_tokens;
  if (flags->Has("eos") && flags->Has("no-eos")) {
    return ReportError(InvalidArgument("--eos and --no-eos exclude each other"));
  }
  if (flags->Has("eos")) {
    Result<uint64_t> eos = flags->Unsigned("eos", 0);
    if (!eos) return ReportError(eos.error());
    if (*eos > UINT32_MAX) return ReportError(InvalidArgument("--eos must fit a u32 token id"));
    config.eos_token = static_cast<uint32_t>(*eos);
  }

  LoadTimer load_timer;
  Result<LoadedModel> loaded = LoadModel(*path);
  if (!loaded) return ReportError(loaded.error());
  if (std::optional<std::string> tokenizer_path = flags->Value("tokenizer")) {
    Result<Tokenizer> llama2c =
        LoadLlama2cTokenizerFor(*tokenizer_path, loaded->model.config().vocabulary_size);
    if (!llama2c) return ReportError(llama2c.error());
    loaded->tokenizer = std::move(*llama2c);
    // run.c ends a sequence at BOS, the delimiter between documents.
    if (!config.eos_token && !flags->Has("no-eos")) config.eos_token = loaded->tokenizer->bos_id();
  }
  // A byte-BPE model, like a GGUF's, was trained to end its text with its EOS
  // token: without an explicit choice, stop there rather than run past the text.
  const bool own_eos = loaded->tokenizer && (loaded->format == ModelFormat::kGguf ||
                                             loaded->tokenizer->kind() == TokenizerKind::kByteBpe);
  if (!config.eos_token && !flags->Has("no-eos") && own_eos) config.eos_token = loaded->tokenizer->eos_id();
  const double load_seconds = load_timer.Seconds();
  const Tokenizer no_tokenizer;  // vocabulary 0: --prompt is refused below
  const Tokenizer& tokenizer = loaded->tokenizer ? *loaded->tokenizer : no_tokenizer;
  Result<uint64_t> state = RngStateFromFlags(*flags, loaded->sampling_rng_state.value_or(0));
  if (!state) return ReportError(state.error());
  std::vector<uint32_t> prompt;
  if (flags->Has("prompt")) {
    if (tokenizer.vocabulary_size() == 0) {
      return ReportError(InvalidArgument("this model file has no tokenizer: give --tokenizer to encode --prompt"));
    }
    Result<std::vector<uint32_t>> encoded = tokenizer.EncodePrompt(*flags->Value("prompt"));
    if (!encoded) return ReportError(encoded.error());
    prompt = std::move(*encoded);
  } else {
    Result<std::vector<uint32_t>> ids = flags->TokenList("tokens");
    if (!ids) return ReportError(ids.error());
    prompt = std::move(*ids);
  }

  const bool json = flags->Has("json");
  Utf8Stream stream(stdout);
  // The token each printed token follows (llama2.c drops a leading space after BOS).
  std::optional<uint32_t> previous;
  if (!prompt.empty()) previous = prompt.back();
  GenerationClock clock;
  const TokenCallback on_token = [&](uint32_t token) {
    clock.TokenSampled();
    if (json) return;
    const std::optional<uint32_t> before = std::exchange(previous, token);
    if (config.eos_token && token == *config.eos_token) return;
    if (Result<std::string_view> bytes = tokenizer.TokenBytesAfter(before, token)) {
      stream.Write(*bytes);
      std::fflush(stdout);
    }
  };
  if (!json && flags->Has("prompt")) stream.Write(*flags->Value("prompt"));
  SplitMix64 rng(*state);
  const bool cached = !flags->Has("uncached");
  clock.Start();
  Result<GenerationResult> run =
      cached ? GenerateCached(loaded->model, prompt, config, rng, *engine, on_token)
             : GenerateUncached(loaded->model, prompt, config, rng, *engine, on_token);
  if (!json) {
    stream.Finish();
    std::printf("\n");
  }
  if (!run) return ReportError(run.error());
  if (json) PrintJson(*run, GeneratedText(tokenizer, *run), rng.state(), cached, *engine);
  std::fflush(stdout);
  PrintGenerationStats(stderr, loaded->model, *engine, load_seconds, *run, clock, cached);
  return 0;
}

}  // namespace kvrt::cli
