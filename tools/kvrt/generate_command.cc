// kvrt generate: sample a continuation with the cached loop (prefill once, then
// decode) or, with --uncached, the complete-prefix replay loop. Text streams to
// stdout as tokens arrive; load time, prefill and decode speed and the KV-cache
// size go to stderr.
#include <array>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "commands.h"
#include "common.h"
#include "generate_request.h"
#include "generation_stats.h"
#include "build_facts.h"
#include "kvrt/generation.h"
#include "kvrt/model.h"
#include "kvrt/model_file.h"

namespace kvrt::cli {
namespace {

constexpr FlagSpec kModelFlags[] = {
    {"model", true, "model file (LLMCP35 checkpoint, GGUF or llama2.c model.bin)", 'm'},
    {"tokenizer", true, "llama2.c tokenizer.bin (replaces the checkpoint's tokenizer)"},
};
constexpr FlagSpec kOutputFlags[] = {
    {"uncached", false, "replay the complete prefix every step"},
    {"json", false, "print one JSON object with tokens, steps, stop, RNG state and work"},
    {"help", false, "show this help"},
};
constexpr auto kFlags = [] {
  std::array<FlagSpec, std::size(kModelFlags) + std::size(kRequestFlags) + std::size(kContextFlags) +
                           std::size(kOutputFlags) + std::size(kEngineFlags)>
      all{};
  size_t i = 0;
  for (const FlagSpec& flag : kModelFlags) all[i++] = flag;
  for (const FlagSpec& flag : kRequestFlags) all[i++] = flag;
  for (const FlagSpec& flag : kContextFlags) all[i++] = flag;
  for (const FlagSpec& flag : kOutputFlags) all[i++] = flag;
  for (const FlagSpec& flag : kEngineFlags) all[i++] = flag;
  return all;
}();

}  // namespace

int RunGenerate(std::span<char* const> args) {
  Result<Flags> flags = Flags::Parse(args, kFlags);
  if (!flags) return ReportError(flags.error());
  if (flags->Has("help")) {
    std::printf("%s", Usage("kvrt generate --model PATH (--tokens IDS | --prompt TEXT | --file F) [options]", kFlags)
                          .c_str());
    return 0;
  }
  Result<std::string> path = flags->Required("model");
  if (!path) return ReportError(path.error());
  const RequestFields fields = RequestFieldsFromFlags(*flags);
  Result<GenerationConfig> request = RequestConfigFromFields(fields);
  if (!request) return ReportError(request.error());
  GenerationConfig config = *request;
  Result<uint64_t> context_size = flags->Unsigned("ctx-size", 0);
  if (!context_size) return ReportError(context_size.error());
  config.context_size = *context_size;
  Result<EngineChoice> engine_choice = EngineFromFlags(*flags);
  if (!engine_choice) return ReportError(engine_choice.error());
  const EngineOptions* engine = &engine_choice->options;

  LoadTimer load_timer;
  Result<LoadedModel> loaded = LoadModel(*path);
  if (!loaded) return ReportError(loaded.error());
  if (std::optional<std::string> tokenizer_path = flags->Value("tokenizer")) {
    Result<Tokenizer> llama2c =
        LoadLlama2cTokenizer(*tokenizer_path, loaded->model.config().vocabulary_size);
    if (!llama2c) return ReportError(llama2c.error());
    loaded->tokenizer = std::move(*llama2c);
  }
  const Tokenizer no_tokenizer;  // vocabulary 0: --prompt is refused
  const Tokenizer& tokenizer = loaded->tokenizer ? *loaded->tokenizer : no_tokenizer;
  // The request is checked before the weights are converted, so that a bad prompt
  // fails at once rather than after a conversion of a second or more.
  Result<RequestInput> input =
      RequestInputFromFields(fields, *loaded, tokenizer, flags->Has("tokenizer"), config);
  if (!input) return ReportError(input.error());
  // Converting the weights (--weights) is part of the load, not of the prompt's prefill.
  if (Result<void> prepared = loaded->model.PrepareWeights(*engine); !prepared) {
    return ReportError(prepared.error());
  }
  const double load_seconds = load_timer.Seconds();
  const std::vector<uint32_t>& prompt = input->prompt;

  const bool json = flags->Has("json");
  GenerationClock clock;
  // The library hands over whole characters, without stop strings and with the
  // leading-space rule applied.
  const TokenCallback on_token = [&](const StreamedToken& token) {
    clock.TokenSampled();
    if (!json && !token.text.empty()) {
      std::fwrite(token.text.data(), 1, token.text.size(), stdout);
      std::fflush(stdout);
    }
    return StreamAction::kContinue;
  };
  if (!json && input->prompt_text) std::fwrite(input->prompt_text->data(), 1, input->prompt_text->size(), stdout);
  SplitMix64 rng(input->rng_state);
  const bool cached = !flags->Has("uncached");
  clock.Start();
  Result<GenerationResult> run =
      cached ? GenerateCached(loaded->model, prompt, config, rng, *engine, on_token)
             : GenerateUncached(loaded->model, prompt, config, rng, *engine, on_token);
  if (!json) std::printf("\n");
  if (!run) return ReportError(run.error());
  if (json) {
    std::printf("%s\n", GenerationJson(*run, rng.state(), cached, EngineThreads(*engine)).c_str());
  }
  std::fflush(stdout);
  const size_t positions = config.context_size != 0 ? config.context_size : loaded->model.config().max_positions;
  PrintGenerationStats(stderr, loaded->model, *engine, load_seconds, *run, clock, cached, positions);
  return 0;
}

}  // namespace kvrt::cli
