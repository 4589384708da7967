// The C API's errors, models and tokenizers (kvrt/kvrt.h).
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "c_api/c_api_internal.h"
#include "c_api/c_error_codes.h"
#include "formats/llama2c/llama2c.h"
#include "formats/load_model.h"

using kvrt::c_api::Guard;
using kvrt::c_api::InvalidArgument;
using kvrt::c_api::MakeError;

namespace kvrt::c_api {
namespace {

// Returned when even the error cannot be allocated; never freed.
kvrt_error out_of_memory_error{KVRT_ERR_ALLOCATION_FAILED, "AllocationFailed",
                               "out of memory"};

}  // namespace

kvrt_error* MakeError(const Error& error) {
  try {
    auto* out = new kvrt_error;
    out->code = CErrorCode(error.code());
    out->name = std::string(error.name());
    out->message = error.message();
    return out;
  } catch (...) {
    return &out_of_memory_error;
  }
}

kvrt_error* InvalidArgument(const std::string& message) {
  return MakeError(Error(ErrorCode::kInvalidArgument, {}, message));
}

kvrt_error* ConcurrentUse(const char* function) {
  return MakeError(Error(ErrorCode::kConcurrentUse, {{"function", std::string(function)}},
                         std::string(function) +
                             ": another call is inside this session; a session serves one thread at a time"));
}

bool IsStaticError(const kvrt_error* error) { return error == &out_of_memory_error; }

}  // namespace kvrt::c_api

