/* C11 drivers of the C API's sampler set and generation controls. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "c_api_scenarios.h"
#include "kvrt/kvrt.h"

#define CHECK(condition, number) \
  do {                           \
    if (!(condition)) return (number); \
  } while (0)

/* The sampler set both sides of CApiSamplerLoop use. */
static const kvrt_logit_bias kBias[] = {{13, -2.0}, {29, 0.75}};

static kvrt_sampler_params LoopParams(uint64_t seed) {
  kvrt_sampler_params params = kvrt_sampler_params_default();
  params.temperature = 0.9;
  params.top_k = 60;
  params.top_p = 0.95;
  params.min_p = 0.02;
  params.repeat_penalty = 1.15;
  params.presence_penalty = 0.2;
  params.frequency_penalty = 0.1;
  params.repeat_last_n = 16;
  params.logit_bias = kBias;
  params.logit_bias_count = 2;
  params.seed = seed;
  return params;
}

static int LoadWithTokenizer(const char* model_path, const char* tokenizer_path, kvrt_model** model) {
  CHECK(kvrt_model_load(model_path, model) == NULL, 1);
  CHECK(kvrt_model_load_tokenizer(*model, tokenizer_path) == NULL, 2);
  return 0;
}

int CApiSamplerLoop(const char* model_path, const char* tokenizer_path, uint32_t* tokens, size_t capacity,
                    size_t* count) {
  kvrt_model* model = NULL;
  CHECK(LoadWithTokenizer(model_path, tokenizer_path, &model) == 0, 1);
  kvrt_model_info info;
  kvrt_model_get_info(model, &info);
  uint32_t* prompt = NULL;
  size_t prompt_count = 0;
  CHECK(kvrt_model_encode_prompt(model, "Once upon a time", &prompt, &prompt_count) == NULL, 2);
  kvrt_engine_options engine = kvrt_engine_options_default();
  engine.threads = 1;

  /* The library's loop with the sampler set. */
  const kvrt_sampler_params params = LoopParams(1234);
  kvrt_generation_options options = kvrt_generation_options_default();
  options.temperature = params.temperature;
  options.top_k = params.top_k;
  options.top_p = params.top_p;
  options.min_p = params.min_p;
  options.repeat_penalty = params.repeat_penalty;
  options.presence_penalty = params.presence_penalty;
  options.frequency_penalty = params.frequency_penalty;
  options.repeat_last_n = params.repeat_last_n;
  options.logit_bias = params.logit_bias;
  options.logit_bias_count = params.logit_bias_count;
  options.seed = params.seed;
  options.max_new_tokens = capacity;
  kvrt_generation* generation = NULL;
  CHECK(kvrt_generate(model, prompt, prompt_count, &options, &engine, NULL, NULL, &generation) == NULL, 3);
  const size_t generated = kvrt_generation_count(generation);
  CHECK(generated == capacity, 4);
  memcpy(tokens, kvrt_generation_tokens(generation), generated * sizeof(uint32_t));
  *count = generated;
  kvrt_generation_free(generation);

  /* The host's own loop: a session, a sampler that has seen the prompt, and one
   * sample, accept and decode per token. */
  kvrt_cache* cache = NULL;
  CHECK(kvrt_cache_create(model, 0, KVRT_PRECISION_F32, &cache) == NULL, 5);
  kvrt_session* session = NULL;
  CHECK(kvrt_session_bind(cache, model, &engine, &session) == NULL, 6);
  kvrt_sampler* sampler = NULL;
  CHECK(kvrt_sampler_create(&params, info.vocabulary_size, &sampler) == NULL, 7);
  for (size_t i = 0; i < prompt_count; ++i) CHECK(kvrt_sampler_accept(sampler, prompt[i]) == NULL, 8);
  const double* logits = NULL;
  CHECK(kvrt_session_prefill(session, prompt, prompt_count, &logits) == NULL, 9);
  for (size_t i = 0; i < generated; ++i) {
    uint32_t token = 0;
    CHECK(kvrt_sampler_sample(sampler, logits, info.vocabulary_size, &token) == NULL, 10);
    CHECK(token == tokens[i], 11);
    CHECK(kvrt_sampler_accept(sampler, token) == NULL, 12);
    if (i + 1 < generated) CHECK(kvrt_session_decode(session, token, &logits) == NULL, 13);
  }
  /* Reset: the same first token again from the same logits. */
  kvrt_session_reset(session);
  kvrt_sampler_reset(sampler);
  for (size_t i = 0; i < prompt_count; ++i) CHECK(kvrt_sampler_accept(sampler, prompt[i]) == NULL, 14);
  const float* logits_f32 = NULL;
  CHECK(kvrt_session_prefill_f32(session, prompt, prompt_count, &logits_f32) == NULL, 15);
  uint32_t again = 0;
  CHECK(kvrt_sampler_sample_f32(sampler, logits_f32, info.vocabulary_size, &again) == NULL, 16);
  CHECK(again == tokens[0], 17);
  /* Typed errors, and the sampler unchanged by them. */
  kvrt_error* error = kvrt_sampler_accept(sampler, (uint32_t)info.vocabulary_size);
  CHECK(kvrt_error_code(error) == KVRT_ERR_TOKEN_ID_OUT_OF_BOUNDS, 18);
  kvrt_error_free(error);
  error = kvrt_sampler_sample(sampler, logits, info.vocabulary_size - 1, &again);
  CHECK(kvrt_error_code(error) == KVRT_ERR_LOGIT_COUNT_MISMATCH, 19);
  kvrt_error_free(error);
  kvrt_sampler_params bad = LoopParams(0);
  bad.top_p = 1.5;
  kvrt_sampler* refused = NULL;
  error = kvrt_sampler_create(&bad, info.vocabulary_size, &refused);
  CHECK(kvrt_error_code(error) == KVRT_ERR_INVALID_SAMPLER_SETTING && refused == NULL, 20);
  kvrt_error_free(error);
  /* An initializer that names only the temperature: every other sampler off. */
  const kvrt_sampler_params plain = {.temperature = 0.0};
  CHECK(kvrt_sampler_create(&plain, info.vocabulary_size, &refused) == NULL, 21);
  kvrt_sampler_free(refused);

  kvrt_sampler_free(sampler);
  kvrt_session_free(session);
  kvrt_cache_free(cache);
  kvrt_tokens_free(prompt);
  kvrt_model_free(model);
  return 0;
}

