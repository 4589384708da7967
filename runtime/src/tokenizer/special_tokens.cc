#include "tokenizer/special_tokens.h"

#include <algorithm>

namespace kvrt::tokenizer {
namespace {

bool IsSpace(char c) {  // C-locale isspace, independent of the host's locale
  return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

void AppendRaw(std::vector<TextFragment>& out, std::string_view text) {
  if (!text.empty()) out.push_back({text, 0, false});
}

bool IsSpecial(TokenType type) {
  return type == TokenType::kControl || type == TokenType::kUserDefined ||
         type == TokenType::kUnknown;
}

}  // namespace

std::vector<SpecialToken> SpecialTokensOf(const TokenTable& table) {
  std::vector<SpecialToken> tokens;
  for (uint32_t id = 0; id < table.size(); ++id) {
    if (IsSpecial(table.type(id)) && !table.text(id).empty()) {
      tokens.push_back({id, table.type(id) == TokenType::kUserDefined, false, false});
    }
  }
  std::stable_sort(tokens.begin(), tokens.end(), [&](const SpecialToken& a, const SpecialToken& b) {
    return table.text(a.id).size() > table.text(b.id).size();
  });
  return tokens;
}

std::vector<TextFragment> SplitAtSpecialTokens(const TokenTable& table,
                                               const std::vector<SpecialToken>& tokens,
                                               std::string_view text, bool parse_special) {
  std::vector<TextFragment> fragments, next;
  AppendRaw(fragments, text);
  for (const SpecialToken& token : tokens) {
    if (!parse_special && !token.user_defined) continue;
    const std::string_view spelling = table.text(token.id);
    next.clear();
    for (const TextFragment& fragment : fragments) {
      if (fragment.is_token) {
        next.push_back(fragment);
        continue;
      }
      std::string_view rest = fragment.text;
      for (size_t match = rest.find(spelling); match != std::string_view::npos;
           match = rest.find(spelling)) {
        std::string_view left = rest.substr(0, match);
        if (token.lstrip) {
          while (!left.empty() && IsSpace(left.back())) left.remove_suffix(1);
        }
        AppendRaw(next, left);
        next.push_back({{}, token.id, true});
        rest.remove_prefix(match + spelling.size());
        if (token.rstrip) {
          while (!rest.empty() && IsSpace(rest.front())) rest.remove_prefix(1);
        }
      }
      AppendRaw(next, rest);
    }
    fragments.swap(next);
  }
  return fragments;
}

}  // namespace kvrt::tokenizer
