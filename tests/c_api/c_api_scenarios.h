/* Scenarios written in C11 against kvrt/kvrt.h (c_api_scenarios.c, compiled as
 * C); c_api_test.cc runs them under GoogleTest. Each returns 0 on success or the
 * number of the first failed check. */
#ifndef KVRT_TESTS_C_API_SCENARIOS_H_
#define KVRT_TESTS_C_API_SCENARIOS_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Loads a llama2.c model and tokenizer, encodes `prompt`, generates greedily
 * with the engine given by backend/precision and streams the text into `text`
 * (NUL-terminated, at most text_capacity bytes). Writes the full token sequence
 * (prompt, then generated) to `tokens`. */
int CApiGenerate(const char* model_path, const char* tokenizer_path, const char* prompt, int backend,
                 int precision, size_t max_new_tokens, uint32_t* tokens, size_t token_capacity,
                 size_t* token_count, char* text, size_t text_capacity);

/* Prefill and decode through a session, one token per step, writing each step's
 * logits (as float) to `logits` (steps × vocabulary); then checks reset, the
 * cache length and that the session outlives a freed cache and model. */
int CApiStepLogits(const char* model_path, const uint32_t* tokens, size_t count, int backend, int precision,
                   float* logits, size_t vocabulary);

/* Error reporting: a missing file, a truncated one, NULL arguments, an
 * impossible engine and out-of-order session calls. The codes are written to
 * `codes` (at most 8) so the C++ side can compare them with kvrt::ErrorCode. */
int CApiErrors(const char* model_path, const char* scratch_path, int* codes, size_t* code_count);

/* The last prefill logits of `tokens` with weight format `weights` (a
 * kvrt_weights value) on the backend (f32 for fast, f64 for reference). Returns
 * -1 when the bind refused the format as InvalidArgument. */
int CApiWeightsLogits(const char* model_path, const uint32_t* tokens, size_t count, int backend,
                      int weights, double* logits, size_t vocabulary);
/* The same after kvrt_model_prepare_weights with the same options (-1 when that
 * refused the format as InvalidArgument). */
int CApiPreparedWeightsLogits(const char* model_path, const uint32_t* tokens, size_t count,
                              int backend, int weights, double* logits, size_t vocabulary);
/* Sequence slots: a step over three slots with a prompt in chunks, prefills
 * beside decodes, fork, truncate and reset, every run's logits bit-identical to
 * a one-slot session's, and the slots' typed errors. */
int CApiSlots(const char* model_path, const uint32_t* tokens, size_t count, size_t vocabulary);

/* The sampler set (c_api_sampler_scenarios.c), on the llama2.c model and
 * tokenizer: kvrt_generate with every sampler on, then the same generation as a
 * loop the host writes (kvrt_session_* and kvrt_sampler_*), which must pick the
 * same `capacity` tokens (written to `tokens`); reset, the f32 form and the
 * sampler's typed errors. */
int CApiSamplerLoop(const char* model_path, const char* tokenizer_path, uint32_t* tokens, size_t capacity,
                    size_t* count);
/* On a model that carries its tokenizer and writes UTF-8 text: a callback that
 * cancels after five tokens, a stop string with its streamed and returned text,
 * log-probabilities, and the controls' typed errors. */
int CApiCancelAndStop(const char* model_path);

#ifdef __cplusplus
}
#endif

#endif
