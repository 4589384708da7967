// What `kvrt generate` reads from its flags about one request (prompt, sampling,
// stops, RNG state), shared with `kvrt batch`, whose request lines fill the same
// fields from JSON: a request means exactly what `generate` means by it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "flags.h"
#include "kvrt/error.h"
#include "kvrt/generation.h"
#include "kvrt/load_model.h"
#include "kvrt/tokenizer.h"

namespace kvrt::cli {

// The request flags of `generate`, in its --help order.
inline constexpr FlagSpec kRequestFlags[] = {
    {"tokens", true, "prompt as comma-separated token ids"},
    {"prompt", true,
     "prompt text, encoded with the tokenizer (byte-BPE: no BOS; llama2.c: BOS first, as run.c)"},
    {"special", false,
     "parse the control tokens --prompt spells (\"<|eot_id|>\", \"<|im_start|>\") as those tokens, as "
     "llama.cpp's parse_special does (GGUF vocabularies); default: plain text"},
    {"greedy", false, "pick the largest logit (the default)"},
    {"temperature", true, "sample with this temperature (needs --top-k); 0 means greedy, as in the C API"},
    {"top-k", true, "keep the k best tokens when sampling"},
    {"rng-state", true, "SplitMix64 state, 1-16 hex digits, optionally after 0x (default: the model file's sampling state)"},
    {"seed", true, "SplitMix64 seed (the state itself)"},
    {"eos", true,
     "stop after generating this token id (default: a GGUF model's end-of-generation ids, a byte-BPE model's own "
     "EOS; llama2.c tokenizer: BOS 1, as run.c)"},
    {"no-eos", false, "never stop at an end token: generate until the budget or the context runs out"},
    {"max-new-tokens", true, "token budget (default 64)"},
};

// One request's fields as given, before any check that combines them: from
// `generate`'s flags (RequestFieldsFromFlags) or from a `kvrt batch` JSON line
// (batch_request.h), never one through the other. A field is absent, or given
// with its value or the error its text gave: a flag value that does not parse is
// reported where the checks below first need it, so the first error of a
// request is the same whichever way it came in.
template <class T>
using RequestField = std::optional<Result<T>>;

struct RequestFields {
  RequestField<std::vector<uint32_t>> tokens;
  std::optional<std::string> prompt;  // any bytes, NUL included
  bool special = false;               // parse the control tokens the prompt spells
  bool greedy = false;
  RequestField<double> temperature;
  RequestField<uint64_t> top_k;
  RequestField<uint64_t> rng_state;
  RequestField<uint64_t> seed;
  RequestField<uint64_t> eos;
  bool no_eos = false;
  RequestField<uint64_t> max_new_tokens;
};

RequestFields RequestFieldsFromFlags(const Flags& flags);

// The checks that need no model: tokens xor prompt, the sampling mode, the
// budget, eos xor no_eos and the explicit EOS id. The messages name the flags
// (`--temperature and --top-k go together`) for batch lines too.
Result<GenerationConfig> RequestConfigFromFields(const RequestFields& fields);

// The rest, once the model is loaded: the default end (a GGUF model's
// end-of-generation ids, a byte-BPE model's EOS; llama2.c's BOS when
// `llama2c_tokenizer`), the RNG state and the prompt ids.
struct RequestInput {
  std::vector<uint32_t> prompt;
  uint64_t rng_state = 0;
};
Result<RequestInput> RequestInputFromFields(const RequestFields& fields, const LoadedModel& loaded,
                                            const Tokenizer& tokenizer, bool llama2c_tokenizer,
                                            GenerationConfig& config);

// The generated tokens as text (a final EOS dropped); nullopt when not UTF-8.
std::optional<std::string> GeneratedText(const Tokenizer& tokenizer, const GenerationResult& run);

// The one-line JSON object of `generate --json`; with `id`, the request id first.
std::string GenerationJson(const GenerationResult& run, const std::optional<std::string>& text,
                           uint64_t rng_state, bool cached, size_t threads,
                           const std::optional<std::string>& id = std::nullopt);

}  // namespace kvrt::cli
