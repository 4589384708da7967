// The C API's generation loop (kvrt/kvrt.h): GenerateCached behind a C callback.
#include <string>

#include "c_api/c_api_internal.h"
#include "kvrt/generation.h"
#include "generate/generate.h"

using kvrt::c_api::Guard;
using kvrt::c_api::InvalidArgument;
using kvrt::c_api::MakeError;

struct kvrt_generation {
  kvrt::GenerationResult result;
};

extern "C" {

kvrt_generation_options kvrt_generation_options_default(void) {
  kvrt_generation_options options{};
  options.max_new_tokens = 64;
  return options;
}

kvrt_error* kvrt_generate(const kvrt_model* model, const uint32_t* prompt, size_t count,
                          const kvrt_generation_options* options, const kvrt_engine_options* engine,
                          kvrt_token_callback on_token, void* user_data, kvrt_generation** out) {
  return Guard([&]() -> kvrt_error* {
    if (model == nullptr || (prompt == nullptr && count > 0) || out == nullptr) {
      return InvalidArgument("kvrt_generate needs a model, a prompt and an output");
    }
    const kvrt_generation_options chosen = options ? *options : kvrt_generation_options_default();
    kvrt::GenerationConfig config;
    // Temperature 0 means greedy here; a negative or NaN one is passed on, so the
    // sampler reports it (Sampling(InvalidTemperature)).
    config.mode = chosen.temperature == 0.0 ? kvrt::SamplingMode::Greedy()
                                            : kvrt::SamplingMode::TemperatureTopK(chosen.temperature, chosen.top_k);
    config.max_new_tokens = chosen.max_new_tokens;
    if (chosen.has_eos) config.eos_token = chosen.eos_token;
    if (chosen.stop_at_end_of_generation && model->tokenizer) {
      const std::span<const uint32_t> end = model->tokenizer->end_of_generation_ids();
      config.end_of_generation.assign(end.begin(), end.end());
    }
    std::unique_ptr<kvrt::threading::ThreadPool> pool;
    kvrt::Result<kvrt::EngineOptions> engine_options = kvrt::c_api::EngineFromC(engine, pool);
    if (!engine_options) return MakeError(engine_options.error());
    kvrt::TokenCallback callback;
    if (on_token != nullptr) callback = [&](uint32_t token) { on_token(token, user_data); };
    kvrt::SplitMix64 rng(chosen.seed);
    kvrt::Result<kvrt::GenerationResult> run = kvrt::GenerateCached(
        model->model, std::span<const uint32_t>(prompt, count), config, rng, *engine_options, callback);
    if (!run) return MakeError(run.error());
    *out = new kvrt_generation{std::move(*run)};
    return nullptr;
  });
}

size_t kvrt_generation_count(const kvrt_generation* generation) {
  return generation ? generation->result.generated.size() : 0;
}

const uint32_t* kvrt_generation_tokens(const kvrt_generation* generation) {
  return generation ? generation->result.generated.data() : nullptr;
}

const char* kvrt_generation_stop(const kvrt_generation* generation) {
  // GenerationStopName returns views of string literals.
  return generation ? kvrt::GenerationStopName(generation->result.stop).data() : "";
}

void kvrt_generation_free(kvrt_generation* generation) { delete generation; }

}  // extern "C"