typedef struct {
  size_t tokens;
  size_t cancel_after;
  char text[4096];
  size_t length;
} Stream;

static int CollectAndCancel(uint32_t token, const char* text, size_t length, void* user_data) {
  (void)token;
  Stream* stream = (Stream*)user_data;
  if (stream->length + length < sizeof stream->text) {
    memcpy(stream->text + stream->length, text, length);
    stream->length += length;
  }
  return ++stream->tokens == stream->cancel_after;
}

int CApiCancelAndStop(const char* model_path) {
  kvrt_model* model = NULL;
  CHECK(kvrt_model_load(model_path, &model) == NULL, 1);
  uint32_t* prompt = NULL;
  size_t prompt_count = 0;
  CHECK(kvrt_model_encode_prompt(model, "At dawn", &prompt, &prompt_count) == NULL, 2);
  kvrt_engine_options engine = kvrt_engine_options_default();
  engine.threads = 1;

  /* Cancelled after five tokens: five tokens, stop "cancelled", and the text
   * streamed is the start of the generation's text. */
  kvrt_generation_options options = kvrt_generation_options_default();
  options.max_new_tokens = 40;
  Stream stream = {0, 5, {0}, 0};
  kvrt_generation* generation = NULL;
  CHECK(kvrt_generate(model, prompt, prompt_count, &options, &engine, CollectAndCancel, &stream, &generation) == NULL,
        3);
  CHECK(kvrt_generation_count(generation) == 5 && stream.tokens == 5, 4);
  CHECK(strcmp(kvrt_generation_stop(generation), "cancelled") == 0, 5);
  size_t length = 0;
  const char* text = kvrt_generation_text(generation, &length);
  CHECK(text != NULL && length >= stream.length && memcmp(text, stream.text, stream.length) == 0, 6);
  CHECK(strlen(text) == length, 7);
  kvrt_generation_free(generation);

  /* The uncancelled run's text, then a stop string from its middle: the text
   * ends just before it and nothing of it is streamed. */
  Stream whole = {0, 0, {0}, 0};
  CHECK(kvrt_generate(model, prompt, prompt_count, &options, &engine, CollectAndCancel, &whole, &generation) == NULL, 8);
  const char* whole_text = kvrt_generation_text(generation, &length);
  CHECK(whole_text != NULL && length > 12 && length < sizeof whole.text, 9);
  char full[sizeof whole.text];
  memcpy(full, whole_text, length + 1);
  char stop[5];
  memcpy(stop, full + 8, 4);
  stop[4] = '\0';
  const size_t before = (size_t)(strstr(full, stop) - full);
  kvrt_generation_free(generation);
  const char* stops[] = {"no such text anywhere", stop};
  options.stop = stops;
  options.stop_count = 2;
  options.logprobs = 1;
  options.top_logprobs = 3;
  Stream cut = {0, 0, {0}, 0};
  CHECK(kvrt_generate(model, prompt, prompt_count, &options, &engine, CollectAndCancel, &cut, &generation) == NULL, 10);
  CHECK(strcmp(kvrt_generation_stop(generation), "stop-string") == 0, 11);
  text = kvrt_generation_text(generation, &length);
  CHECK(text != NULL && length == before && memcmp(text, full, before) == 0, 12);
  CHECK(cut.length == before && memcmp(cut.text, full, before) == 0, 13);
  /* Log-probabilities: the greedy token is the most likely alternative. */
  for (size_t step = 0; step < kvrt_generation_count(generation); ++step) {
    size_t alternatives = 0;
    const kvrt_token_logprob* top = kvrt_generation_top_logprobs(generation, step, &alternatives);
    CHECK(top != NULL && alternatives == 3, 14);
    CHECK(top[0].token == kvrt_generation_tokens(generation)[step], 15);
    CHECK(top[0].logprob == kvrt_generation_logprob(generation, step), 16);
    CHECK(top[0].logprob <= 0.0 && top[1].logprob <= top[0].logprob && top[2].logprob <= top[1].logprob, 17);
  }
  size_t none = 7;
  CHECK(kvrt_generation_top_logprobs(generation, kvrt_generation_count(generation), &none) == NULL && none == 0, 18);
  CHECK(isnan(kvrt_generation_logprob(generation, kvrt_generation_count(generation))), 19);
  kvrt_generation_free(generation);

  /* Bad controls are typed errors. */
  const char* empty[] = {""};
  options.stop = empty;
  options.stop_count = 1;
  kvrt_error* error = kvrt_generate(model, prompt, prompt_count, &options, &engine, NULL, NULL, &generation);
  CHECK(kvrt_error_code(error) == KVRT_ERR_INVALID_STOP_STRING, 20);
  kvrt_error_free(error);
  options.stop_count = 0;
  options.ctx_size = 100000;
  error = kvrt_generate(model, prompt, prompt_count, &options, &engine, NULL, NULL, &generation);
  CHECK(kvrt_error_code(error) == KVRT_ERR_CAPACITY_EXCEEDS_POSITIONS, 21);
  kvrt_error_free(error);
  options.ctx_size = prompt_count + 2;  /* a context of two more tokens: the third ends it */
  CHECK(kvrt_generate(model, prompt, prompt_count, &options, &engine, NULL, NULL, &generation) == NULL, 22);
  CHECK(kvrt_generation_count(generation) == 3 && strcmp(kvrt_generation_stop(generation), "context-limit") == 0, 23);
  kvrt_generation_free(generation);

  kvrt_tokens_free(prompt);
  kvrt_model_free(model);
  return 0;
}
