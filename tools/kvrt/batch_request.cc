#include "batch_request.h"

#include <nlohmann/json.hpp>
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
    } else if (key == "max_new_tokens" || key == "top_k" || key == "seed") {
      Result<uint64_t> number = must_be_unsigned();
      if (!number) return std::unexpected(number.error());
      (key == "max_new_tokens" ? fields.max_new_tokens : key == "top_k" ? fields.top_k : fields.seed) = *number;
    } else if (key == "temperature") {
      if (!value.is_number()) return std::unexpected(FieldError("\"temperature\" must be a number"));
      fields.temperature = value.get<double>();
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
      } else if (unsigned_value) {
        fields.eos = value.get<uint64_t>();
      } else {
        return std::unexpected(FieldError("\"eos\" must be a token id or null"));
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
