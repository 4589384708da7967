/* kvrt C API: load a model (LLMCP35, GGUF or llama2.c), bind KV caches to it, prefill,
 * decode, reset and generate — from C or any language with a C FFI.
 *
 * Conventions
 *   - Every object is an opaque handle created by a kvrt_*_create / _load / _bind
 *     call and released by its kvrt_*_free (which accepts NULL).
 *   - A fallible call returns NULL on success, or a kvrt_error the caller frees
 *     with kvrt_error_free. kvrt_error_code() is the value of kvrt::ErrorCode
 *     (kvrt/error.h) and kvrt_error_name() its variant name ("Truncated",
 *     "PromptTooLong", ...); outputs are written only on success.
 *   - No C++ exception crosses this interface.
 *   - Handles are not synchronized: use one handle from one thread at a time.
 *     A model may be shared by any number of caches, sessions and generations.
 *   - A session keeps its cache and model alive: they may be freed in any order.
 */
#ifndef KVRT_KVRT_H_
#define KVRT_KVRT_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct kvrt_error kvrt_error;
typedef struct kvrt_model kvrt_model;
typedef struct kvrt_cache kvrt_cache;
typedef struct kvrt_session kvrt_session;
typedef struct kvrt_generation kvrt_generation;

/* ---- Errors ---------------------------------------------------------------- */

int kvrt_error_code(const kvrt_error* error);
const char* kvrt_error_name(const kvrt_error* error);
const char* kvrt_error_message(const kvrt_error* error);
void kvrt_error_free(kvrt_error* error);
/* The variant name of any error code ("Unknown" outside the enum). */
const char* kvrt_error_code_name(int code);

/* ---- Engines --------------------------------------------------------------- */

typedef enum kvrt_backend {
  KVRT_BACKEND_REFERENCE = 0, /* scalar f64, bit-exact with the reference */
  KVRT_BACKEND_FAST = 1       /* SIMD kernels and threads, f32 or f64 */
} kvrt_backend;

typedef enum kvrt_precision { KVRT_PRECISION_F64 = 0, KVRT_PRECISION_F32 = 1 } kvrt_precision;

typedef struct kvrt_engine_options {
  kvrt_backend backend;
  kvrt_precision precision; /* the reference backend needs KVRT_PRECISION_F64 */
  size_t threads;           /* fast backend: 0 = every core, 1 = the calling thread */
} kvrt_engine_options;

/* Fast backend, f32, every core. */
kvrt_engine_options kvrt_engine_options_default(void);

/* ---- Models and their tokenizer --------------------------------------------- */

/* Reads an LLMCP35 checkpoint (with its tokenizer), a GGUF (architecture llama,
 * with the tokenizer in its metadata) or a llama2.c model.bin (no tokenizer until
 * kvrt_model_load_tokenizer), decided by the file's content (kvrt::LoadModel). */
kvrt_error* kvrt_model_load(const char* path, kvrt_model** out);
/* Attaches a llama2.c tokenizer.bin (VocabularyMismatch when its size differs). */
kvrt_error* kvrt_model_load_tokenizer(kvrt_model* model, const char* path);
void kvrt_model_free(kvrt_model* model);

typedef struct kvrt_model_info {
  size_t vocabulary_size;
  size_t model_width;
  size_t heads;
  size_t kv_heads;
  size_t feed_forward_width;
  size_t layers;
  size_t max_positions;
  int tied_output;
  const char* format;         /* "llmcp35", "gguf" or "llama2c" */
  const char* tokenizer_kind; /* "literal-u32", "byte-bpe", "llama2c", "sentencepiece", "gpt2-bpe" ("none") */
  int64_t bos_id;             /* -1 when the tokenizer has none */
  int64_t eos_id;
} kvrt_model_info;
void kvrt_model_get_info(const kvrt_model* model, kvrt_model_info* out);

/* The ids a generation prompt starts from (llama2.c: BOS + text, as run.c;
 * byte-BPE: the content ids). Free *ids with kvrt_tokens_free. */
