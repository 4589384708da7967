#include "tokenizer/user_defined_tokens.h"

#include <algorithm>

namespace kvrt::tokenizer {
namespace {

bool IsSpace(char c) {  // C-locale isspace, independent of the host's locale
  return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

void AppendRaw(std::vector<TextFragment>& out, std::string_view text) {
  if (!text.empty()) out.push_back({text, 0, false});
}

}  // namespace

std::vector<UserDefinedToken> UserDefinedTokensOf(const TokenTable& table) {
  std::vector<UserDefinedToken> tokens;
  for (uint32_t id = 0; id < table.size(); ++id) {
    if (table.type(id) == TokenType::kUserDefined && !table.text(id).empty()) {
      tokens.push_back({id, false, false});
    }
  }
  std::stable_sort(tokens.begin(), tokens.end(),
                   [&](const UserDefinedToken& a, const UserDefinedToken& b) {
                     return table.text(a.id).size() > table.text(b.id).size();
                   });
  return tokens;
}

std::vector<TextFragment> SplitAtUserDefinedTokens(const TokenTable& table,
                                                   const std::vector<UserDefinedToken>& tokens,
                                                   std::string_view text) {
  std::vector<TextFragment> fragments, next;
  AppendRaw(fragments, text);
  for (const UserDefinedToken& token : tokens) {
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
