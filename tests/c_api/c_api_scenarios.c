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

/* Keeps each token's raw bytes (kvrt_model_token_bytes), as run.c prints them,
 * rather than the streamed text, which holds incomplete characters back. */
static int OnToken(uint32_t token, const char* streamed, size_t streamed_length, void* user_data) {
  (void)streamed;
  (void)streamed_length;
  TextSink* sink = (TextSink*)user_data;
  const char* bytes = NULL;
  size_t length = 0;
  const int64_t previous = sink->previous;
  sink->previous = token;
  if (token == sink->eos) return 0;
  kvrt_error* error = kvrt_model_token_bytes(sink->model, previous, token, &bytes, &length);
  if (error != NULL) {
    kvrt_error_free(error);
    sink->failed = 1;
    return 0;
  }
  if (sink->length + length + 1 > sink->capacity) {
    sink->failed = 1;
    return 0;
  }
  memcpy(sink->text + sink->length, bytes, length);
  sink->length += length;
  sink->text[sink->length] = '\0';
  return 0;
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

/* CApiWeightsLogits, with kvrt_model_prepare_weights first when `prepare`. */
static int WeightsLogits(const char* model_path, const uint32_t* tokens, size_t count, int backend,
                         int weights, double* logits, size_t vocabulary, int prepare) {
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
  kvrt_error* error = prepare ? kvrt_model_prepare_weights(model, &engine) : NULL;
  if (error == NULL) error = kvrt_session_bind(cache, model, &engine, &session);
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

int CApiWeightsLogits(const char* model_path, const uint32_t* tokens, size_t count, int backend,
                      int weights, double* logits, size_t vocabulary) {
  return WeightsLogits(model_path, tokens, count, backend, weights, logits, vocabulary, 0);
}

int CApiPreparedWeightsLogits(const char* model_path, const uint32_t* tokens, size_t count,
                              int backend, int weights, double* logits, size_t vocabulary) {
  return WeightsLogits(model_path, tokens, count, backend, weights, logits, vocabulary, 1);
}

/* The code of `error` (freed), KVRT_ERR_NONE for success. */
static int CodeOf(kvrt_error* error) {
  const int code = kvrt_error_code(error);
  kvrt_error_free(error);
  return code;
}

static int SameRow(const double* a, const double* b, size_t vocabulary) {
  return memcmp(a, b, vocabulary * sizeof(double)) == 0;
}

int CApiSlots(const char* model_path, const uint32_t* tokens, size_t count, size_t vocabulary) {
  if (count < 7) return 100;
  kvrt_model* model = NULL;
  CHECK(kvrt_model_load(model_path, &model) == NULL, 1);
  kvrt_engine_options engine = {KVRT_BACKEND_FAST, KVRT_PRECISION_F32, 1, NULL};
  /* Solo: one slot, one token per step; solo[p] = the logits after position p. */
  double* solo = (double*)malloc(count * vocabulary * sizeof(double));
  CHECK(solo != NULL, 2);
  kvrt_cache* one = NULL;
  kvrt_session* alone = NULL;
  CHECK(kvrt_cache_create(model, 0, KVRT_PRECISION_F32, &one) == NULL, 3);
  CHECK(kvrt_session_bind(one, model, &engine, &alone) == NULL, 4);
  for (size_t p = 0; p < count; ++p) {
    const double* row = NULL;
    CHECK((p == 0 ? kvrt_session_prefill(alone, tokens, 1, &row)
                  : kvrt_session_decode(alone, tokens[p], &row)) == NULL,
          5);
    memcpy(solo + p * vocabulary, row, vocabulary * sizeof(double));
  }
  kvrt_session_free(alone);
  kvrt_cache_free(one);

  kvrt_cache* cache = NULL;
  kvrt_session* session = NULL;
  CHECK(kvrt_cache_create_slots(model, 3, 0, KVRT_PRECISION_F32, &cache) == NULL, 6);
  CHECK(kvrt_cache_slots(cache) == 3, 7);
  CHECK(kvrt_session_bind(cache, model, &engine, &session) == NULL, 8);
  CHECK(kvrt_session_max_step_rows(session) >= 3 && kvrt_session_max_run_rows(session) >= 1, 9);
  const double* logits = NULL;
  /* Slot 2 starts a prompt; then slot 0 prefills all but one token while slot 2
   * finishes its prompt; then both decode. Every run matches the solo run. */
  kvrt_slot_run first[1] = {{2, tokens, 3, KVRT_RUN_PREFILL, 0}};
  CHECK(kvrt_session_step(session, first, 1, &logits) == NULL, 10);
  kvrt_slot_run second[2] = {{0, tokens, count - 1, KVRT_RUN_PREFILL, 1},
                             {2, tokens + 3, 2, KVRT_RUN_PREFILL, 1}};
  CHECK(kvrt_session_step(session, second, 2, &logits) == NULL, 11);
  CHECK(SameRow(logits, solo + (count - 2) * vocabulary, vocabulary), 12);
  CHECK(SameRow(logits + vocabulary, solo + 4 * vocabulary, vocabulary), 13);
  kvrt_slot_run third[2] = {{2, tokens + 5, 1, KVRT_RUN_DECODE, 1},
                            {0, tokens + count - 1, 1, KVRT_RUN_DECODE, 1}};
  CHECK(kvrt_session_step(session, third, 2, &logits) == NULL, 14);
  CHECK(SameRow(logits, solo + 5 * vocabulary, vocabulary), 15);
  CHECK(SameRow(logits + vocabulary, solo + (count - 1) * vocabulary, vocabulary), 16);
  CHECK(kvrt_cache_slot_len(cache, 0) == count && kvrt_cache_slot_len(cache, 2) == 6, 17);
  /* Fork slot 0 into slot 1, rewind it to 4 rows and decode token 4 again. */
  CHECK(kvrt_session_fork_slot(session, 0, 1) == NULL, 18);
  CHECK(kvrt_session_truncate_slot(session, 1, 4) == NULL, 19);
  kvrt_slot_run fourth[1] = {{1, tokens + 4, 1, KVRT_RUN_DECODE, 1}};
  CHECK(kvrt_session_step(session, fourth, 1, &logits) == NULL, 20);
  CHECK(SameRow(logits, solo + 4 * vocabulary, vocabulary), 21);
  /* Typed errors; none changes a slot. */
  kvrt_slot_run twice[2] = {{2, tokens, 1, KVRT_RUN_DECODE, 1}, {2, tokens, 1, KVRT_RUN_DECODE, 1}};
  CHECK(CodeOf(kvrt_session_step(session, twice, 2, &logits)) == KVRT_ERR_DUPLICATE_SLOT, 22);
  kvrt_slot_run outside[1] = {{7, tokens, 1, KVRT_RUN_DECODE, 1}};
  CHECK(CodeOf(kvrt_session_step(session, outside, 1, &logits)) == KVRT_ERR_SLOT_OUT_OF_RANGE, 23);
  CHECK(CodeOf(kvrt_session_step(session, NULL, 0, &logits)) == KVRT_ERR_EMPTY_STEP, 24);
  CHECK(CodeOf(kvrt_session_fork_slot(session, 1, 1)) == KVRT_ERR_FORK_ONTO_ITSELF, 25);
  CHECK(CodeOf(kvrt_session_truncate_slot(session, 0, count + 1)) == KVRT_ERR_TRUNCATE_BEYOND_LENGTH, 26);
  CHECK(CodeOf(kvrt_session_reset_slot(session, 3)) == KVRT_ERR_SLOT_OUT_OF_RANGE, 27);
  kvrt_slot_run early[1] = {{2, tokens, 1, KVRT_RUN_PREFILL, 1}};
  CHECK(CodeOf(kvrt_session_step(session, early, 1, &logits)) == KVRT_ERR_SLOT_REQUEST, 28);
  CHECK(kvrt_cache_slot_len(cache, 0) == count && kvrt_cache_slot_len(cache, 1) == 5 &&
            kvrt_cache_slot_len(cache, 2) == 6,
        29);
  CHECK(kvrt_session_reset_slot(session, 0) == NULL && kvrt_cache_slot_len(cache, 0) == 0, 30);
  kvrt_session_free(session);
  kvrt_cache_free(cache);
  kvrt_model_free(model);
  free(solo);
  return 0;
}
