// The checks every GGUF vocabulary passes before either tokenizer sees it.
#include "tokenizer/vocabulary.h"

#include <cmath>
#include <cstdint>
#include <string>
#include <utility>

namespace kvrt::tokenizer {

Result<TokenTable> TokenTable::Build(std::vector<std::string> tokens, std::vector<float> scores,
                                     const std::vector<int32_t>& token_types) {
  const uint64_t count = tokens.size();
  if (count == 0) {
    return Fail(ErrorCode::kEmptyVocabulary, {}, "a GGUF vocabulary needs at least one token");
  }
  // llama.cpp's token ids are int32_t; larger lists cannot be addressed by it.
  if (count > uint64_t{INT32_MAX}) {
    return Fail(
        ErrorCode::kInvalidArgument, {{"vocabulary_size", count}},
        "a GGUF vocabulary of " + std::to_string(count) + " tokens does not fit 31-bit token ids");
  }
  for (const auto& [name, size] :
       {std::pair{"scores", scores.size()}, std::pair{"token types", token_types.size()}}) {
    if (size != 0 && size != count) {
      return Fail(ErrorCode::kInvalidArgument,
                  {{"vocabulary_size", count}, {"count", uint64_t{size}}},
                  std::string("a GGUF vocabulary of ") + std::to_string(count) + " tokens has " +
                      std::to_string(size) + " " + name + " (expected none or one per token)");
    }
  }
  for (size_t id = 0; id < scores.size(); ++id) {
    if (!std::isfinite(scores[id])) {
      return Fail(ErrorCode::kNonFiniteScore, {{"token_id", uint64_t{id}}},
                  "GGUF token " + std::to_string(id) + " has a non-finite score");
    }
  }
  TokenTable table;
  table.types_.assign(count, TokenType::kNormal);
  for (size_t id = 0; id < token_types.size(); ++id) {
    const int32_t type = token_types[id];
    if (type < 0 || type > static_cast<int32_t>(TokenType::kByte)) {
      return Fail(ErrorCode::kInvalidTokenType,
                  {{"token_id", uint64_t{id}}, {"token_type", int64_t{type}}},
                  "GGUF token " + std::to_string(id) + " has the unknown token type " +
                      std::to_string(type));
    }
    table.types_[id] = static_cast<TokenType>(type);
  }
  table.texts_ = std::move(tokens);
  table.scores_ = std::move(scores);
  table.index_.reserve(count);
  for (size_t id = 0; id < count; ++id) {
    table.index_.insert_or_assign(std::string_view(table.texts_[id]), static_cast<uint32_t>(id));
  }
  return table;
}

std::optional<uint32_t> TokenTable::Find(std::string_view text) const {
  const auto found = index_.find(text);
  if (found == index_.end()) return std::nullopt;
  return found->second;
}

}  // namespace kvrt::tokenizer
