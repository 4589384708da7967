/* kvrt C API: load a model (LLMCP35, GGUF or llama2.c), bind KV caches to it, prefill,
 * decode, reset and generate — from C or any language with a C FFI.
 *
 * Conventions
 *   - Every object is an opaque handle created by a kvrt_*_create / _load / _bind
 *     call and released by its kvrt_*_free (which accepts NULL).
 *   - A fallible call returns NULL on success, or a kvrt_error the caller frees
 *     with kvrt_error_free. kvrt_error_code() is a stable KVRT_ERR_* number
 *     and kvrt_error_name() its variant name ("Truncated", "PromptTooLong",
 *     ...); outputs are written only on success.
 *   - No C++ exception crosses this interface.
 *   - Handles are not synchronized: use one handle from one thread at a time.
 *     A model may be shared by any number of caches, sessions and generations.
 *     A session or a sampler notices a second call entering it while another
 *     call is inside (one atomic flag per handle): that call returns
 *     KVRT_ERR_CONCURRENT_USE and leaves the handle alone (kvrt_session_reset and
 *     kvrt_sampler_reset, which return nothing, do nothing then). This detects misuse; it is not a lock: callers that
 *     share a session between threads must serialize their calls themselves.
 *   - Freeing a handle twice, or using it after kvrt_*_free (including freeing a
 *     session while another thread is inside a call on it), is undefined
 *     behaviour, as for free(): the library cannot detect it.
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
typedef struct kvrt_pool kvrt_pool;
typedef struct kvrt_model kvrt_model;
typedef struct kvrt_cache kvrt_cache;
typedef struct kvrt_session kvrt_session;
typedef struct kvrt_generation kvrt_generation;
typedef struct kvrt_sampler kvrt_sampler;

/* ---- Version ---------------------------------------------------------------- */

/* "MAJOR.MINOR.PATCH" of the library linked in (static storage). */
const char* kvrt_version(void);

/* ---- Errors ---------------------------------------------------------------- */

/* Error codes: stable numbers. A value never changes meaning and is never reused;
 * a new C++ error variant gets the next free number at the end. (The C++ enum
 * kvrt::ErrorCode may be reordered freely: runtime/src/c_api/c_error_codes.cc maps
 * it to these by name, and a test checks that every variant has its own code.) */
