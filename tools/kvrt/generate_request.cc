// The request part of `kvrt generate`, shared with `kvrt batch` (generate_request.h).
#include "generate_request.h"

#include <cstdio>
#include <span>
#include <utility>

#include "build_facts.h"
#include "json_writer.h"

namespace kvrt::cli {
namespace {

// The value of a field that must be present (the caller checked).
template <class T>
Result<T> Given(const RequestField<T>& field) {
  if (!*field) return std::unexpected((*field).error());
  return **field;
}

Result<SamplingMode> ModeFromFields(const RequestFields& fields) {
  const bool has_temperature = fields.temperature.has_value(), has_top_k = fields.top_k.has_value();
  if (fields.greedy) {
    if (has_temperature || has_top_k) {
      return std::unexpected(InvalidArgument("--greedy excludes --temperature and --top-k"));
    }
    return SamplingMode::Greedy();
  }
  if (!has_temperature && !has_top_k) return SamplingMode::Greedy();
  double temperature = 1.0;
  if (has_temperature) {
    Result<double> given = Given(fields.temperature);
    if (!given) return std::unexpected(given.error());
    temperature = *given;
  }
  // Temperature 0 is the limit of sharper and sharper sampling: the largest logit,
  // as kvrt_generation_options reads it. --top-k is then irrelevant.
  if (has_temperature && temperature == 0.0) return SamplingMode::Greedy();
  if (!has_temperature || !has_top_k) {
    return std::unexpected(InvalidArgument("--temperature and --top-k go together"));
  }
  Result<uint64_t> top_k = Given(fields.top_k);
  if (!top_k) return std::unexpected(top_k.error());
  return SamplingMode::TemperatureTopK(temperature, *top_k);
}

Result<uint64_t> RngStateFromFields(const RequestFields& fields, uint64_t checkpoint_state) {
  if (fields.rng_state && fields.seed) {
    return std::unexpected(InvalidArgument("--rng-state and --seed exclude each other"));
  }
  if (fields.rng_state) return Given(fields.rng_state);
  if (fields.seed) return Given(fields.seed);
  return checkpoint_state;
}

std::string Hex16(uint64_t value) {
  char buffer[24];
  std::snprintf(buffer, sizeof buffer, "%016llx", static_cast<unsigned long long>(value));
  return buffer;
}

}  // namespace

// As the reference pipeline decodes it: a final EOS is dropped, the rest is
// decoded strictly; nullopt when that fails.
std::optional<std::string> GeneratedText(const Tokenizer& tokenizer, const GenerationResult& run) {
  std::vector<uint32_t> ids = run.generated;
  if (run.stop == GenerationStop::kEos && !ids.empty()) ids.pop_back();
  Result<std::string> text = tokenizer.DecodeContentUtf8(ids);
  if (!text) return std::nullopt;
  return *text;
}

RequestFields RequestFieldsFromFlags(const Flags& flags) {
  RequestFields fields;
  if (flags.Has("tokens")) fields.tokens = flags.TokenList("tokens");
  fields.prompt = flags.Value("prompt");
  fields.greedy = flags.Has("greedy");
  if (flags.Has("temperature")) fields.temperature = flags.Double("temperature", 1.0);
  if (flags.Has("top-k")) fields.top_k = flags.Unsigned("top-k", 1);
  if (flags.Has("rng-state")) fields.rng_state = flags.Hex("rng-state", 0);
  if (flags.Has("seed")) fields.seed = flags.Unsigned("seed", 0);
  if (flags.Has("eos")) fields.eos = flags.Unsigned("eos", 0);
  fields.no_eos = flags.Has("no-eos");
  fields.special = flags.Has("special");
  if (flags.Has("max-new-tokens")) fields.max_new_tokens = flags.Unsigned("max-new-tokens", 64);
  return fields;
}

Result<GenerationConfig> RequestConfigFromFields(const RequestFields& fields) {
  if (fields.tokens.has_value() == fields.prompt.has_value()) {
    return std::unexpected(InvalidArgument("give exactly one of --tokens and --prompt"));
  }
  Result<SamplingMode> mode = ModeFromFields(fields);
  if (!mode) return std::unexpected(mode.error());
  GenerationConfig config;
  config.mode = *mode;
  config.max_new_tokens = 64;
  if (fields.max_new_tokens) {
    Result<uint64_t> max_new_tokens = Given(fields.max_new_tokens);
    if (!max_new_tokens) return std::unexpected(max_new_tokens.error());
    config.max_new_tokens = *max_new_tokens;
  }
  if (fields.eos && fields.no_eos) {
    return std::unexpected(InvalidArgument("--eos and --no-eos exclude each other"));
  }
  if (fields.eos) {
    Result<uint64_t> eos = Given(fields.eos);
    if (!eos) return std::unexpected(eos.error());
    if (*eos > UINT32_MAX) return std::unexpected(InvalidArgument("--eos must fit a u32 token id"));
    config.eos_token = static_cast<uint32_t>(*eos);
  }
  return config;
}

Result<RequestInput> RequestInputFromFields(const RequestFields& fields, const LoadedModel& loaded,
                                            const Tokenizer& tokenizer, bool llama2c_tokenizer,
                                            GenerationConfig& config) {
  // run.c ends a sequence at BOS, the delimiter between documents.
  if (llama2c_tokenizer && !config.eos_token && !fields.no_eos) {
    config.eos_token = tokenizer.bos_id();
  }
  // A byte-BPE model, like a GGUF's, was trained to end its text with its EOS
  // token: without an explicit choice, stop there rather than run past the text.
  const bool own_eos = loaded.tokenizer && (loaded.format == ModelFormat::kGguf ||
                                            loaded.tokenizer->kind() == TokenizerKind::kByteBpe);
  if (!config.eos_token && !fields.no_eos && own_eos) {
    config.eos_token = loaded.tokenizer->eos_id();
    // A chat model ends its turn with its end-of-turn token (<|eot_id|>,
    // <|im_end|>), which llama.cpp stops at beside EOS.
    const std::span<const uint32_t> end = loaded.tokenizer->end_of_generation_ids();
    if (loaded.format == ModelFormat::kGguf) config.end_of_generation.assign(end.begin(), end.end());
  }
  RequestInput input;
  Result<uint64_t> state = RngStateFromFields(fields, loaded.sampling_rng_state.value_or(0));
  if (!state) return std::unexpected(state.error());
  input.rng_state = *state;
  if (fields.prompt) {
    if (tokenizer.vocabulary_size() == 0) {
      return std::unexpected(
          InvalidArgument("this model file has no tokenizer: give --tokenizer to encode --prompt"));
    }
    Result<std::vector<uint32_t>> encoded = tokenizer.EncodePrompt(
        *fields.prompt, fields.special ? SpecialTokens::kParse : SpecialTokens::kAsText);
    if (!encoded) return std::unexpected(encoded.error());
    input.prompt = std::move(*encoded);
  } else {
    Result<std::vector<uint32_t>> ids = Given(fields.tokens);
    if (!ids) return std::unexpected(ids.error());
    input.prompt = std::move(*ids);
  }
  return input;
}

std::string GenerationJson(const GenerationResult& run, const std::optional<std::string>& text,
                           uint64_t rng_state, bool cached, size_t threads,
                           const std::optional<std::string>& id) {
  JsonWriter json;
  json.BeginObject();
  if (id) json.Key("id").String(*id);
  WriteBuildFacts(json, CurrentBuildFacts(threads));
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
  return json.text();
}


}  // namespace kvrt::cli
