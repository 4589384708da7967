// Chat in the CLI: one turn rendered with the model's template (`generate
// --chat`), and a conversation kept in a session's KV cache (`kvrt chat`), where
// every turn re-renders the whole conversation and forwards only the tokens past
// what the cache already holds.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "kvrt/chat.h"
#include "kvrt/error.h"
#include "kvrt/session.h"
#include "kvrt/tokenizer.h"

namespace kvrt::cli {

// [system,] user, rendered with the tokenizer's chat template and the assistant's
// opening (the generation prompt). MissingKey when the model has no template,
// UnsupportedChatTemplate when kvrt does not know it.
Result<std::string> RenderChatTurn(const Tokenizer& tokenizer, const std::optional<std::string>& system,
                                   const std::string& user);

// What one turn cost: the rendered conversation's tokens, how many the cache
// already held, and the rows forwarded for the new ones.
struct TurnPrompt {
  size_t conversation_tokens = 0;
  size_t reused = 0;     // leading tokens already in the cache
  size_t forwarded = 0;  // tokens forwarded this turn (conversation − reused)
};

// Slot 0 of a session as a growing conversation. The cache holds `held()`: every
// token forwarded so far, in order.
class CachedConversation {
 public:
  explicit CachedConversation(Session& session) : session_(&session) {}

  // Brings the cache to `conversation` (the whole rendered prompt, tokenized):
  // keeps the longest common prefix with what it holds (truncating the rest, say
  // a reply whose tokens re-tokenize differently), forwards the remainder — a
  // prefill when the cache is empty, else one row per token — and returns the
  // logits after the last token. At least the last token is always forwarded,
  // since its logits are the next token's.
  Result<std::span<const double>> Extend(std::span<const uint32_t> conversation, TurnPrompt& cost);
  // Forwards one generated token (a decode).
  Result<std::span<const double>> Append(uint32_t token);

  std::span<const uint32_t> held() const { return held_; }

 private:
  Session* session_;
  std::vector<uint32_t> held_;
};

}  // namespace kvrt::cli