typedef enum kvrt_error_code_value {
  KVRT_ERR_EMPTY_VOCABULARY = 0,
  KVRT_ERR_ZERO_MODEL_WIDTH = 1,
  KVRT_ERR_ZERO_HEAD_COUNT = 2,
  KVRT_ERR_MODEL_WIDTH_NOT_DIVISIBLE = 3,
  KVRT_ERR_ODD_HEAD_WIDTH = 4,
  KVRT_ERR_ZERO_FEED_FORWARD_WIDTH = 5,
  KVRT_ERR_ZERO_POSITION_CAPACITY = 6,
  KVRT_ERR_INVALID_ROPE_BASE = 7,
  KVRT_ERR_INVALID_RMS_EPSILON = 8,
  KVRT_ERR_ZERO_KEY_VALUE_HEADS = 9,
  KVRT_ERR_HEADS_NOT_DIVISIBLE_BY_KEY_VALUE_HEADS = 10,
  KVRT_ERR_NON_FINITE_TABLE_VALUE = 11,
  KVRT_ERR_SIZE_OVERFLOW = 12,
  KVRT_ERR_PARAMETER_COUNT_MISMATCH = 13,
  KVRT_ERR_PARAMETER_NAME_MISMATCH = 14,
  KVRT_ERR_PARAMETER_SHAPE_MISMATCH = 15,
  KVRT_ERR_EMBEDDING_VOCABULARY_MISMATCH = 16,
  KVRT_ERR_EMBEDDING_WIDTH_MISMATCH = 17,
  KVRT_ERR_BLOCK_MODEL_WIDTH_MISMATCH = 18,
  KVRT_ERR_BLOCK_FEED_FORWARD_WIDTH_MISMATCH = 19,
  KVRT_ERR_FINAL_NORM_WIDTH_MISMATCH = 20,
  KVRT_ERR_INVALID_NAME_CHARACTER = 21,
  KVRT_ERR_EMPTY_NAME_SEGMENT = 22,
  KVRT_ERR_NON_FINITE_LEAF = 23,
  KVRT_ERR_INITIALIZATION = 24,
  KVRT_ERR_AUTODIFF = 25,
  KVRT_ERR_TOKEN_RANK = 26,
  KVRT_ERR_EMPTY_BATCH = 27,
  KVRT_ERR_EMPTY_TOKENS = 28,
  KVRT_ERR_CONTEXT_LENGTH_EXCEEDED = 29,
  KVRT_ERR_TOKEN_COUNT_MISMATCH = 30,
  KVRT_ERR_TOKEN_ID_OUT_OF_BOUNDS = 31,
  KVRT_ERR_ZERO_ENERGY_ROW = 32,
  KVRT_ERR_NON_FINITE_ACTIVATION = 33,
  KVRT_ERR_EMBEDDING = 34,
  KVRT_ERR_BLOCK = 35,
  KVRT_ERR_IO = 36,
  KVRT_ERR_TRUNCATED = 37,
  KVRT_ERR_INVALID_MAGIC = 38,
  KVRT_ERR_UNSUPPORTED_VERSION = 39,
  KVRT_ERR_UNSUPPORTED_ENDIANNESS = 40,
  KVRT_ERR_FILE_EXTENT = 41,
  KVRT_ERR_CHECKSUM_MISMATCH = 42,
  KVRT_ERR_UNSUPPORTED_TOKENIZER_LAYOUT = 43,
  KVRT_ERR_UNSUPPORTED_RNG_ALGORITHM = 44,
  KVRT_ERR_UNKNOWN_TOKENIZER_KIND = 45,
  KVRT_ERR_ADAM_W = 46,
  KVRT_ERR_NON_CANONICAL = 47,
  KVRT_ERR_INVALID_UTF8 = 48,
  KVRT_ERR_UNKNOWN_TENSOR_ROLE = 49,
  KVRT_ERR_UNKNOWN_D_TYPE = 50,
  KVRT_ERR_LAYOUT = 51,
  KVRT_ERR_ALLOCATION = 52,
  KVRT_ERR_TOKENIZER = 53,
  KVRT_ERR_BPE = 54,
  KVRT_ERR_VOCABULARY_MISMATCH = 55,
  KVRT_ERR_MODEL = 56,
  KVRT_ERR_ADAM_W_STATE = 57,
  KVRT_ERR_STEP_MISMATCH = 58,
  KVRT_ERR_OPTIMIZER_NAMES = 59,
  KVRT_ERR_OPTIMIZER_SHAPE = 60,
  KVRT_ERR_INVALID_LEARNING_RATE = 61,
  KVRT_ERR_INVALID_BETA1 = 62,
  KVRT_ERR_INVALID_BETA2 = 63,
  KVRT_ERR_INVALID_EPSILON = 64,
  KVRT_ERR_INVALID_WEIGHT_DECAY = 65,
  KVRT_ERR_INVALID_DECAY_PRODUCT = 66,
  KVRT_ERR_EMPTY_GROUPED_PARAMETER_NAME = 67,
  KVRT_ERR_DUPLICATE_GROUPED_PARAMETER = 68,
  KVRT_ERR_EMPTY_PARAMETER_GROUPS = 69,
  KVRT_ERR_PARAMETER_IN_MULTIPLE_GROUPS = 70,
  KVRT_ERR_NON_FINITE_MOMENT = 71,
  KVRT_ERR_NEGATIVE_SECOND_MOMENT = 72,
  KVRT_ERR_INVALID_BETA_POWER = 73,
  KVRT_ERR_STATE_PRESENCE = 74,
  KVRT_ERR_DUPLICATE_PARAMETER_NAME = 75,
  KVRT_ERR_PARAMETER_GROUPS_MISMATCH = 76,
  KVRT_ERR_UNKNOWN_MERGE_OPERAND = 77,
  KVRT_ERR_DUPLICATE_MERGE_PAIR = 78,
  KVRT_ERR_CONTROL_TOKEN_IN_CONTENT = 79,
  KVRT_ERR_UNKNOWN_TOKEN = 80,
  KVRT_ERR_DOCUMENT_TOO_SHORT = 81,
  KVRT_ERR_EXPECTED_BOS = 82,
  KVRT_ERR_EXPECTED_EOS = 83,
  KVRT_ERR_INTERIOR_CONTROL_TOKEN = 84,
  KVRT_ERR_LAYOUT_OVERFLOW = 85,
  KVRT_ERR_ZERO_BATCH_SIZE = 86,
  KVRT_ERR_ZERO_CAPACITY = 87,
  KVRT_ERR_CAPACITY_EXCEEDS_POSITIONS = 88,
  KVRT_ERR_ELEMENT_COUNT_OVERFLOW = 89,
  KVRT_ERR_ALLOCATION_FAILED = 90,
  KVRT_ERR_FULL = 91,
  KVRT_ERR_KEY_SHAPE_MISMATCH = 92,
  KVRT_ERR_VALUE_SHAPE_MISMATCH = 93,
  KVRT_ERR_NON_FINITE_KEY = 94,
  KVRT_ERR_NON_FINITE_VALUE = 95,
  KVRT_ERR_CACHE_LAYER_MISMATCH = 96,
  KVRT_ERR_CACHE_LAYER_REVISION_MISMATCH = 97,
  KVRT_ERR_CACHE_MODEL_WIDTH_MISMATCH = 98,
  KVRT_ERR_CACHE_HEAD_COUNT_MISMATCH = 99,
  KVRT_ERR_CACHE_HEAD_WIDTH_MISMATCH = 100,
  KVRT_ERR_CACHE_ROPE_MISMATCH = 101,
  KVRT_ERR_PROBABILITY = 102,
  KVRT_ERR_QKV_PROJECTION = 103,
  KVRT_ERR_OUTPUT_PROJECTION = 104,
  KVRT_ERR_POSITIVE_INFINITY_LOGIT = 105,
  KVRT_ERR_LAYER_ALLOCATION_FAILED = 106,
  KVRT_ERR_PARAMETER_ALLOCATION_FAILED = 107,
  KVRT_ERR_LAYER_CACHE = 108,
  KVRT_ERR_MODEL_CONFIG_MISMATCH = 109,
  KVRT_ERR_MODEL_PARAMETER_COUNT_MISMATCH = 110,
  KVRT_ERR_MODEL_PARAMETER_MISMATCH = 111,
  KVRT_ERR_MODEL_PARAMETER_REVISION_MISMATCH = 112,
  KVRT_ERR_LAYER_COUNT_MISMATCH = 113,
  KVRT_ERR_LAYER_LENGTH_INVARIANT = 114,
  KVRT_ERR_LAYER_BATCH_SIZE_MISMATCH = 115,
  KVRT_ERR_LAYER_CAPACITY_MISMATCH = 116,
  KVRT_ERR_INCREMENTAL_ATTENTION = 117,
  KVRT_ERR_EMPTY_PROMPT = 118,
  KVRT_ERR_PREFILL_REQUIRES_EMPTY = 119,
  KVRT_ERR_PROMPT_TOO_LONG = 120,
  KVRT_ERR_PROMPT_TOKEN_OUT_OF_BOUNDS = 121,
  KVRT_ERR_DECODE_REQUIRES_PREFILL = 122,
  KVRT_ERR_DECODE_TOKEN_OUT_OF_BOUNDS = 123,
  KVRT_ERR_PREPARED_CACHE_CHANGED = 124,
  KVRT_ERR_WORK_OVERFLOW = 125,
  KVRT_ERR_ATTENTION_NORM = 126,
  KVRT_ERR_ATTENTION_RESIDUAL = 127,
  KVRT_ERR_FEED_FORWARD_NORM = 128,
  KVRT_ERR_FEED_FORWARD = 129,
  KVRT_ERR_FEED_FORWARD_RESIDUAL = 130,
  KVRT_ERR_FINAL_NORM = 131,
  KVRT_ERR_CACHE_ALREADY_BOUND = 132,
  KVRT_ERR_BATCH_SHAPE_MISMATCH = 133,
  KVRT_ERR_PARAMETER_VALUE_BORROWED = 134,
  KVRT_ERR_PARAMETER_REVISION_OVERFLOW = 135,
  KVRT_ERR_UNKNOWN_PARAMETER = 136,
  KVRT_ERR_NON_FINITE_PARAMETER = 137,
  KVRT_ERR_EMPTY_LOGITS = 138,
  KVRT_ERR_VOCABULARY_TOO_LARGE = 139,
  KVRT_ERR_NON_FINITE_LOGIT = 140,
  KVRT_ERR_INVALID_TEMPERATURE = 141,
  KVRT_ERR_INVALID_TOP_K = 142,
  KVRT_ERR_INVALID_PROBABILITY_SUM = 143,
  KVRT_ERR_EOS_TOKEN_OUT_OF_BOUNDS = 144,
  KVRT_ERR_SAMPLING = 145,
  KVRT_ERR_LOGIT_COUNT_MISMATCH = 146,
  KVRT_ERR_CACHE = 147,
  KVRT_ERR_UNSUPPORTED_BACKEND = 148,
  KVRT_ERR_INVALID_ARGUMENT = 149,
  KVRT_ERR_INVARIANT_VIOLATION = 150,
  KVRT_ERR_INVALID_HEADER_VALUE = 151,
  KVRT_ERR_INCONSISTENT_HEADER = 152,
  KVRT_ERR_TRAILING_BYTES = 153,
  KVRT_ERR_INVALID_TOKEN_LENGTH = 154,
  KVRT_ERR_NON_FINITE_SCORE = 155,
  KVRT_ERR_MISSING_BYTE_TOKENS = 156,
  KVRT_ERR_UNKNOWN_MODEL_FORMAT = 157,
  KVRT_ERR_UNSUPPORTED_TOKENIZER_MODEL = 158,
  KVRT_ERR_UNSUPPORTED_PRE_TOKENIZER = 159,
  KVRT_ERR_INVALID_TOKEN_TYPE = 160,
  KVRT_ERR_SPECIAL_TOKEN_OUT_OF_RANGE = 161,
  KVRT_ERR_MALFORMED_MERGE = 162,
  KVRT_ERR_INVALID_BYTE_TOKEN = 163,
  KVRT_ERR_NOT_REGULAR_FILE = 164,
  KVRT_ERR_COUNT_EXCEEDS_FILE = 165,
  KVRT_ERR_UNKNOWN_VALUE_TYPE = 166,
  KVRT_ERR_NESTING_TOO_DEEP = 167,
  KVRT_ERR_INVALID_BOOL = 168,
  KVRT_ERR_DUPLICATE_KEY = 169,
  KVRT_ERR_INVALID_ALIGNMENT = 170,
  KVRT_ERR_TOO_MANY_DIMENSIONS = 171,
  KVRT_ERR_INVALID_TENSOR_SHAPE = 172,
  KVRT_ERR_DUPLICATE_TENSOR = 173,
  KVRT_ERR_MISALIGNED_TENSOR = 174,
  KVRT_ERR_OVERLAPPING_TENSORS = 175,
  KVRT_ERR_UNSUPPORTED_TENSOR_TYPE = 176,
  KVRT_ERR_MISSING_KEY = 177,
  KVRT_ERR_KEY_TYPE_MISMATCH = 178,
  KVRT_ERR_KEY_VALUE_OUT_OF_RANGE = 179,
  KVRT_ERR_UNSUPPORTED_ARCHITECTURE = 180,
  KVRT_ERR_UNSUPPORTED_ROPE_SCALING = 181,
  KVRT_ERR_UNSUPPORTED_SLIDING_WINDOW = 182,
  KVRT_ERR_PARTIAL_ROTARY_DIMENSION = 183,
  KVRT_ERR_MISSING_TENSOR = 184,
  KVRT_ERR_UNEXPECTED_TENSOR = 185,
  KVRT_ERR_TENSOR_SHAPE_MISMATCH = 186,
  KVRT_ERR_SLOT_OUT_OF_RANGE = 187,
  KVRT_ERR_DUPLICATE_SLOT = 188,
  KVRT_ERR_EMPTY_STEP = 189,
  KVRT_ERR_STEP_TOO_LARGE = 190,
  KVRT_ERR_TRUNCATE_BEYOND_LENGTH = 191,
  KVRT_ERR_FORK_ONTO_ITSELF = 192,
  KVRT_ERR_SLOT_REQUEST = 193,
  KVRT_ERR_INVALID_ROPE_SCALE = 194,
  KVRT_ERR_HEAD_WIDTH_MISMATCH = 195,
  KVRT_ERR_UNSUPPORTED_EXPERTS = 196,
  KVRT_ERR_UNSUPPORTED_CHAT_TEMPLATE = 197,
  KVRT_ERR_CONCURRENT_USE = 198,
  KVRT_ERR_INVALID_SAMPLER_SETTING = 199,
  KVRT_ERR_LOGIT_BIAS_OUT_OF_BOUNDS = 200,
  KVRT_ERR_INVALID_STOP_STRING = 201,
  KVRT_ERR_NONE = -1 /* kvrt_error_code(NULL) */
} kvrt_error_code_value;

