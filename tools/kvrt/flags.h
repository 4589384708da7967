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
  // Parses `args` (after the subcommand name). Unknown flags, missing values
  // (including a value that is itself a `--flag`), repeated flags and more than
  // `max_positional` positional arguments are InvalidArgument errors: a stray word
  // must not be silently ignored (`generate -n 5` once ran 64 tokens).
  static Result<Flags> Parse(std::span<char* const> args, std::span<const FlagSpec> specs,
                             size_t max_positional = 0);

  bool Has(const std::string& name) const { return values_.count(name) != 0; }
  std::optional<std::string> Value(const std::string& name) const;
  const std::vector<std::string>& positional() const { return positional_; }

  Result<std::string> Required(const std::string& name) const;
  // Decimal digits only (see number_text.h).
  Result<uint64_t> Unsigned(const std::string& name, uint64_t fallback) const;
  // 1..16 hex digits, optionally after "0x".
  Result<uint64_t> Hex(const std::string& name, uint64_t fallback) const;
  Result<double> Double(const std::string& name, double fallback) const;
  // "1,2,3" → ids; an empty item anywhere ("1,,2", "1,2,", "") is an error.
  Result<std::vector<uint32_t>> TokenList(const std::string& name) const;

 private:
  std::map<std::string, std::string> values_;
  std::vector<std::string> positional_;
};

// "Usage: ..." followed by one line per flag.
std::string Usage(const std::string& synopsis, std::span<const FlagSpec> specs);

Error InvalidArgument(const std::string& message);

}  // namespace kvrt::cli
