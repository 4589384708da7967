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
#include "chat_turns.h"
#include "output.h"
#include "kvrt/generation.h"
#include "kvrt/model.h"
#include "kvrt/model_file.h"

namespace kvrt::cli {
namespace {

constexpr FlagSpec kModelFlags[] = {
    {"model", true, "model file (LLMCP35 checkpoint, GGUF or llama2.c model.bin)", 'm'},
    {"tokenizer", true, "llama2.c tokenizer.bin (replaces the checkpoint's tokenizer)"},
};
constexpr FlagSpec kChatFlags[] = {
    {"chat", false,
     "one chat turn: --prompt is the user's message, rendered with the model's chat template (generation prompt "
     "added, control tokens parsed); prints the reply only"},
    {"system", true, "with --chat: a system message before the user's"},
};
constexpr FlagSpec kOutputFlags[] = {
    {"uncached", false, "replay the complete prefix every step"},
    {"json", false, "print one JSON object with tokens, steps, stop, RNG state and work"},
    {"help", false, "show this help"},
};
constexpr auto kFlags = [] {
  std::array<FlagSpec, std::size(kModelFlags) + std::size(kRequestFlags) + std::size(kContextFlags) +
                           std::size(kChatFlags) + std::size(kOutputFlags) + std::size(kEngineFlags)>
      all{};
  size_t i = 0;
  for (const FlagSpec& flag : kModelFlags) all[i++] = flag;
  for (const FlagSpec& flag : kRequestFlags) all[i++] = flag;
  for (const FlagSpec& flag : kContextFlags) all[i++] = flag;
  for (const FlagSpec& flag : kChatFlags) all[i++] = flag;
  for (const FlagSpec& flag : kOutputFlags) all[i++] = flag;
  for (const FlagSpec& flag : kEngineFlags) all[i++] = flag;
  return all;
}();

}  // namespace

int RunGenerate(std::span<char* const> args) {
  Result<Flags> flags = Flags::Parse(args, kFlags);
  if (!flags) return ReportError(flags.error());
  if (flags->Has("help")) {
    PrintStdout("%s", Usage("kvrt generate --model PATH (--tokens IDS | --prompt TEXT | --file F) [options]", kFlags)
                          .c_str());
    return 0;
  }
  Result<std::string> path = flags->Required("model");
  if (!path) return ReportError(path.error());
  RequestFields fields = RequestFieldsFromFlags(*flags);
  Result<GenerationConfig> request = RequestConfigFromFields(fields);
  if (!request) return ReportError(request.error());
  const bool chat = flags->Has("chat");
  if (chat && !fields.prompt) return ReportError(InvalidArgument("--chat takes the user's message as --prompt"));
  if (!chat && flags->Has("system")) return ReportError(InvalidArgument("--system goes with --chat"));
  GenerationConfig config = *request;
  Result<uint64_t> context_size = flags->Unsigned("ctx-size", 0);
  if (!context_size) return ReportError(context_size.error());
  config.context_size = *context_size;
  Result<EngineChoice> engine_choice = EngineFromFlags(*flags);
  if (!engine_choice) return ReportError(engine_choice.error());
  const EngineOptions* engine = &engine_choice->options;
  if (engine->kv_type != KvType::kEngine && flags->Has("uncached")) {
    return ReportError(InvalidArgument("--kv-type " + std::string(KvTypeName(engine->kv_type)) +
                                       " sets the KV cache's type; --uncached uses no cache"));
  }

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
  if (chat) {
    // The turn as the model was trained to see it: its own template, whose
    // control tokens (<|im_start|>, <|eot_id|>) are tokens, not text.
    Result<std::string> rendered = RenderChatTurn(tokenizer, flags->Value("system"), *fields.prompt);
    if (!rendered) return ReportError(rendered.error());
    fields.prompt = std::move(*rendered);
    fields.special = true;
  }
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
      (void)WriteStdout(token.text);
      (void)FlushStdout();  // a failure is remembered and reported after the run
    }
    return StreamAction::kContinue;
  };
  // A chat turn prints the reply only, not the rendered template.
  if (!json && input->prompt_text && !chat) {
    (void)WriteStdout(*input->prompt_text);
    (void)FlushStdout();  // a failure is remembered and reported after the run
  }
  SplitMix64 rng(input->rng_state);
  const bool cached = !flags->Has("uncached");
  clock.Start();
  Result<GenerationResult> run =
      cached ? GenerateCached(loaded->model, prompt, config, rng, *engine, on_token)
             : GenerateUncached(loaded->model, prompt, config, rng, *engine, on_token);
  if (!json) PrintStdout("\n");
  if (!run) return ReportError(run.error());
  if (json) PrintStdout("%s\n", GenerationJson(*run, rng.state(), cached, EngineThreads(*engine)).c_str());
  // Output that did not arrive is the error, not the statistics of its run.
  if (Result<void> flushed = FlushStdout(); !flushed) return ReportError(flushed.error());
  const size_t positions = config.context_size != 0 ? config.context_size : loaded->model.config().max_positions;
  PrintGenerationStats(stderr, loaded->model, *engine, load_seconds, *run, clock, cached, positions);
  return 0;
}

}  // namespace kvrt::cli