/* A KVRT_ERR_* value (KVRT_ERR_NONE for NULL). */
int kvrt_error_code(const kvrt_error* error);
const char* kvrt_error_name(const kvrt_error* error);
/* One line of at most 1024 bytes, whatever a file put into it: control
 * characters and bytes that are not UTF-8 are escaped (\n, \0, \x1b). */
const char* kvrt_error_message(const kvrt_error* error);
void kvrt_error_free(kvrt_error* error);
/* The variant name of a KVRT_ERR_* code ("Unknown" for any other number). */
const char* kvrt_error_code_name(int code);

/* ---- Engines --------------------------------------------------------------- */

typedef enum kvrt_backend {
  KVRT_BACKEND_REFERENCE = 0, /* scalar f64, bit-exact with the reference */
  KVRT_BACKEND_FAST = 1       /* SIMD kernels and threads, f32 or f64 */
} kvrt_backend;

typedef enum kvrt_precision { KVRT_PRECISION_F64 = 0, KVRT_PRECISION_F32 = 1 } kvrt_precision;

/* A pool of worker threads to share between sessions and generations, instead of
 * each bind or generate call starting threads of its own. threads: 0 = every core
 * (or $KVRT_THREADS), at most 1024. The pool must outlive every session bound
 * with it; calls on sessions sharing one pool may come from different threads. */
