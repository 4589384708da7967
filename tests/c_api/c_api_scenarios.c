/* C11 drivers of the C API: nothing here is C++. */
#include "c_api_scenarios.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kvrt/kvrt.h"

#define CHECK(condition, number) \
  do {                           \
    if (!(condition)) return (number); \
  } while (0)

/* Collects streamed text: each token's bytes after the previous token. */
typedef struct {
  const kvrt_model* model;
  int64_t previous;
  char* text;
  size_t capacity;
  size_t length;
  uint32_t eos;
  int failed;
} TextSink;

static void OnToken(uint32_t token, void* user_data) {
  TextSink* sink = (TextSink*)user_data;
  const char* bytes = NULL;
  size_t length = 0;
  const int64_t previous = sink->previous;
  sink->previous = token;
  if (token == sink->eos) return;
  kvrt_error* error = kvrt_model_token_bytes(sink->model, previous, token, &bytes, &length);
  if (error != NULL) {
    kvrt_error_free(error);
    sink->failed = 1;
    return;
  }
  if (sink->length + length + 1 > sink->capacity) {
    sink->failed = 1;
    return;
  }
  memcpy(sink->text + sink->length, bytes, length);
  sink->length += length;
  sink->text[sink->length] = '\0';
}

int CApiGenerate(const char* model_path, const char* tokenizer_path, const char* prompt, int backend,
                 int precision, size_t max_new_tokens, uint32_t* tokens, size_t token_capacity,
                 size_t* token_count, char* text, size_t text_capacity) {
  kvrt_model* model = NULL;
  CHECK(kvrt_model_load(model_path, &model) == NULL, 1);
  kvrt_model_info info;
  kvrt_model_get_info(model, &info);
  CHECK(strcmp(info.format, "llama2c") == 0, 2);
  CHECK(strcmp(info.tokenizer_kind, "none") == 0, 3);
  CHECK(kvrt_model_load_tokenizer(model, tokenizer_path) == NULL, 4);
  kvrt_model_get_info(model, &info);
  CHECK(strcmp(info.tokenizer_kind, "llama2c") == 0 && info.bos_id == 1 && info.eos_id == 2, 5);

  uint32_t* ids = NULL;
  size_t count = 0;
  CHECK(kvrt_model_encode_prompt(model, prompt, &ids, &count) == NULL, 6);
  CHECK(count > 0 && ids[0] == 1 && count <= token_capacity, 7);

  kvrt_engine_options engine = kvrt_engine_options_default();
  engine.backend = (kvrt_backend)backend;
  engine.precision = (kvrt_precision)precision;
  engine.threads = 2;
  kvrt_generation_options options = kvrt_generation_options_default();
  options.max_new_tokens = max_new_tokens;
  options.has_eos = 1;
  options.eos_token = (uint32_t)info.bos_id; /* run.c ends at BOS */
  TextSink sink = {model, ids[count - 1], text, text_capacity, 0, options.eos_token, 0};
  text[0] = '\0';
  kvrt_generation* generation = NULL;
  CHECK(kvrt_generate(model, ids, count, &options, &engine, OnToken, &sink, &generation) == NULL, 8);
  CHECK(!sink.failed, 9);
  const size_t generated = kvrt_generation_count(generation);
  CHECK(count + generated <= token_capacity, 10);
  memcpy(tokens, ids, count * sizeof(uint32_t));
  memcpy(tokens + count, kvrt_generation_tokens(generation), generated * sizeof(uint32_t));
  *token_count = count + generated;
  CHECK(strcmp(kvrt_generation_stop(generation), generated == max_new_tokens ? "token-limit" : "eos") == 0, 11);

  /* Decoding the generated ids gives the streamed text (no BOS precedes them). */
  char* decoded = NULL;
  size_t decoded_length = 0;
  CHECK(kvrt_model_decode(model, kvrt_generation_tokens(generation), generated, &decoded, &decoded_length) == NULL,
        12);
  CHECK(decoded_length == sink.length && memcmp(decoded, text, decoded_length) == 0, 13);
  kvrt_string_free(decoded);
  kvrt_generation_free(generation);
  kvrt_tokens_free(ids);
  kvrt_model_free(model);
  return 0;
}

int CApiStepLogits(const char* model_path, const uint32_t* tokens, size_t count, int backend, int precision,
                   float* logits, size_t vocabulary) {
  kvrt_model* model = NULL;
  CHECK(kvrt_model_load(model_path, &model) == NULL, 1);
  kvrt_cache* cache = NULL;
  CHECK(kvrt_cache_create(model, 0, (kvrt_precision)precision, &cache) == NULL, 2);
  CHECK(kvrt_cache_capacity(cache) == 64 && kvrt_cache_len(cache) == 0 && kvrt_cache_bytes(cache) > 0, 3);
  kvrt_engine_options engine = {(kvrt_backend)backend, (kvrt_precision)precision, 1, NULL,
                                KVRT_WEIGHTS_AS_STORED};
  kvrt_session* session = NULL;
  CHECK(kvrt_session_bind(cache, model, &engine, &session) == NULL, 4);
  /* The session keeps its cache and model alive. */
  kvrt_model_free(model);
  for (size_t step = 0; step < count; ++step) {
    const double* row = NULL;
    kvrt_error* error = step == 0 ? kvrt_session_prefill(session, tokens, 1, &row)
                                  : kvrt_session_decode(session, tokens[step], &row);
    CHECK(error == NULL, 5);
    for (size_t i = 0; i < vocabulary; ++i) logits[step * vocabulary + i] = (float)row[i];
  }
  CHECK(kvrt_cache_len(cache) == count, 6);
  kvrt_session_reset(session);
  CHECK(kvrt_cache_len(cache) == 0, 7);
  kvrt_cache_free(cache);
  const double* row = NULL;
  CHECK(kvrt_session_prefill(session, tokens, count, &row) == NULL && row != NULL, 8);
  kvrt_session_free(session);
  return 0;
}

