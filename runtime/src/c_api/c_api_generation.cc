// The C API's generation loop (kvrt/kvrt.h): GenerateCached behind a C callback.
#include <cmath>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include "c_api/c_api_internal.h"
#include "kvrt/generation.h"
#include "generate/generate.h"

using kvrt::c_api::Guard;
using kvrt::c_api::InvalidArgument;
using kvrt::c_api::MakeError;

struct kvrt_generation {
  kvrt::GenerationResult result;
  std::vector<kvrt_token_logprob> top_logprobs;  // result.top_logprobs in C's layout
};

namespace {

// The C options as a GenerationConfig; InvalidArgument for a list without entries.
kvrt::Result<kvrt::GenerationConfig> ConfigFromC(const kvrt_model& model,
                                                 const kvrt_generation_options& options) {
  kvrt_sampler_params sampler{};
  sampler.temperature = options.temperature;
  sampler.top_k = options.top_k;
  sampler.top_p = options.top_p;
  sampler.min_p = options.min_p;
  sampler.typical_p = options.typical_p;
  sampler.repeat_penalty = options.repeat_penalty;
  sampler.frequency_penalty = options.frequency_penalty;
  sampler.presence_penalty = options.presence_penalty;
  sampler.repeat_last_n = options.repeat_last_n;
  sampler.logit_bias = options.logit_bias;
  sampler.logit_bias_count = options.logit_bias_count;
  kvrt::Result<kvrt::c_api::SamplerSettings> settings = kvrt::c_api::SamplerFromC(sampler);
  if (!settings) return kvrt::Fail(std::move(settings.error()));
  if ((options.end_tokens == nullptr && options.end_token_count > 0) ||
      (options.stop == nullptr && options.stop_count > 0)) {
    return kvrt::Fail(kvrt::ErrorCode::kInvalidArgument, {},
                      "kvrt_generation_options: a count is set but its list is NULL");
  }
  kvrt::GenerationConfig config;
  config.mode = settings->mode;
  config.sampler = std::move(settings->options);
  config.max_new_tokens = options.max_new_tokens;
  if (options.has_eos) config.eos_token = options.eos_token;
  config.end_of_generation.assign(options.end_tokens, options.end_tokens + options.end_token_count);
  if (options.stop_at_end_of_generation && model.tokenizer) {
    const std::span<const uint32_t> end = model.tokenizer->end_of_generation_ids();
    config.end_of_generation.insert(config.end_of_generation.end(), end.begin(), end.end());
  }
  for (size_t i = 0; i < options.stop_count; ++i) {
    if (options.stop[i] == nullptr) {
      return kvrt::Fail(kvrt::ErrorCode::kInvalidArgument, {},
                        "kvrt_generation_options: stop string " + std::to_string(i) + " is NULL");
    }
    config.stop.emplace_back(options.stop[i]);
  }
  if (options.logprobs) config.top_logprobs = options.top_logprobs;
  config.context_size = options.ctx_size;
  config.tokenizer = model.tokenizer;
  return config;
}

}  // namespace

extern "C" {

kvrt_generation_options kvrt_generation_options_default(void) {
  kvrt_generation_options options{};
  options.max_new_tokens = 64;
  options.top_p = 1.0;
  options.typical_p = 1.0;
  options.repeat_penalty = 1.0;
  options.repeat_last_n = 64;
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
    kvrt::Result<kvrt::GenerationConfig> config = ConfigFromC(*model, chosen);
    if (!config) return MakeError(config.error());
    std::unique_ptr<kvrt::threading::ThreadPool> pool;
    kvrt::Result<kvrt::EngineOptions> engine_options = kvrt::c_api::EngineFromC(engine, pool);
    if (!engine_options) return MakeError(engine_options.error());
    kvrt::TokenCallback callback;
    if (on_token != nullptr) {
      callback = [&](const kvrt::StreamedToken& token) {
        return on_token(token.token_id, token.text.data(), token.text.size(), user_data) == 0
                   ? kvrt::StreamAction::kContinue
                   : kvrt::StreamAction::kCancel;
      };
    }
    kvrt::SplitMix64 rng(chosen.seed);
    kvrt::Result<kvrt::GenerationResult> run = kvrt::GenerateCached(
        model->model, std::span<const uint32_t>(prompt, count), *config, rng, *engine_options, callback);
    if (!run) return MakeError(run.error());
    auto generation = std::make_unique<kvrt_generation>();
    generation->result = std::move(*run);
    for (const kvrt::TokenLogprob& entry : generation->result.top_logprobs) {
      generation->top_logprobs.push_back({entry.token_id, entry.logprob});
    }
    *out = generation.release();
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

const char* kvrt_generation_text(const kvrt_generation* generation, size_t* length) {
  if (generation == nullptr || !generation->result.text) {
    if (length != nullptr) *length = 0;
    return nullptr;
  }
  if (length != nullptr) *length = generation->result.text->size();
  return generation->result.text->c_str();
}

double kvrt_generation_logprob(const kvrt_generation* generation, size_t step) {
  if (generation == nullptr || step >= generation->result.steps.size() ||
      !generation->result.steps[step].logprob) {
    return std::numeric_limits<double>::quiet_NaN();
  }
  return *generation->result.steps[step].logprob;
}

const kvrt_token_logprob* kvrt_generation_top_logprobs(const kvrt_generation* generation, size_t step,
                                                       size_t* count) {
  const size_t per_step = generation ? generation->result.top_logprobs_per_step : 0;
  if (generation == nullptr || step >= generation->result.steps.size() || per_step == 0) {
    if (count != nullptr) *count = 0;
    return nullptr;
  }
  if (count != nullptr) *count = per_step;
  return generation->top_logprobs.data() + step * per_step;
}

void kvrt_generation_free(kvrt_generation* generation) { delete generation; }

}  // extern "C"