kvrt_error* kvrt_pool_create(size_t threads, kvrt_pool** out);
/* A pool that runs its loops in the oneTBB arena the calling thread runs in now
 * (tbb::this_task_arena): called from a task of the host's tbb::task_arena, that
 * arena; elsewhere oneTBB's default arena of the process. It starts no threads of its
 * own, so kvrt's loops share the host's TBB workers; kvrt_pool_threads is the arena's
 * concurrency. The arena must outlive the pool. */
kvrt_error* kvrt_pool_attach_current_arena(kvrt_pool** out);
size_t kvrt_pool_threads(const kvrt_pool* pool);
void kvrt_pool_free(kvrt_pool* pool);

/* The format of the weight matrices (kvrt/weight_format.h). AS_STORED (0, the
 * default) keeps a GGUF's bf16/f16/q8_0/q4_0/q5_0/q4_1/q5_1/iq4_nl/iq4_xs/q2_k/q3_k/
 * q4_k/q5_k/q6_k tensors as stored and the rest in f32; the others convert every matrix
 * at bind (q8_0/q4_0/q5_0/q4_1/q5_1/iq4_nl fall back to f16 for a matrix whose input
 * width is not a multiple of 32; q6_k to q8_0, q4_k to q5_0, q5_k to q5_1, iq4_xs, q3_k
 * and q2_k to iq4_nl for one whose width is not a multiple of 256, and then to f16 where
 * 32 does not divide it either). With the reference
 * backend the scalar f64 engine runs on the format's dequantized values (the
 * oracle). */