int CApiErrors(const char* model_path, const char* scratch_path, int* codes, size_t* code_count) {
  size_t n = 0;
  kvrt_model* model = NULL;
  kvrt_error* error = kvrt_model_load("/nonexistent/model.bin", &model);
  CHECK(error != NULL && model == NULL && strcmp(kvrt_error_name(error), "Io") == 0, 1);
  CHECK(strstr(kvrt_error_message(error), "/nonexistent/model.bin") != NULL, 2);
  codes[n++] = kvrt_error_code(error);
  kvrt_error_free(error);

  /* The first 100 bytes of a real model. */
  FILE* in = fopen(model_path, "rb");
  CHECK(in != NULL, 3);
  unsigned char head[100];
  CHECK(fread(head, 1, sizeof head, in) == sizeof head, 4);
  fclose(in);
  FILE* out = fopen(scratch_path, "wb");
  CHECK(out != NULL && fwrite(head, 1, sizeof head, out) == sizeof head, 5);
  fclose(out);
  error = kvrt_model_load(scratch_path, &model);
  CHECK(error != NULL && strcmp(kvrt_error_name(error), "Truncated") == 0, 6);
  codes[n++] = kvrt_error_code(error);
  kvrt_error_free(error);

  error = kvrt_model_load(NULL, &model);
  CHECK(error != NULL && strcmp(kvrt_error_name(error), "InvalidArgument") == 0, 7);
  codes[n++] = kvrt_error_code(error);
  kvrt_error_free(error);

  CHECK(kvrt_model_load(model_path, &model) == NULL, 8);
  kvrt_cache* cache = NULL;
  CHECK(kvrt_cache_create(model, 0, KVRT_PRECISION_F32, &cache) == NULL, 9);
  kvrt_engine_options reference_f32 = {KVRT_BACKEND_REFERENCE, KVRT_PRECISION_F32, 1, NULL,
                                       KVRT_WEIGHTS_AS_STORED};
  kvrt_session* session = NULL;
  error = kvrt_session_bind(cache, model, &reference_f32, &session);
  CHECK(error != NULL && session == NULL && strcmp(kvrt_error_name(error), "UnsupportedBackend") == 0, 10);
  codes[n++] = kvrt_error_code(error);
  kvrt_error_free(error);

  CHECK(kvrt_session_bind(cache, model, NULL, &session) == NULL, 11);
  kvrt_session* second = NULL;
  error = kvrt_session_bind(cache, model, NULL, &second);
  CHECK(error != NULL && strcmp(kvrt_error_name(error), "CacheAlreadyBound") == 0, 12);
  codes[n++] = kvrt_error_code(error);
  kvrt_error_free(error);

  const double* logits = NULL;
  error = kvrt_session_decode(session, 5, &logits);
  CHECK(error != NULL && logits == NULL && strcmp(kvrt_error_name(error), "DecodeRequiresPrefill") == 0, 13);
  codes[n++] = kvrt_error_code(error);
  kvrt_error_free(error);

  const uint32_t out_of_range = 512;
  error = kvrt_session_prefill(session, &out_of_range, 1, &logits);
  CHECK(error != NULL && strcmp(kvrt_error_name(error), "PromptTokenOutOfBounds") == 0, 14);
  codes[n++] = kvrt_error_code(error);
  kvrt_error_free(error);

  uint32_t* ids = NULL;
  size_t count = 0;
  error = kvrt_model_encode_prompt(model, "no tokenizer yet", &ids, &count);
  CHECK(error != NULL && ids == NULL, 15);
  codes[n++] = kvrt_error_code(error);
  kvrt_error_free(error);

  CHECK(strcmp(kvrt_error_code_name(-1), "Unknown") == 0, 16);
  kvrt_error_free(NULL);
  kvrt_session_free(session);
  kvrt_cache_free(cache);
  kvrt_model_free(model);
  *code_count = n;
  return 0;
}

int CApiWeightsLogits(const char* model_path, const uint32_t* tokens, size_t count, int backend,
                      int weights, double* logits, size_t vocabulary) {
  kvrt_model* model = NULL;
  CHECK(kvrt_model_load(model_path, &model) == NULL, 1);
  const kvrt_precision precision = backend == KVRT_BACKEND_REFERENCE ? KVRT_PRECISION_F64 : KVRT_PRECISION_F32;
  kvrt_cache* cache = NULL;
  CHECK(kvrt_cache_create(model, 0, precision, &cache) == NULL, 2);
  kvrt_engine_options engine = kvrt_engine_options_default();
  CHECK(engine.weights == KVRT_WEIGHTS_AS_STORED, 3);
  engine.backend = (kvrt_backend)backend;
  engine.precision = precision;
  engine.threads = 1;
  engine.weights = (kvrt_weights)weights;
  kvrt_session* session = NULL;
  kvrt_error* error = kvrt_session_bind(cache, model, &engine, &session);
  if (error != NULL) {
    /* An unknown format: refused as InvalidArgument, nothing bound. */
    const int refused = strcmp(kvrt_error_name(error), "InvalidArgument") == 0 && session == NULL;
    kvrt_error_free(error);
    kvrt_cache_free(cache);
    kvrt_model_free(model);
    return refused ? -1 : 4;
  }
  const double* row = NULL;
  CHECK(kvrt_session_prefill(session, tokens, count, &row) == NULL && row != NULL, 5);
  for (size_t i = 0; i < vocabulary; ++i) logits[i] = row[i];
  kvrt_session_free(session);
  kvrt_cache_free(cache);
  kvrt_model_free(model);
  return 0;
}
