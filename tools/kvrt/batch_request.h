// One `kvrt batch` request line: a JSON object whose fields are `generate`'s
// (tokens or prompt, max_new_tokens, greedy or the sampler set: temperature,
// top_k, top_p, min_p, typical_p, repeat_penalty, repeat_last_n,
// presence_penalty, frequency_penalty, logit_bias; rng_state or seed; eos (an
// id or an array of them; null: no EOS) or no_eos; stop (a string or an array
// of them); logprobs) plus an optional id and arrival_step. The
// fields are read from JSON into RequestFields directly, never through the
// command-line parser, and then checked by the code `generate` uses.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "generate_request.h"
#include "kvrt/error.h"
#include "kvrt/generation.h"
#include "kvrt/load_model.h"
#include "kvrt/tokenizer.h"

namespace kvrt::cli {

struct BatchRequest {
  GenerationRequest request;
  std::string id_json;  // the id as JSON text: the line's "id", else the request's index
};

// What every line of a file is read against.
struct BatchContext {
  const LoadedModel& loaded;
  const Tokenizer& tokenizer;
  bool llama2c_tokenizer = false;
  size_t context_size = 0;  // --ctx-size: every request's (0: the model's context)
};

// The request on `line` (number `number`, the `index`-th request of the file),
// with every check GenerateCached would run before starting; nullopt for a blank
// line. Errors name the line: "requests line N: <what>".
Result<std::optional<BatchRequest>> ParseBatchRequest(std::string_view line, size_t number, size_t index,
                                                      const BatchContext& context);

}  // namespace kvrt::cli
