// What `kvrt generate` reads from its flags about one request (prompt, sampler
// set, stops, RNG state), shared with `kvrt batch`, whose request lines fill the
// same fields from JSON: a request means exactly what `generate` means by it.
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
     "prompt text, encoded with the tokenizer (byte-BPE: no BOS; llama2.c: BOS first, as run.c); - reads it "
     "from standard input",
     'p'},
    {"special", false,
     "parse the control tokens --prompt spells (\"<|eot_id|>\", \"<|im_start|>\") as those tokens, as "
     "llama.cpp's parse_special does (GGUF vocabularies); default: plain text"},
    {"file", true, "read the prompt text from this file (its bytes, unchanged)"},
    {"greedy", false, "pick the most likely token (the default without --temperature)"},
    {"temperature", true, "sample at this temperature; 0 means greedy, as in the C API", 0, "temp"},
    {"top-k", true, "keep the K most likely tokens (0 or absent: no top-k)"},
    {"top-p", true, "keep the smallest most-likely set whose probability reaches P (1: off)"},
    {"min-p", true, "keep the tokens at least P times as likely as the most likely one (0: off)"},
    {"typical-p", true, "keep the locally typical tokens up to probability P (1: off)"},
    {"repeat-penalty", true,
     "divide the positive logits (multiply the others) of the tokens among the last --repeat-last-n by R (1: off)"},
    {"repeat-last-n", true, "tokens the penalties look at, prompt included (default 64; 0: none, -1: all)"},
    {"presence-penalty", true, "subtract X from the logit of every token among them (0: off)"},
    {"frequency-penalty", true, "subtract X per occurrence among them (0: off)"},
    {"logit-bias", true, "ID+BIAS or ID-BIAS: add BIAS to token ID's logit (repeatable)", 0, nullptr, true},
    {"rng-state", true, "SplitMix64 state, 1-16 hex digits, optionally after 0x (default: the model file's sampling state)"},
    {"seed", true, "SplitMix64 seed (the state itself)", 's'},
    {"eos", true,
     "stop after generating one of these comma-separated token ids (default: a GGUF model's end-of-generation "
     "ids, a byte-BPE model's own "
     "EOS; llama2.c tokenizer: BOS 1, as run.c)"},
    {"no-eos", false, "never stop at an end token: generate until the budget or the context runs out"},
    {"stop", true, "stop before this text; the text ends just before it (repeatable)", 0, nullptr, true},
    {"logprobs", true, "each --json step gains its token's logprob and the N most likely alternatives"},
    {"max-new-tokens", true, "token budget (default 64)", 'n'},
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
  std::optional<std::string> prompt;       // any bytes, NUL included
  bool prompt_from_stdin = false;          // generate's --prompt -
  std::optional<std::string> prompt_file;  // generate's --file
  bool special = false;                    // parse the control tokens the prompt spells
  bool greedy = false;
  RequestField<double> temperature;
  RequestField<uint64_t> top_k;
  RequestField<double> top_p;
  RequestField<double> min_p;
  RequestField<double> typical_p;
  RequestField<double> repeat_penalty;
  RequestField<double> presence_penalty;
  RequestField<double> frequency_penalty;
  RequestField<int64_t> repeat_last_n;  // -1: every token
  RequestField<std::vector<LogitBias>> logit_bias;
  RequestField<uint64_t> rng_state;
  RequestField<uint64_t> seed;
  RequestField<std::vector<uint32_t>> eos;  // the first is eos_token, the rest end tokens too
  bool no_eos = false;
  std::vector<std::string> stop;
  RequestField<uint64_t> logprobs;
  RequestField<uint64_t> max_new_tokens;
};

RequestFields RequestFieldsFromFlags(const Flags& flags);

// The sampler set a request asks for: the mode (greedy, temperature, top-k) and
// the samplers around it, checked as RequestConfigFromFields checks them.
struct SamplerChoice {
  SamplingMode mode;
  SamplerOptions options;
};
Result<SamplerChoice> SamplerChoiceFromFields(const RequestFields& fields);

// The checks that need no model: one prompt source, the sampler set, the
// budget, eos xor no_eos and the explicit end ids. The messages name the flags
// (`--greedy excludes --temperature and --top-k`) for batch lines too.
Result<GenerationConfig> RequestConfigFromFields(const RequestFields& fields);

// The rest, once the model is loaded: the tokenizer, the default end (a GGUF
// model's end-of-generation ids, a byte-BPE model's EOS; llama2.c's BOS when
// `llama2c_tokenizer`), the RNG state and the prompt ids (and text, when it was
// given as text).
struct RequestInput {
  std::vector<uint32_t> prompt;
  std::optional<std::string> prompt_text;
  uint64_t rng_state = 0;
};
Result<RequestInput> RequestInputFromFields(const RequestFields& fields, const LoadedModel& loaded,
                                            const Tokenizer& tokenizer, bool llama2c_tokenizer,
                                            GenerationConfig& config);

// The one-line JSON object of `generate --json`; with `id`, the request id first.
std::string GenerationJson(const GenerationResult& run, uint64_t rng_state, bool cached, size_t threads,
                           const std::optional<std::string>& id = std::nullopt);

}  // namespace kvrt::cli
