#include "chat_turns.h"

#include <algorithm>
#include <utility>

namespace kvrt::cli {

Result<std::string> RenderChatTurn(const Tokenizer& tokenizer, const std::optional<std::string>& system,
                                   const std::string& user) {
  Result<ChatTemplate> chat = ChatTemplate::ForTokenizer(tokenizer);
  if (!chat) return std::unexpected(chat.error());
  std::vector<ChatMessage> messages;
  if (system) messages.push_back({"system", *system});
  messages.push_back({"user", user});
  return chat->Apply(messages, /*add_generation_prompt=*/true);
}

Result<std::span<const double>> CachedConversation::Extend(std::span<const uint32_t> conversation,
                                                           TurnPrompt& cost) {
  if (conversation.empty()) {
    return std::unexpected(Error(ErrorCode::kEmptyPrompt, {}, "the rendered conversation has no tokens"));
  }
  const size_t common = static_cast<size_t>(
      std::mismatch(held_.begin(), held_.end(), conversation.begin(), conversation.end()).first - held_.begin());
  // The last token is forwarded again if the cache already holds all of them.
  const size_t keep = std::min(common, conversation.size() - 1);
  if (keep < held_.size()) {
    if (Result<void> cut = session_->TruncateSlot(0, keep); !cut) return std::unexpected(cut.error());
    held_.resize(keep);
  }
  const std::span<const uint32_t> fresh = conversation.subspan(keep);
  cost = {conversation.size(), keep, fresh.size()};
  std::span<const double> logits;
  if (held_.empty()) {
    Result<StepOutput> step = session_->Prefill(fresh);
    if (!step) return std::unexpected(step.error());
    held_.assign(fresh.begin(), fresh.end());
    return step->logits;
  }
  for (const uint32_t token : fresh) {
    Result<std::span<const double>> step = Append(token);
    if (!step) return step;
    logits = *step;
  }
  return logits;
}

Result<std::span<const double>> CachedConversation::Append(uint32_t token) {
  Result<StepOutput> step = session_->Decode(token);
  if (!step) return std::unexpected(step.error());
  held_.push_back(token);
  return step->logits;
}

}  // namespace kvrt::cli
