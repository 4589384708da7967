// The request part of `kvrt generate`, shared with `kvrt batch` (generate_request.h).
#include "generate_request.h"

#include <cstdio>
#include <span>
#include <utility>

#include "build_facts.h"
#include "input_file.h"
#include "json_writer.h"
#include "number_text.h"

namespace kvrt::cli {
namespace {

// Prompt texts larger than this are refused before they are read.
constexpr uint64_t kMaxPromptBytes = uint64_t{256} << 20;

// The value of a field that must be present (the caller checked).
template <class T>
Result<T> Given(const RequestField<T>& field) {
  if (!*field) return std::unexpected((*field).error());
  return **field;
}

// A field's value, or `fallback` when it is absent.
template <class T>
Result<T> GivenOr(const RequestField<T>& field, T fallback) {
  if (!field) return fallback;
  return Given(field);
}

// Without a temperature (or with 0) the pick is greedy: top-k, top-p and min-p
// always keep the most likely token, so they change nothing then, and the
// penalties and the bias still shape the logits greedy reads.
Result<SamplingMode> ModeFromFields(const RequestFields& fields) {
  if (fields.greedy) {
    if (fields.temperature || fields.top_k) {
      return std::unexpected(InvalidArgument("--greedy excludes --temperature and --top-k"));
    }
    return SamplingMode::Greedy();
  }
  Result<double> temperature = GivenOr(fields.temperature, 0.0);
  if (!temperature) return std::unexpected(temperature.error());
  Result<uint64_t> top_k = GivenOr(fields.top_k, uint64_t{0});
  if (!top_k) return std::unexpected(top_k.error());
  if (*temperature == 0.0) return SamplingMode::Greedy();
  if (*top_k == 0) return SamplingMode::Temperature(*temperature);
  return SamplingMode::TemperatureTopK(*temperature, *top_k);
}

Result<SamplerOptions> SamplerFromFields(const RequestFields& fields) {
  SamplerOptions options;
  for (const auto& [field, option] : {std::pair{&RequestFields::top_p, &SamplerOptions::top_p},
                                      std::pair{&RequestFields::min_p, &SamplerOptions::min_p},
                                      std::pair{&RequestFields::typical_p, &SamplerOptions::typical_p},
                                      std::pair{&RequestFields::repeat_penalty, &SamplerOptions::repetition_penalty},
                                      std::pair{&RequestFields::presence_penalty, &SamplerOptions::presence_penalty},
                                      std::pair{&RequestFields::frequency_penalty,
                                                &SamplerOptions::frequency_penalty}}) {
    Result<double> value = GivenOr(fields.*field, options.*option);
    if (!value) return std::unexpected(value.error());
    options.*option = *value;
  }
  Result<int64_t> last_n = GivenOr(fields.repeat_last_n, options.penalty_last_n);
  if (!last_n) return std::unexpected(last_n.error());
  options.penalty_last_n = *last_n;
  if (fields.logit_bias) {
    Result<std::vector<LogitBias>> bias = Given(fields.logit_bias);
    if (!bias) return std::unexpected(bias.error());
    options.logit_bias = std::move(*bias);
  }
  return options;
}

// llama.cpp's spelling: "15043+1" or "15043-0.5".
Result<LogitBias> ParseLogitBias(const std::string& text) {
  const size_t sign = text.find_first_of("+-");
  const std::optional<uint64_t> id = ParseDecimalU64(std::string_view(text).substr(0, sign));
  std::optional<double> bias;
  if (sign != std::string::npos) bias = ParseDouble(std::string_view(text).substr(sign + 1));
  if (!id || *id > UINT32_MAX || !bias || std::string_view(text).substr(sign + 1).starts_with('-')) {
    return std::unexpected(
        InvalidArgument("--logit-bias needs TOKEN_ID+BIAS or TOKEN_ID-BIAS, got '" + text + "'"));
  }
  return LogitBias{static_cast<uint32_t>(*id), text[sign] == '-' ? -*bias : *bias};
}

Result<std::vector<LogitBias>> LogitBiasFromFlags(const Flags& flags) {
  std::vector<LogitBias> biases;
  for (const std::string& text : flags.Values("logit-bias")) {
    Result<LogitBias> bias = ParseLogitBias(text);
    if (!bias) return std::unexpected(bias.error());
    biases.push_back(*bias);
  }
  return biases;
}

Result<uint64_t> RngStateFromFields(const RequestFields& fields, uint64_t checkpoint_state) {
  if (fields.rng_state && fields.seed) {
    return std::unexpected(InvalidArgument("--rng-state and --seed exclude each other"));
  }
  if (fields.rng_state) return Given(fields.rng_state);
  if (fields.seed) return Given(fields.seed);
  return checkpoint_state;
}

// The prompt text of --prompt TEXT, --prompt - (standard input) or --file F.
Result<std::string> PromptText(const RequestFields& fields) {
  if (fields.prompt_file) return ReadInputFile(*fields.prompt_file, "a prompt file", kMaxPromptBytes);
  if (fields.prompt_from_stdin) return ReadStandardInput("a prompt", kMaxPromptBytes);
  return *fields.prompt;
}

std::string Hex16(uint64_t value) {
  char buffer[24];
  std::snprintf(buffer, sizeof buffer, "%016llx", static_cast<unsigned long long>(value));
  return buffer;
}

}  // namespace

RequestFields RequestFieldsFromFlags(const Flags& flags) {
  RequestFields fields;
  if (flags.Has("tokens")) fields.tokens = flags.TokenList("tokens");
  fields.prompt = flags.Value("prompt");
  if (fields.prompt == "-") {
    fields.prompt.reset();
    fields.prompt_from_stdin = true;
  }
  fields.prompt_file = flags.Value("file");
  fields.greedy = flags.Has("greedy");
  if (flags.Has("temperature")) fields.temperature = flags.Double("temperature", 0.0);
  if (flags.Has("top-k")) fields.top_k = flags.Unsigned("top-k", 0);
  for (const auto& [name, field] : {std::pair{"top-p", &RequestFields::top_p},
                                    std::pair{"min-p", &RequestFields::min_p},
                                    std::pair{"typical-p", &RequestFields::typical_p},
                                    std::pair{"repeat-penalty", &RequestFields::repeat_penalty},
                                    std::pair{"presence-penalty", &RequestFields::presence_penalty},
                                    std::pair{"frequency-penalty", &RequestFields::frequency_penalty}}) {
    if (flags.Has(name)) fields.*field = flags.Double(name, 0.0);
  }
  if (flags.Has("repeat-last-n")) fields.repeat_last_n = flags.CountOrAll("repeat-last-n", 0);
  if (flags.Has("logit-bias")) fields.logit_bias = LogitBiasFromFlags(flags);
  if (flags.Has("rng-state")) fields.rng_state = flags.Hex("rng-state", 0);
  if (flags.Has("seed")) fields.seed = flags.Unsigned("seed", 0);
  if (flags.Has("eos")) fields.eos = flags.TokenList("eos");
  fields.no_eos = flags.Has("no-eos");
  fields.stop = flags.Values("stop");
  if (flags.Has("logprobs")) fields.logprobs = flags.Unsigned("logprobs", 0);
  fields.special = flags.Has("special");
  if (flags.Has("max-new-tokens")) fields.max_new_tokens = flags.Unsigned("max-new-tokens", 64);
  return fields;
}

Result<SamplerChoice> SamplerChoiceFromFields(const RequestFields& fields) {
  Result<SamplingMode> mode = ModeFromFields(fields);
  if (!mode) return std::unexpected(mode.error());
  Result<SamplerOptions> options = SamplerFromFields(fields);
  if (!options) return std::unexpected(options.error());
  return SamplerChoice{*mode, std::move(*options)};
}

Result<GenerationConfig> RequestConfigFromFields(const RequestFields& fields) {
  const bool has_prompt = fields.prompt || fields.prompt_from_stdin;
  const int prompt_sources = fields.tokens.has_value() + has_prompt + fields.prompt_file.has_value();
  if (prompt_sources != 1) {
    return std::unexpected(InvalidArgument(fields.prompt_file ? "give exactly one of --tokens, --prompt and --file"
                                                              : "give exactly one of --tokens and --prompt"));
  }
  Result<SamplerChoice> sampler = SamplerChoiceFromFields(fields);
  if (!sampler) return std::unexpected(sampler.error());
  GenerationConfig config;
  config.mode = sampler->mode;
  config.sampler = std::move(sampler->options);
  Result<uint64_t> max_new_tokens = GivenOr(fields.max_new_tokens, uint64_t{64});
  if (!max_new_tokens) return std::unexpected(max_new_tokens.error());
  config.max_new_tokens = *max_new_tokens;
  config.stop = fields.stop;
  if (fields.logprobs) {
    Result<uint64_t> top = Given(fields.logprobs);
    if (!top) return std::unexpected(top.error());
    config.top_logprobs = *top;
  }
  if (fields.eos && fields.no_eos) {
    return std::unexpected(InvalidArgument("--eos and --no-eos exclude each other"));
  }
  if (fields.eos) {
    Result<std::vector<uint32_t>> ends = Given(fields.eos);
    if (!ends) return std::unexpected(ends.error());
    config.eos_token = ends->front();
    config.end_of_generation.assign(ends->begin() + 1, ends->end());
  }
  return config;
}

Result<RequestInput> RequestInputFromFields(const RequestFields& fields, const LoadedModel& loaded,
                                            const Tokenizer& tokenizer, bool llama2c_tokenizer,
                                            GenerationConfig& config) {
  if (tokenizer.vocabulary_size() > 0) config.tokenizer = tokenizer;
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
  if (fields.tokens) {
    Result<std::vector<uint32_t>> ids = Given(fields.tokens);
    if (!ids) return std::unexpected(ids.error());
    input.prompt = std::move(*ids);
    return input;
  }
  if (tokenizer.vocabulary_size() == 0) {
    return std::unexpected(InvalidArgument("this model file has no tokenizer: give --tokenizer to encode --prompt"));
  }
  Result<std::string> text = PromptText(fields);
  if (!text) return std::unexpected(text.error());
  Result<std::vector<uint32_t>> encoded =
      tokenizer.EncodePrompt(*text, fields.special ? SpecialTokens::kParse : SpecialTokens::kAsText);
  if (!encoded) return std::unexpected(encoded.error());
  input.prompt = std::move(*encoded);
  input.prompt_text = std::move(*text);
  return input;
}

std::string GenerationJson(const GenerationResult& run, uint64_t rng_state, bool cached, size_t threads,
                           const std::optional<std::string>& id) {
  JsonWriter json;
  json.BeginObject();
  if (id) json.Key("id").String(*id);
  WriteBuildFacts(json, CurrentBuildFacts(threads));
  json.Key("prompt").UnsignedArray(std::span<const uint32_t>(run.prompt));
  json.Key("generated").UnsignedArray(std::span<const uint32_t>(run.generated));
  json.Key("text");
  if (run.text) {
    json.String(*run.text);
  } else {
    json.Null();
  }
  json.Key("stop").String(GenerationStopName(run.stop));
  json.Key("steps").BeginArray();
  for (size_t i = 0; i < run.steps.size(); ++i) {
    const GenerationStep& step = run.steps[i];
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
    if (step.logprob) {
      json.Key("logprob").Number(*step.logprob);
      json.Key("top_logprobs").BeginArray();
      for (const TokenLogprob& alternative : run.TopLogprobs(i)) {
        json.BeginObject();
        json.Key("id").Unsigned(alternative.token_id);
        json.Key("logprob").Number(alternative.logprob);
        json.EndObject();
      }
      json.EndArray();
    }
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