typedef enum kvrt_weights {
  KVRT_WEIGHTS_AS_STORED = 0,
  KVRT_WEIGHTS_F32 = 1,
  KVRT_WEIGHTS_BF16 = 2,
  KVRT_WEIGHTS_F16 = 3,
  KVRT_WEIGHTS_Q8_0 = 4,
  KVRT_WEIGHTS_Q4_0 = 5,
  KVRT_WEIGHTS_Q4_K = 6,
  KVRT_WEIGHTS_Q6_K = 7,
  KVRT_WEIGHTS_Q5_K = 8,
  /* llama-quantize's mixes Q4_K_S, Q4_K_M, Q5_K_S, Q5_K_M (kvrt/weight_format.h) */
  KVRT_WEIGHTS_Q4_K_S = 9,
  KVRT_WEIGHTS_Q4_K_M = 10,
  KVRT_WEIGHTS_Q5_K_S = 11,
  KVRT_WEIGHTS_Q5_K_M = 12,
  KVRT_WEIGHTS_Q5_0 = 13,
  KVRT_WEIGHTS_Q3_K = 14,
  /* llama-quantize's mix Q3_K_M */
  KVRT_WEIGHTS_Q3_K_M = 15,
  KVRT_WEIGHTS_IQ4_NL = 16,
  KVRT_WEIGHTS_IQ4_XS = 17,
  KVRT_WEIGHTS_Q4_1 = 18,
  KVRT_WEIGHTS_Q5_1 = 19,
  KVRT_WEIGHTS_Q2_K = 20
} kvrt_weights;

/* The element type of the K/V cache's rows (KvType in kvrt/engine_options.h).
 * ENGINE (0, the default): the engine's precision. F16: IEEE half precision, half the
 * bytes a long-context decode step reads (fast f32 backend, batch-invariant), or on
 * the reference backend f64 rows rounded to f16 (the fast path's oracle). BF16: the
 * same with bfloat16 (f32's range, 8 significant bits). Q8_0: llama.cpp's q8_0 (blocks of 32 along
 * the head, an f16 scale and 32 int8 quants each: 0.53 of F16's bytes), same rules. */
typedef enum kvrt_kv_type {
  KVRT_KV_TYPE_ENGINE = 0,
  KVRT_KV_TYPE_F16 = 1,
  KVRT_KV_TYPE_BF16 = 2,
  KVRT_KV_TYPE_Q8_0 = 3
} kvrt_kv_type;

typedef struct kvrt_engine_options {
  kvrt_backend backend;
  kvrt_precision precision; /* the reference backend needs KVRT_PRECISION_F64 */
  size_t threads;           /* fast backend without a pool: 0 = every core, 1 = the calling thread */
  kvrt_pool* pool;          /* fast backend: run on this pool (threads is then ignored); NULL: none */
  kvrt_weights weights;     /* zero (an initializer without it): KVRT_WEIGHTS_AS_STORED */
  size_t max_rows_per_step; /* fast backend: most rows per sequence one step forwards, which sizes its
                             * workspace; longer prompts are prefilled in chunks, committed once.
                             * 0 (an initializer without it): the default, 512 */
  int allow_batch_variance; /* fast backend: 0 (an initializer without it): batch-invariant, a
                             * sequence's logits are the same bits alone or beside others and for
                             * any chunking of its prompt. 1: the faster prefill attention
                             * (EngineOptions::batch_invariant = false): logits may change with
                             * the step's shape (chunk sizes, other slots' rows), never with the
                             * thread count, within the fast tolerance. Other values: an error */
  int int8_activations;     /* fast f32 backend: 0 (an initializer without it): f32 activations.
                             * 1: every quantized matrix (q8_0, q4_0, q5_0, q4_1, q5_1, iq4 and K-quants)
                             * multiply activations rounded to 8-bit q8_0 blocks as llama.cpp
                             * does (EngineOptions::int8_activations):
                             * faster, LESS EXACT; still thread-count and batch invariant.
                             * With another backend or precision: UnsupportedBackend. Other
                             * values: an error */
  kvrt_kv_type kv_type;     /* 0 (an initializer without it): the engine's precision. A cache bound
                             * to the engine must have its type: create it with
                             * kvrt_cache_create_for_engine (UnsupportedBackend otherwise) */
  int bf16_activations;     /* fast f32 backend: 0 (an initializer without it): f32 activations.
                             * 1: every bf16 matrix multiplies activations rounded to bf16 as
                             * llama.cpp does (EngineOptions::bf16_activations; VDPBF16PS where
                             * the CPU has AVX512_BF16): faster prefill, LESS EXACT; still
                             * thread-count and batch invariant. With another backend or
                             * precision: UnsupportedBackend. Other values: an error */
} kvrt_engine_options;

