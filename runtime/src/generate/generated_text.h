// The text of a generation as it grows token by token: each token's bytes
// decoded after the token before it (so SentencePiece's leading space is kept or
// dropped as in the whole text), the stop strings searched across token
// boundaries and inside multi-byte characters, and the part a stream may show
// now: whole UTF-8 characters that no stop string can still claim.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kvrt/error.h"
#include "kvrt/tokenizer.h"

namespace kvrt {

// InvalidStopString{index} for a stop string that is empty or not UTF-8, or for
// any stop string without a tokenizer to decode the text.
Result<void> ValidateStopStrings(std::span<const std::string> stops, bool has_tokenizer);

class GeneratedText {
 public:
  // `stops` valid; `previous` is the token before the first generated one (the
  // prompt's last). The buffers are sized for `planned_tokens` tokens up front.
  // AllocationFailed.
  static Result<GeneratedText> Create(const std::optional<Tokenizer>& tokenizer,
                                      std::span<const std::string> stops,
                                      std::optional<uint32_t> previous, size_t planned_tokens);

  // Appends the bytes of `token`; an end token adds none. True when a stop
  // string is complete: the text then ends before its earliest occurrence, and
  // later tokens add nothing.
  bool Append(uint32_t token, bool end_token);
  // The text newly shown to a stream: whole characters (an invalid byte
  // sequence as U+FFFD) up to what a stop string might still claim. `final`
  // releases the rest, an incomplete last character as U+FFFD. Valid until the
  // next call.
  std::string_view Release(bool final);
  // The text, strictly, once the generation is over (its buffer moves out, so
  // this allocates nothing): nullopt when a token had no bytes (no tokenizer, or
  // the tokenizer refused it) or the bytes are not UTF-8.
  std::optional<std::string> TakeText();

 private:
  GeneratedText() = default;
  size_t HeldForStops() const;
  std::string_view Kept() const;  // the bytes that belong to the text

  std::optional<Tokenizer> tokenizer_;
  std::vector<std::string> stops_;
  size_t longest_stop_ = 0;
  std::optional<uint32_t> previous_;
  std::string bytes_;         // every decoded byte so far
  std::string shown_;         // the last Release's text
  size_t released_ = 0;       // bytes_ before this were shown
  std::optional<size_t> stop_at_;  // where a stop string begins, once one matched
  bool decodable_ = true;
};

}  // namespace kvrt
