// Command-line flags of one kvrt subcommand: `--name value` and `--switch`, checked
// against the subcommand's list of known flags, with typed accessors that return
// InvalidArgument errors instead of exiting.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "kvrt/error.h"

namespace kvrt::cli {

struct FlagSpec {
  const char* name;  // without the leading "--"
  bool takes_value;
  const char* help;
  char short_name = 0;           // `-n` for the same flag (llama.cpp's spellings); 0: none
  const char* alias = nullptr;   // another long name (`--temp`); nullptr: none
  bool repeatable = false;       // may be given more than once (Values() has them all)
  const char* dash_name = nullptr;  // a one-dash spelling of several letters, dash included (llama-bench's `-pg`, `-ctk`); nullptr: none
};

// The flags of `first` followed by those of `second`, as one constexpr array.
template <size_t N, size_t M>
constexpr std::array<FlagSpec, N + M> JoinFlags(const FlagSpec (&first)[N], const FlagSpec (&second)[M]) {
  std::array<FlagSpec, N + M> joined{};
  for (size_t i = 0; i < N; ++i) joined[i] = first[i];
  for (size_t i = 0; i < M; ++i) joined[N + i] = second[i];
  return joined;
}

class Flags {
 public:
  // Parses `args` (after the subcommand name). A flag is `--name`, its alias,
  // its short `-x` or its dash name `-xy`; values are named by the flag's own name. Unknown flags,
  // missing values (including a value that is itself a `--flag` or a known `-x`),
  // a flag given twice (unless repeatable, under any of its spellings) and more
  // than `max_positional` positional arguments are InvalidArgument errors: a
  // stray word must not be silently ignored.
  static Result<Flags> Parse(std::span<char* const> args, std::span<const FlagSpec> specs,
                             size_t max_positional = 0);

  bool Has(const std::string& name) const { return values_.count(name) != 0; }
  // The value of a flag given once (the last one of a repeatable flag).
  std::optional<std::string> Value(const std::string& name) const;
  // Every value of a repeatable flag, in command-line order.
  std::vector<std::string> Values(const std::string& name) const;
  const std::vector<std::string>& positional() const { return positional_; }

  Result<std::string> Required(const std::string& name) const;
  // Decimal digits only (see number_text.h).
  Result<uint64_t> Unsigned(const std::string& name, uint64_t fallback) const;
  // 1..16 hex digits, optionally after "0x".
  Result<uint64_t> Hex(const std::string& name, uint64_t fallback) const;
  Result<double> Double(const std::string& name, double fallback) const;
  // Decimal digits, or "-1" (llama.cpp's "all" for a count).
  Result<int64_t> CountOrAll(const std::string& name, int64_t fallback) const;
  // "1,2,3" → ids; an empty item anywhere ("1,,2", "1,2,", "") is an error.
  Result<std::vector<uint32_t>> TokenList(const std::string& name) const;

 private:
  std::map<std::string, std::vector<std::string>> values_;
  std::vector<std::string> positional_;
};

// "Usage: ..." followed by one line per flag.
std::string Usage(const std::string& synopsis, std::span<const FlagSpec> specs);

Error InvalidArgument(const std::string& message);

}  // namespace kvrt::cli