/* Fast backend, f32, every core, no shared pool, weights as stored. */
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
/* kvrt_model_encode_prompt, with parse_special nonzero: the control tokens the
 * text spells ("<|eot_id|>", "<|im_start|>", "<s>") become those tokens, as
 * llama.cpp's parse_special does. Only for text the caller built itself (a
 * rendered chat template): in untrusted text they are plain text, which is what
 * parse_special 0 and kvrt_model_encode_prompt give. */
kvrt_error* kvrt_model_encode_prompt_special(const kvrt_model* model, const char* text,
                                             int parse_special, uint32_t** ids, size_t* count);
/* The ids that end a reply, in increasing order (GGUF: llama.cpp's end-of-
 * generation set: EOS, "<|eot_id|>", "<|im_end|>", ...; others: EOS). *ids
 * stays valid while the model lives; *count is 0 without a tokenizer. */
void kvrt_model_end_of_generation(const kvrt_model* model, const uint32_t** ids, size_t* count);
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

/* Builds now the weights an engine with these options reads (NULL:
 * kvrt_engine_options_default()): the fast engine's packed or converted matrices, or
 * the reference engine's dequantized model. The first kvrt_session_bind would
 * otherwise build them (about a second for a 110M model converted to q8_0, inside
 * whatever the caller times). Sessions bound later with the same backend, precision,
 * weights and int8_activations reuse them while the model's values are unchanged.
 * The options' threads and pool are not used. */
kvrt_error* kvrt_model_prepare_weights(const kvrt_model* model, const kvrt_engine_options* engine);

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
/* The same steps with the logits as float (rounded from the engine's values; an
 * f32 engine's are exact), valid until the next call on the session. */
kvrt_error* kvrt_session_prefill_f32(kvrt_session* session, const uint32_t* tokens, size_t count,
                                     const float** logits);
kvrt_error* kvrt_session_decode_f32(kvrt_session* session, uint32_t token, const float** logits);
/* Empties the cache; the binding stays. */
void kvrt_session_reset(kvrt_session* session);
void kvrt_session_free(kvrt_session* session);

/* ---- Sequence slots ------------------------------------------------------------ */

/* A cache of `slots` sequences, each of up to `capacity` tokens (0: the model's
 * max_positions). kvrt_cache_create is this with one slot. kvrt_cache_len is
 * the longest slot's length. */
kvrt_error* kvrt_cache_create_slots(const kvrt_model* model, size_t slots, size_t capacity,
                                    kvrt_precision precision, kvrt_cache** out);
/* A cache of `slots` sequences of up to `capacity` tokens (0: the model's
 * max_positions) whose rows have the engine's precision and KV type (engine NULL:
 * kvrt_engine_options_default()), ready for kvrt_session_bind with that engine. */
kvrt_error* kvrt_cache_create_for_engine(const kvrt_model* model, size_t slots, size_t capacity,
                                         const kvrt_engine_options* engine, kvrt_cache** out);
size_t kvrt_cache_slots(const kvrt_cache* cache);
/* 0 for a slot out of range. */
size_t kvrt_cache_slot_len(const kvrt_cache* cache, size_t slot);

typedef enum kvrt_run_phase {
  KVRT_RUN_PREFILL = 0, /* a chunk of the slot's prompt */
  KVRT_RUN_DECODE = 1   /* one token after a complete prompt */
} kvrt_run_phase;

/* One slot's part of a step. */
typedef struct kvrt_slot_run {
  size_t slot;
  const uint32_t* tokens;
  size_t count;
  kvrt_run_phase phase;
  int completes_prompt; /* prefill: this chunk ends the prompt */
} kvrt_slot_run;

