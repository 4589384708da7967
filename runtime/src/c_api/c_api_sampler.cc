// The C API's sampler object (kvrt/kvrt.h): TokenSampler behind a handle.
#include <atomic>
#include <string>
#include <vector>

#include "c_api/c_api_internal.h"

using kvrt::c_api::ConcurrentUse;
using kvrt::c_api::Guard;
using kvrt::c_api::HandleEntry;
using kvrt::c_api::InvalidArgument;
using kvrt::c_api::MakeError;

struct kvrt_sampler {
  kvrt::TokenSampler sampler;
  std::vector<double> widened;  // kvrt_sampler_sample_f32's logits as double
  // Set while a call is inside (HandleEntry): a second thread gets ConcurrentUse.
  std::atomic<bool> busy{false};
};

namespace kvrt::c_api {
namespace {

// An initializer that leaves a field out gives 0, which must mean "off".
double OffWhenZero(double value, double identity) { return value == 0.0 ? identity : value; }

}  // namespace

Result<SamplerSettings> SamplerFromC(const kvrt_sampler_params& params) {
  SamplerSettings settings;
  // Temperature 0 is greedy; a negative or NaN one is passed on, so that the
  // sampler reports it (InvalidTemperature).
  if (params.temperature == 0.0) {
    settings.mode = SamplingMode::Greedy();
  } else if (params.top_k != 0) {
    settings.mode = SamplingMode::TemperatureTopK(params.temperature, params.top_k);
  } else {
    settings.mode = SamplingMode::Temperature(params.temperature);
  }
  if (params.logit_bias == nullptr && params.logit_bias_count > 0) {
    return Fail(ErrorCode::kInvalidArgument, {}, "logit_bias_count is " +
                    std::to_string(params.logit_bias_count) + " but logit_bias is NULL");
  }
  for (size_t i = 0; i < params.logit_bias_count; ++i) {
    settings.options.logit_bias.push_back({params.logit_bias[i].token, params.logit_bias[i].bias});
  }
  settings.options.top_p = OffWhenZero(params.top_p, 1.0);
  settings.options.min_p = params.min_p;
  settings.options.typical_p = OffWhenZero(params.typical_p, 1.0);
  settings.options.repetition_penalty = OffWhenZero(params.repeat_penalty, 1.0);
  settings.options.frequency_penalty = params.frequency_penalty;
  settings.options.presence_penalty = params.presence_penalty;
  settings.options.penalty_last_n = params.repeat_last_n;
  return settings;
}

}  // namespace kvrt::c_api

extern "C" {

kvrt_sampler_params kvrt_sampler_params_default(void) {
  kvrt_sampler_params params{};
  params.top_p = 1.0;
  params.typical_p = 1.0;
  params.repeat_penalty = 1.0;
  params.repeat_last_n = 64;
  return params;
}

kvrt_error* kvrt_sampler_create(const kvrt_sampler_params* params, size_t vocabulary_size,
                                kvrt_sampler** out) {
  return Guard([&]() -> kvrt_error* {
    if (params == nullptr || out == nullptr) {
      return InvalidArgument("kvrt_sampler_create needs parameters and an output");
    }
    kvrt::Result<kvrt::c_api::SamplerSettings> settings = kvrt::c_api::SamplerFromC(*params);
    if (!settings) return MakeError(settings.error());
    kvrt::Result<kvrt::TokenSampler> sampler =
        kvrt::TokenSampler::Create(settings->mode, settings->options, vocabulary_size, params->seed);
    if (!sampler) return MakeError(sampler.error());
    *out = new kvrt_sampler{std::move(*sampler), std::vector<double>(vocabulary_size)};
    return nullptr;
  });
}

kvrt_error* kvrt_sampler_sample(kvrt_sampler* sampler, const double* logits, size_t count,
                                uint32_t* token) {
  return Guard([&]() -> kvrt_error* {
    if (sampler == nullptr || (logits == nullptr && count > 0) || token == nullptr) {
      return InvalidArgument("kvrt_sampler_sample needs a sampler, logits and an output");
    }
    const HandleEntry entry(sampler->busy);
    if (!entry.entered()) return ConcurrentUse("kvrt_sampler_sample");
    kvrt::Result<kvrt::TokenSelection> selection =
        sampler->sampler.Sample(std::span<const double>(logits, count));
    if (!selection) return MakeError(selection.error());
    *token = selection->token_id;
    return nullptr;
  });
}

kvrt_error* kvrt_sampler_sample_f32(kvrt_sampler* sampler, const float* logits, size_t count,
                                    uint32_t* token) {
  return Guard([&]() -> kvrt_error* {
    if (sampler == nullptr || (logits == nullptr && count > 0) || token == nullptr) {
      return InvalidArgument("kvrt_sampler_sample_f32 needs a sampler, logits and an output");
    }
    const HandleEntry entry(sampler->busy);
    if (!entry.entered()) return ConcurrentUse("kvrt_sampler_sample_f32");
    if (count != sampler->widened.size()) {
      return MakeError(kvrt::Error(kvrt::ErrorCode::kLogitCountMismatch,
                                   {{"expected", uint64_t{sampler->widened.size()}}, {"actual", uint64_t{count}}},
                                   "sampler expects " + std::to_string(sampler->widened.size()) +
                                       " logits, received " + std::to_string(count)));
    }
    for (size_t i = 0; i < count; ++i) sampler->widened[i] = logits[i];
    kvrt::Result<kvrt::TokenSelection> selection = sampler->sampler.Sample(sampler->widened);
    if (!selection) return MakeError(selection.error());
    *token = selection->token_id;
    return nullptr;
  });
}

kvrt_error* kvrt_sampler_accept(kvrt_sampler* sampler, uint32_t token) {
  return Guard([&]() -> kvrt_error* {
    if (sampler == nullptr) return InvalidArgument("kvrt_sampler_accept needs a sampler");
    const HandleEntry entry(sampler->busy);
    if (!entry.entered()) return ConcurrentUse("kvrt_sampler_accept");
    if (kvrt::Result<void> accepted = sampler->sampler.Accept(token); !accepted) {
      return MakeError(accepted.error());
    }
    return nullptr;
  });
}

void kvrt_sampler_reset(kvrt_sampler* sampler) {
  if (sampler == nullptr) return;
  const HandleEntry entry(sampler->busy);
  if (entry.entered()) sampler->sampler.Reset();  // returns nothing: does nothing while in use
}

void kvrt_sampler_free(kvrt_sampler* sampler) { delete sampler; }

}  // extern "C"