kvrt_error* kvrt_model_encode_prompt(const kvrt_model* model, const char* text, uint32_t** ids,
                                     size_t* count);
void kvrt_tokens_free(uint32_t* ids);
/* The bytes printed for `token` after `previous` (-1: none); llama2.c drops a
 * leading space right after BOS. *bytes stays valid while the model lives and is
 * not NUL-terminated. */
kvrt_error* kvrt_model_token_bytes(const kvrt_model* model, int64_t previous, uint32_t token,
                                   const char** bytes, size_t* length);
/* The concatenated bytes of `ids` (NUL-terminated; *length excludes the NUL).
 * Free *text with kvrt_string_free. */
kvrt_error* kvrt_model_decode(const kvrt_model* model, const uint32_t* ids, size_t count, char** text,
                              size_t* length);
void kvrt_string_free(char* text);

/* ---- Caches and sessions ---------------------------------------------------- */

/* A KV cache for one sequence of up to `capacity` tokens (0: the model's
 * max_positions), storing keys and values in `precision`. */
kvrt_error* kvrt_cache_create(const kvrt_model* model, size_t capacity, kvrt_precision precision,
                              kvrt_cache** out);
void kvrt_cache_free(kvrt_cache* cache);
size_t kvrt_cache_len(const kvrt_cache* cache);
size_t kvrt_cache_capacity(const kvrt_cache* cache);
size_t kvrt_cache_bytes(const kvrt_cache* cache);

/* Binds `cache` to `model` with an engine (NULL: kvrt_engine_options_default()).
 * A cache serves one session at a time (CacheAlreadyBound). */
kvrt_error* kvrt_session_bind(kvrt_cache* cache, const kvrt_model* model,
                              const kvrt_engine_options* engine, kvrt_session** out);
/* Forwards the prompt into the empty cache; *logits (vocabulary_size values) is
 * the last position's and stays valid until the next call on the session. A
 * failed call leaves the session as it was (a numeric failure during the forward
 * empties it). */
kvrt_error* kvrt_session_prefill(kvrt_session* session, const uint32_t* tokens, size_t count,
                                 const double** logits);
/* Forwards one token at the next position. */
kvrt_error* kvrt_session_decode(kvrt_session* session, uint32_t token, const double** logits);
/* Empties the cache; the binding stays. */
void kvrt_session_reset(kvrt_session* session);
void kvrt_session_free(kvrt_session* session);

/* ---- Generation -------------------------------------------------------------- */

typedef struct kvrt_generation_options {
  double temperature;    /* 0: greedy; > 0: temperature sampling over top_k */
  size_t top_k;          /* used when temperature > 0 */
  uint64_t seed;         /* SplitMix64 state of the sampler */
  int has_eos;           /* stop after generating eos_token */
  uint32_t eos_token;
  size_t max_new_tokens; /* token budget */
} kvrt_generation_options;

/* Greedy, 64 new tokens, no EOS, seed 0. */
kvrt_generation_options kvrt_generation_options_default(void);

/* Called with every token as soon as it is sampled. */
typedef void (*kvrt_token_callback)(uint32_t token, void* user_data);

/* The cached loop: prefill once, then sample and decode until EOS, the budget or
 * the context is exhausted. `engine` NULL: the defaults; `on_token` may be NULL. */
kvrt_error* kvrt_generate(const kvrt_model* model, const uint32_t* prompt, size_t count,
                          const kvrt_generation_options* options, const kvrt_engine_options* engine,
                          kvrt_token_callback on_token, void* user_data, kvrt_generation** out);
size_t kvrt_generation_count(const kvrt_generation* generation);
/* The generated ids (a final EOS included). */
const uint32_t* kvrt_generation_tokens(const kvrt_generation* generation);
/* "eos", "token-limit" or "context-limit". */
const char* kvrt_generation_stop(const kvrt_generation* generation);
void kvrt_generation_free(kvrt_generation* generation);

#ifdef __cplusplus
}
#endif

#endif /* KVRT_KVRT_H_ */