/* One step over distinct slots: prefill chunks and decode tokens, mixed. On
 * success *logits holds runs × vocabulary_size values, the last row's logits of
 * each run in run order, valid until the next call on the session. On any error
 * no slot advances (SlotOutOfRange, DuplicateSlot, EmptyStep, StepTooLarge,
 * SlotRequest wrapping a run's own request error, or a numeric failure). A
 * sequence's logits do not depend on the other runs, the slot or the threads. */
kvrt_error* kvrt_session_step(kvrt_session* session, const kvrt_slot_run* runs, size_t count,
                              const double** logits);
/* Most rows one step takes (all runs together), and most rows of one run. */
size_t kvrt_session_max_step_rows(const kvrt_session* session);
size_t kvrt_session_max_run_rows(const kvrt_session* session);
/* Per-slot operations, each atomic: empty a slot; keep its first `len` rows
 * (TruncateBeyondLength); make `destination` a copy of `source`'s prefix
 * (ForkOntoItself). */
kvrt_error* kvrt_session_reset_slot(kvrt_session* session, size_t slot);
kvrt_error* kvrt_session_truncate_slot(kvrt_session* session, size_t slot, size_t len);
kvrt_error* kvrt_session_fork_slot(kvrt_session* session, size_t source, size_t destination);

/* ---- Sampling ------------------------------------------------------------------ */

/* A value added to one token's logit before anything else. */
typedef struct kvrt_logit_bias {
  uint32_t token;
  double bias;
} kvrt_logit_bias;

/* The sampler set (docs/sampling.md), in llama.cpp's default order: logit bias ->
 * repetition, frequency and presence penalties over the last repeat_last_n
 * tokens -> top-k -> typical-p -> top-p -> min-p -> temperature -> one SplitMix64
 * draw. A sampler at its identity value changes nothing, not even the draws. A
 * field an initializer leaves out (zero) is off: top_p, typical_p and
 * repeat_penalty 0 are read as 1. */
typedef struct kvrt_sampler_params {
  double temperature;       /* 0: greedy (the first-ranked candidate, no draw); > 0: one draw */
  size_t top_k;             /* 0: no top-k */
  double top_p;             /* nucleus: the smallest most-likely set reaching top_p; 1: off */
  double min_p;             /* tokens at least min_p times as likely as the best; 0: off */
  double typical_p;         /* locally typical set; 1: off */
  double repeat_penalty;    /* positive logits of repeated tokens divided by it, others multiplied; 1: off */
  double frequency_penalty; /* subtracted once per occurrence; 0: off */
  double presence_penalty;  /* subtracted once per repeated token; 0: off */
  int64_t repeat_last_n;    /* the tokens the penalties look at: the last N (0: none, -1: all) */
  const kvrt_logit_bias* logit_bias; /* logit_bias_count entries, added in order */
  size_t logit_bias_count;
  uint64_t seed;            /* SplitMix64 state of the draws */
} kvrt_sampler_params;

/* Greedy, every sampler off, repeat_last_n 64, seed 0. */
kvrt_sampler_params kvrt_sampler_params_default(void);

/* A sampler for a decode loop the host writes itself (llama.cpp's
 * llama_sampler chain): the parameters, its own RNG and the tokens the
 * penalties count. It copies the bias list; every buffer is allocated here
 * (kvrt_sampler_sample and _accept allocate nothing). Errors: InvalidTemperature,
 * InvalidTopK, InvalidSamplerSetting, LogitBiasOutOfBounds, AllocationFailed. */
kvrt_error* kvrt_sampler_create(const kvrt_sampler_params* params, size_t vocabulary_size,
                                kvrt_sampler** out);
/* Picks a token from `count` logits (the vocabulary size: LogitCountMismatch
 * otherwise; NonFiniteLogit). It does not record the token: accept it. */
kvrt_error* kvrt_sampler_sample(kvrt_sampler* sampler, const double* logits, size_t count,
                                uint32_t* token);
kvrt_error* kvrt_sampler_sample_f32(kvrt_sampler* sampler, const float* logits, size_t count,
                                    uint32_t* token);
/* Appends a token of the sequence for the penalties: every prompt token and
 * every token fed to the model (TokenIdOutOfBounds). */
kvrt_error* kvrt_sampler_accept(kvrt_sampler* sampler, uint32_t token);
/* Forgets the accepted tokens and sets the RNG back to the seed. */
void kvrt_sampler_reset(kvrt_sampler* sampler);
void kvrt_sampler_free(kvrt_sampler* sampler);

/* ---- Chat templates -------------------------------------------------------------- */

typedef struct kvrt_chat_message {
  const char* role; /* "system", "user", "assistant", ... */
  const char* content;
} kvrt_chat_message;

/* The prompt text of a conversation (kvrt/chat.h), byte-identical to llama.cpp's
 * llama_chat_apply_template. tmpl NULL: the model's own template
 * (tokenizer.chat_template; MissingKey when it has none); otherwise a built-in
 * format's name ("chatml", "llama3", ...) or a Jinja template text, recognised
 * as llama.cpp recognises one (UnsupportedChatTemplate when it is none of its
 * formats). model may be NULL when tmpl is given. add_generation_prompt nonzero:
 * end with what opens the assistant's reply. Free *text (NUL-terminated; *length
 * excludes the NUL) with kvrt_string_free. */
