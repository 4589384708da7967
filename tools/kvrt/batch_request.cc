#include "batch_request.h"

#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "flags.h"
#include "number_text.h"

namespace kvrt::cli {
namespace {

using Json = nlohmann::json;

Error LineError(size_t line, const Error& inner) {
  return Error(inner.code(), {{"line", uint64_t{line}}},
               "requests line " + std::to_string(line) + ": " + inner.message());
}

Error FieldError(const std::string& message) { return InvalidArgument(message); }

// "tokens": an array of u32 ids.
Result<std::vector<uint32_t>> TokenIds(const Json& value) {
  if (!value.is_array()) return std::unexpected(FieldError("\"tokens\" must be an array of token ids"));
  std::vector<uint32_t> ids;
  ids.reserve(value.size());
  for (const Json& token : value) {
    if (!token.is_number_unsigned() || token.get<uint64_t>() > UINT32_MAX) {
      return std::unexpected(FieldError("\"tokens\" must be an array of token ids"));
    }
    ids.push_back(static_cast<uint32_t>(token.get<uint64_t>()));
  }
  return ids;
}

// "eos": an id, or a non-empty array of them (the first is the EOS, every one
// ends the generation).
Result<std::vector<uint32_t>> EndIds(const Json& value) {
  const Error wrong = FieldError("\"eos\" must be a token id, an array of them or null");
  if (value.is_number_unsigned()) {
    if (value.get<uint64_t>() > UINT32_MAX) return std::unexpected(FieldError("--eos must fit a u32 token id"));
    return std::vector<uint32_t>{static_cast<uint32_t>(value.get<uint64_t>())};
  }
  if (!value.is_array() || value.empty()) return std::unexpected(wrong);
  std::vector<uint32_t> ids;
  for (const Json& id : value) {
    if (!id.is_number_unsigned()) return std::unexpected(wrong);
    if (id.get<uint64_t>() > UINT32_MAX) return std::unexpected(FieldError("--eos must fit a u32 token id"));
    ids.push_back(static_cast<uint32_t>(id.get<uint64_t>()));
  }
  return ids;
}

// "stop": a string or an array of strings.
Result<std::vector<std::string>> StopTexts(const Json& value) {
  if (value.is_string()) return std::vector<std::string>{value.get<std::string>()};
  const Error wrong = FieldError("\"stop\" must be a string or an array of strings");
  if (!value.is_array()) return std::unexpected(wrong);
  std::vector<std::string> stops;
  for (const Json& stop : value) {
    if (!stop.is_string()) return std::unexpected(wrong);
    stops.push_back(stop.get<std::string>());
  }
  return stops;
}

// "logit_bias": OpenAI's form, {"token id": bias, ...}, added in the object's order.
Result<std::vector<LogitBias>> LogitBiases(const Json& value) {
  if (!value.is_object()) return std::unexpected(FieldError("\"logit_bias\" must be an object of token id: bias"));
  std::vector<LogitBias> biases;
  for (const auto& [token, bias] : value.items()) {
    const std::optional<uint64_t> id = ParseDecimalU64(token);
    if (!id || *id > UINT32_MAX) {
      return std::unexpected(FieldError("\"logit_bias\" keys must be token ids, got '" + token + "'"));
    }
    if (!bias.is_number()) return std::unexpected(FieldError("\"logit_bias\" values must be numbers"));
    biases.push_back({static_cast<uint32_t>(*id), bias.get<double>()});
  }
  return biases;
}

// The number fields that are `generate`'s flags of the same name (a dash for
// each underscore).
constexpr std::pair<const char*, RequestField<double> RequestFields::*> kNumberFields[] = {
    {"temperature", &RequestFields::temperature},
    {"top_p", &RequestFields::top_p},
    {"min_p", &RequestFields::min_p},
    {"typical_p", &RequestFields::typical_p},
    {"repeat_penalty", &RequestFields::repeat_penalty},
    {"presence_penalty", &RequestFields::presence_penalty},
    {"frequency_penalty", &RequestFields::frequency_penalty},
};
constexpr std::pair<const char*, RequestField<uint64_t> RequestFields::*> kUnsignedFields[] = {
    {"max_new_tokens", &RequestFields::max_new_tokens},
    {"top_k", &RequestFields::top_k},
    {"seed", &RequestFields::seed},
    {"logprobs", &RequestFields::logprobs},
};

template <class Field, size_t N>
Field RequestFields::* FieldNamed(const std::string& key, const std::pair<const char*, Field RequestFields::*> (&fields)[N]) {
  for (const auto& [name, field] : fields) {
    if (key == name) return field;
  }
  return nullptr;
}

// The fields of one request object, each checked for its JSON type.
Result<void> ReadFields(const Json& line, RequestFields& fields, std::string& id_json, size_t& arrival_step) {
  if (!line.is_object()) return std::unexpected(FieldError("a request is a JSON object"));
  for (const auto& [key, value] : line.items()) {
    const bool unsigned_value = value.is_number_unsigned();
    auto must_be_unsigned = [&]() -> Result<uint64_t> {
      if (!unsigned_value) return std::unexpected(FieldError("\"" + key + "\" must be an unsigned integer"));
      return value.get<uint64_t>();
    };
    if (key == "id") {
      if (!value.is_string() && !unsigned_value) {
        return std::unexpected(FieldError("\"id\" must be a string or an unsigned integer"));
      }
      id_json = value.dump();
    } else if (key == "arrival_step") {
      Result<uint64_t> step = must_be_unsigned();
      if (!step) return std::unexpected(step.error());
      arrival_step = *step;
    } else if (key == "tokens") {
      Result<std::vector<uint32_t>> ids = TokenIds(value);
      if (!ids) return std::unexpected(ids.error());
      fields.tokens = std::move(*ids);
    } else if (key == "prompt") {
      if (!value.is_string()) return std::unexpected(FieldError("\"prompt\" must be a string"));
      fields.prompt = value.get<std::string>();  // every byte, U+0000 included
    } else if (auto unsigned_field = FieldNamed(key, kUnsignedFields)) {
      Result<uint64_t> number = must_be_unsigned();
      if (!number) return std::unexpected(number.error());
      fields.*unsigned_field = *number;
    } else if (auto number_field = FieldNamed(key, kNumberFields)) {
      if (!value.is_number()) return std::unexpected(FieldError("\"" + key + "\" must be a number"));
      fields.*number_field = value.get<double>();
    } else if (key == "repeat_last_n") {
      if (!value.is_number_integer() || (!unsigned_value && value.get<int64_t>() != -1)) {
        return std::unexpected(FieldError("\"repeat_last_n\" must be an unsigned integer or -1"));
      }
      if (unsigned_value && value.get<uint64_t>() > INT64_MAX) {
        return std::unexpected(FieldError("\"repeat_last_n\" is too large"));
      }
      fields.repeat_last_n = value.get<int64_t>();
    } else if (key == "logit_bias") {
      Result<std::vector<LogitBias>> biases = LogitBiases(value);
      if (!biases) return std::unexpected(biases.error());
      fields.logit_bias = std::move(*biases);
    } else if (key == "stop") {
      Result<std::vector<std::string>> stops = StopTexts(value);
      if (!stops) return std::unexpected(stops.error());
      fields.stop = std::move(*stops);
    } else if (key == "rng_state") {
      if (!value.is_string()) return std::unexpected(FieldError("\"rng_state\" must be a hex string"));
      const std::string text = value.get<std::string>();
      const std::optional<uint64_t> state = ParseHexU64(text);
      if (!state) {
        return std::unexpected(
            FieldError("\"rng_state\" needs 1 to 16 hex digits (optionally after 0x), got '" + text + "'"));
      }
      fields.rng_state = *state;
    } else if (key == "eos") {
      if (value.is_null()) {
        fields.no_eos = true;
      } else {
        Result<std::vector<uint32_t>> ids = EndIds(value);
        if (!ids) return std::unexpected(ids.error());
        fields.eos = std::move(*ids);
      }
    } else if (key == "greedy" || key == "no_eos" || key == "special") {
      if (!value.is_boolean()) return std::unexpected(FieldError("\"" + key + "\" must be true or false"));
      (key == "greedy" ? fields.greedy : key == "no_eos" ? fields.no_eos : fields.special) = value.get<bool>();
    } else {
      return std::unexpected(FieldError("unknown field \"" + key + "\""));
    }
  }
  return {};
}

}  // namespace

Result<std::optional<BatchRequest>> ParseBatchRequest(std::string_view line, size_t number, size_t index,
                                                      const BatchContext& context) {
  if (line.find_first_not_of(" \t\r") == std::string_view::npos) return std::optional<BatchRequest>();
  const Json json = Json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded()) return std::unexpected(LineError(number, FieldError("not valid JSON")));
  BatchRequest parsed;
  parsed.id_json = std::to_string(index);
  RequestFields fields;
  if (Result<void> read = ReadFields(json, fields, parsed.id_json, parsed.request.arrival_step); !read) {
    return std::unexpected(LineError(number, read.error()));
  }
  Result<GenerationConfig> config = RequestConfigFromFields(fields);
  if (!config) return std::unexpected(LineError(number, config.error()));
  parsed.request.config = *config;
  parsed.request.config.context_size = context.context_size;
  Result<RequestInput> input = RequestInputFromFields(fields, context.loaded, context.tokenizer,
                                                      context.llama2c_tokenizer, parsed.request.config);
  if (!input) return std::unexpected(LineError(number, input.error()));
  parsed.request.prompt = std::move(input->prompt);
  parsed.request.rng_state = input->rng_state;
  // What GenerateCached would refuse before running (prompt length, ids, EOS,
  // sampling parameters), refused here with the line's number.
  if (Result<void> valid = ValidateCachedRequest(context.loaded.model.config(), parsed.request.prompt,
                                                 parsed.request.config);
      !valid) {
    return std::unexpected(LineError(number, valid.error()));
  }
  return std::optional<BatchRequest>(std::move(parsed));
}

}  // namespace kvrt::cli