extern "C" {

int kvrt_error_code(const kvrt_error* error) { return error ? error->code : -1; }
const char* kvrt_error_name(const kvrt_error* error) { return error ? error->name.c_str() : ""; }
const char* kvrt_error_message(const kvrt_error* error) { return error ? error->message.c_str() : ""; }

void kvrt_error_free(kvrt_error* error) {
  if (!kvrt::c_api::IsStaticError(error)) delete error;
}

const char* kvrt_error_code_name(int code) {
  const std::optional<kvrt::ErrorCode> variant = kvrt::c_api::CppErrorCode(code);
  if (!variant) return "Unknown";
  // The names are string literals in a constexpr table: NUL-terminated views.
  return kvrt::ErrorName(*variant).data();
}

const char* kvrt_version(void) { return KVRT_VERSION_STRING; }

kvrt_error* kvrt_model_load(const char* path, kvrt_model** out) {
  return Guard([&]() -> kvrt_error* {
    if (path == nullptr || out == nullptr) return InvalidArgument("kvrt_model_load needs a path and an output");
    kvrt::Result<kvrt::ModelFile> loaded = kvrt::ReadModelFile(path);
    if (!loaded) return MakeError(loaded.error());
    *out = new kvrt_model{std::move(loaded->model), std::move(loaded->tokenizer), loaded->format};
    return nullptr;
  });
}

kvrt_error* kvrt_model_load_tokenizer(kvrt_model* model, const char* path) {
  return Guard([&]() -> kvrt_error* {
    if (model == nullptr || path == nullptr) return InvalidArgument("kvrt_model_load_tokenizer needs a model and a path");
    kvrt::Result<kvrt::Tokenizer> tokenizer =
        kvrt::LoadLlama2cTokenizer(path, model->model.config().vocabulary_size);
    if (!tokenizer) return MakeError(tokenizer.error());
    model->tokenizer = std::move(*tokenizer);
    return nullptr;
  });
}

void kvrt_model_free(kvrt_model* model) { delete model; }

void kvrt_model_get_info(const kvrt_model* model, kvrt_model_info* out) {
  if (model == nullptr || out == nullptr) return;
  const kvrt::ModelConfig& config = model->model.config();
  *out = kvrt_model_info{};
  out->vocabulary_size = config.vocabulary_size;
  out->model_width = config.model_width;
  out->heads = config.heads;
  out->kv_heads = config.kv_heads;
  out->feed_forward_width = config.feed_forward_width;
  out->layers = config.layers;
  out->max_positions = config.max_positions;
  out->tied_output = config.tied_output ? 1 : 0;
  out->format = kvrt::ModelFormatName(model->format).data();
  out->tokenizer_kind = model->tokenizer ? model->tokenizer->kind_name().data() : "none";
  const std::optional<uint32_t> bos = model->tokenizer ? model->tokenizer->bos_id() : std::nullopt;
  const std::optional<uint32_t> eos = model->tokenizer ? model->tokenizer->eos_id() : std::nullopt;
  out->bos_id = bos ? int64_t{*bos} : -1;
  out->eos_id = eos ? int64_t{*eos} : -1;
}

kvrt_error* kvrt_model_encode_prompt(const kvrt_model* model, const char* text, uint32_t** ids, size_t* count) {
  return kvrt_model_encode_prompt_special(model, text, 0, ids, count);
}

kvrt_error* kvrt_model_encode_prompt_special(const kvrt_model* model, const char* text,
                                             int parse_special, uint32_t** ids, size_t* count) {
  return Guard([&]() -> kvrt_error* {
    if (model == nullptr || text == nullptr || ids == nullptr || count == nullptr) {
      return InvalidArgument("kvrt_model_encode_prompt needs a model, a text and two outputs");
    }
    if (!model->tokenizer) return InvalidArgument("this model has no tokenizer (see kvrt_model_load_tokenizer)");
    kvrt::Result<std::vector<uint32_t>> encoded = model->tokenizer->EncodePrompt(
        text, parse_special ? kvrt::SpecialTokens::kParse : kvrt::SpecialTokens::kAsText);
    if (!encoded) return MakeError(encoded.error());
    // malloc, so a C caller could also release it with free().
    auto* copy = static_cast<uint32_t*>(std::malloc(std::max<size_t>(1, encoded->size()) * sizeof(uint32_t)));
    if (copy == nullptr) throw std::bad_alloc();
    std::copy(encoded->begin(), encoded->end(), copy);
    *ids = copy;
    *count = encoded->size();
    return nullptr;
  });
}

void kvrt_tokens_free(uint32_t* ids) { std::free(ids); }

void kvrt_model_end_of_generation(const kvrt_model* model, const uint32_t** ids, size_t* count) {
  std::span<const uint32_t> end;
  if (model != nullptr && model->tokenizer) end = model->tokenizer->end_of_generation_ids();
  if (ids != nullptr) *ids = end.data();
  if (count != nullptr) *count = end.size();
}

kvrt_error* kvrt_model_token_bytes(const kvrt_model* model, int64_t previous, uint32_t token, const char** bytes,
                                   size_t* length) {
  return Guard([&]() -> kvrt_error* {
    if (model == nullptr || bytes == nullptr || length == nullptr) {
      return InvalidArgument("kvrt_model_token_bytes needs a model and two outputs");
    }
    if (!model->tokenizer) return InvalidArgument("this model has no tokenizer (see kvrt_model_load_tokenizer)");
    std::optional<uint32_t> before;
    if (previous >= 0 && previous <= int64_t{UINT32_MAX}) before = static_cast<uint32_t>(previous);
    kvrt::Result<std::string_view> piece = model->tokenizer->TokenBytesAfter(before, token);
    if (!piece) return MakeError(piece.error());
    *bytes = piece->data();
    *length = piece->size();
    return nullptr;
  });
}

kvrt_error* kvrt_model_decode(const kvrt_model* model, const uint32_t* ids, size_t count, char** text,
                              size_t* length) {
  return Guard([&]() -> kvrt_error* {
    if (model == nullptr || (ids == nullptr && count > 0) || text == nullptr) {
      return InvalidArgument("kvrt_model_decode needs a model, ids and an output");
    }
    if (!model->tokenizer) return InvalidArgument("this model has no tokenizer (see kvrt_model_load_tokenizer)");
    kvrt::Result<std::string> bytes = model->tokenizer->DecodeContent(std::span<const uint32_t>(ids, count));
    if (!bytes) return MakeError(bytes.error());
    auto* copy = static_cast<char*>(std::malloc(bytes->size() + 1));
    if (copy == nullptr) throw std::bad_alloc();
    std::memcpy(copy, bytes->data(), bytes->size());
    copy[bytes->size()] = '\0';
    *text = copy;
    if (length != nullptr) *length = bytes->size();
    return nullptr;
  });
}

void kvrt_string_free(char* text) { std::free(text); }

}  // extern "C"