kvrt_error* kvrt_chat_apply_template(const kvrt_model* model, const char* tmpl,
                                     const kvrt_chat_message* messages, size_t count,
                                     int add_generation_prompt, char** text, size_t* length);
/* The model file's chat template text (valid while the model lives), or NULL. */
const char* kvrt_model_chat_template(const kvrt_model* model);

/* ---- Generation -------------------------------------------------------------- */

typedef struct kvrt_generation_options {
  double temperature;    /* 0: greedy; > 0: one draw per token at this temperature */
  size_t top_k;          /* 0: no top-k */
  uint64_t seed;         /* SplitMix64 state of the sampler */
  int has_eos;           /* stop after generating eos_token */
  uint32_t eos_token;
  size_t max_new_tokens; /* token budget */
  int stop_at_end_of_generation; /* nonzero: also stop after any of the model's
                                  * kvrt_model_end_of_generation ids (stop "eos");
                                  * 0 (an initializer without it): only eos_token */
  /* The rest of the sampler set, as in kvrt_sampler_params (zero in an
   * initializer without them: off). */
  double top_p;
  double min_p;
  double typical_p;
  double repeat_penalty;
  double frequency_penalty;
  double presence_penalty;
  int64_t repeat_last_n;
  const kvrt_logit_bias* logit_bias;
  size_t logit_bias_count;
  /* Generation controls. */
  const uint32_t* end_tokens;  /* end_token_count more ids that end the generation like eos_token */
  size_t end_token_count;
  const char* const* stop;     /* stop_count stop strings (NUL-terminated UTF-8), matched on the
                                * decoded text; the text ends just before the earliest. They
                                * need the model's tokenizer (InvalidStopString) */
  size_t stop_count;
  int logprobs;                /* 1: record each step's log-probability and top_logprobs
                                * alternatives (docs/sampling.md) */
  size_t top_logprobs;
  size_t ctx_size;             /* tokens the sequence may hold; 0: the model's context */
} kvrt_generation_options;

/* Greedy, 64 new tokens, no EOS, seed 0, every other sampler and control off
 * (repeat_last_n 64). */
kvrt_generation_options kvrt_generation_options_default(void);

/* Called with every token as soon as it is sampled and the text it releases:
 * `length` bytes at `text` (not NUL-terminated), whole UTF-8 characters only,
 * never part of a stop string, with SentencePiece's leading-space rule applied;
 * the last token releases whatever was held back (empty without a tokenizer).
 * Return 0 to go on, anything else to cancel: the generation stops with
 * "cancelled" (after a token that ends it anyway, its own stop stays). */
typedef int (*kvrt_token_callback)(uint32_t token, const char* text, size_t length, void* user_data);

/* The cached loop: prefill once, then sample and decode until an end token, a
 * stop string, the budget, the context or the callback ends it. `engine` NULL:
 * the defaults; `on_token` may be NULL. */
kvrt_error* kvrt_generate(const kvrt_model* model, const uint32_t* prompt, size_t count,
                          const kvrt_generation_options* options, const kvrt_engine_options* engine,
                          kvrt_token_callback on_token, void* user_data, kvrt_generation** out);
size_t kvrt_generation_count(const kvrt_generation* generation);
/* The generated ids (a final end token included). */
const uint32_t* kvrt_generation_tokens(const kvrt_generation* generation);
/* "eos", "token-limit", "context-limit", "stop-string" or "cancelled". */
const char* kvrt_generation_stop(const kvrt_generation* generation);
/* The generated text (NUL-terminated, *length bytes when length is not NULL),
 * decoded after the prompt, without end tokens and ending before a stop string;
 * NULL when a token could not be decoded (no tokenizer) or the bytes are not
 * UTF-8. Valid while the generation lives. */
const char* kvrt_generation_text(const kvrt_generation* generation, size_t* length);

typedef struct kvrt_token_logprob {
  uint32_t token;
  double logprob;
} kvrt_token_logprob;
/* With options.logprobs: the log-probability of step `step`'s token (NaN
 * without logprobs or past the last step). */
double kvrt_generation_logprob(const kvrt_generation* generation, size_t step);
/* The step's top_logprobs alternatives, most likely first (*count of them; 0
 * without logprobs or past the last step). Valid while the generation lives. */
const kvrt_token_logprob* kvrt_generation_top_logprobs(const kvrt_generation* generation, size_t step,
                                                       size_t* count);
void kvrt_generation_free(kvrt_generation* generation);

#ifdef __cplusplus
}
#endif

#endif /* KVRT_KVRT_H_ */
