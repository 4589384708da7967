// kvrt logits: the last position's logits of a token sequence, through a bound
// session (prefill) or, with --uncached, through the complete-prefix pass.
#include <array>
#include <cstdio>
#include <string>
#include <vector>

#include "commands.h"
#include "common.h"
#include "build_facts.h"
#include "json_writer.h"
#include "kvrt/model.h"
#include "kvrt/session.h"
#include "output.h"

namespace kvrt::cli {
namespace {

constexpr FlagSpec kCommandFlags[] = {
    {"model", true, "model file (LLMCP35 checkpoint or llama2.c model.bin)"},
    {"tokens", true, "comma-separated token ids, e.g. 0,1,2"},
    {"uncached", false, "complete-prefix forward instead of a cached prefill"},
    {"json", false, "print {\"tokens\":[...],\"logits\":[...]} with 17 significant digits"},
    {"help", false, "show this help"},
};
constexpr auto kFlags = [] {
  std::array<FlagSpec, std::size(kCommandFlags) + std::size(kContextFlags) + std::size(kEngineFlags)> all{};
  size_t i = 0;
  for (const FlagSpec& flag : kCommandFlags) all[i++] = flag;
  for (const FlagSpec& flag : kContextFlags) all[i++] = flag;
  for (const FlagSpec& flag : kEngineFlags) all[i++] = flag;
  return all;
}();

// The last row's logits of a prefill into a fresh single-sequence session whose
// cache holds `capacity` positions (0: the model's context).
Result<std::vector<double>> CachedLogits(const Model& model, std::span<const uint32_t> tokens,
                                         const EngineOptions& engine, size_t capacity) {
  SessionOptions options;
  options.engine = engine;
  options.capacity = capacity;
  Result<Session> session = Session::Open(model, options);
  if (!session) return std::unexpected(session.error());
  Result<StepOutput> output = session->Prefill(tokens);
  if (!output) return std::unexpected(output.error());
  return std::vector<double>(output->logits.begin(), output->logits.end());
}

}  // namespace

int RunLogits(std::span<char* const> args) {
  Result<Flags> flags = Flags::Parse(args, kFlags);
  if (!flags) return ReportError(flags.error());
  if (flags->Has("help")) {
    PrintStdout("%s", Usage("kvrt logits --model PATH --tokens IDS [--uncached] [--ctx-size N] [--backend B] [--json]",
                            kFlags)
                          .c_str());
    return 0;
  }
  Result<std::string> path = flags->Required("model");
  if (!path) return ReportError(path.error());
  Result<std::vector<uint32_t>> tokens = flags->TokenList("tokens");
  if (!tokens) return ReportError(tokens.error());
  Result<uint64_t> context_size = flags->Unsigned("ctx-size", 0);
  if (!context_size) return ReportError(context_size.error());
  if (flags->Has("ctx-size") && flags->Has("uncached")) {
    return ReportError(InvalidArgument("--ctx-size sizes the KV cache, which --uncached does not use"));
  }
  Result<EngineChoice> engine_choice = EngineFromFlags(*flags);
  if (!engine_choice) return ReportError(engine_choice.error());
  const EngineOptions* engine = &engine_choice->options;
  if (engine->kv_type != KvType::kEngine && flags->Has("uncached")) {
    return ReportError(InvalidArgument("--kv-type " + std::string(KvTypeName(engine->kv_type)) +
                                       " sets the KV cache's type; --uncached uses no cache"));
  }
  Result<LoadedModel> loaded = LoadModel(*path);
  if (!loaded) return ReportError(loaded.error());
  if (Result<void> fits = CheckContextSize(loaded->model, *context_size); !fits) return ReportError(fits.error());
  if (flags->Has("weights")) {
    // Never silent about a conversion: which formats the matrices ended up in.
    std::fprintf(stderr, "kvrt: engine %s %s; %s\n", std::string(BackendName(engine->backend)).c_str(),
                 std::string(PrecisionName(engine->precision)).c_str(),
                 DescribeEngineWeights(loaded->model, *engine).c_str());
  }

  // --uncached: one forward over the whole prefix, with no cache (the reference's
  // complete-prefix pass, on the format's dequantized weights for a --weights).
  Result<std::vector<double>> logits = flags->Has("uncached")
                                           ? loaded->model.UncachedLogits(*tokens, *engine)
                                           : CachedLogits(loaded->model, *tokens, *engine, *context_size);
  if (!logits) return ReportError(logits.error());

  if (flags->Has("json")) {
    JsonWriter json;
    json.BeginObject();
    WriteBuildFacts(json, CurrentBuildFacts(EngineThreads(*engine)));
    json.Key("tokens").UnsignedArray(std::span<const uint32_t>(*tokens));
    json.Key("logits").NumberArray(*logits);
    json.EndObject();
    PrintStdout("%s\n", json.text().c_str());
  } else {
    for (size_t id = 0; id < logits->size(); ++id) {
      PrintStdout("%zu\t%s\n", id, Float17((*logits)[id]).c_str());
    }
  }
  return 0;
}

}  // namespace kvrt::cli
