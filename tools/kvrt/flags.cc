#include "flags.h"

#include <string_view>

#include "number_text.h"

namespace kvrt::cli {

Error InvalidArgument(const std::string& message) {
  return Error(ErrorCode::kInvalidArgument, {{"", message}}, message);
}

Result<Flags> Flags::Parse(std::span<char* const> args, std::span<const FlagSpec> specs,
                           size_t max_positional) {
  Flags flags;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string arg = args[i];
    if (arg.rfind("--", 0) != 0 || arg == "--") {
      if (flags.positional_.size() == max_positional) {
        return std::unexpected(InvalidArgument("unexpected argument '" + arg + "'"));
      }
      flags.positional_.push_back(arg);
      continue;
    }
    std::string name = arg.substr(2);
    std::optional<std::string> inline_value;
    if (const size_t eq = name.find('='); eq != std::string::npos) {
      inline_value = name.substr(eq + 1);
      name = name.substr(0, eq);
    }
    const FlagSpec* spec = nullptr;
    for (const FlagSpec& candidate : specs) {
      if (name == candidate.name) spec = &candidate;
    }
    if (spec == nullptr) return std::unexpected(InvalidArgument("unknown flag --" + name));
    if (flags.values_.count(name)) return std::unexpected(InvalidArgument("flag --" + name + " given twice"));
    if (!spec->takes_value) {
      if (inline_value) return std::unexpected(InvalidArgument("flag --" + name + " takes no value"));
      flags.values_[name] = "";
      continue;
    }
    if (inline_value) {
      flags.values_[name] = *inline_value;
    } else if (i + 1 < args.size() && std::string_view(args[i + 1]).substr(0, 2) != "--") {
      // A following `--flag` is the next flag, not this one's value (`--model --tokens 1`);
      // a value that really starts with "--" is given as --name=--value.
      flags.values_[name] = args[++i];
    } else {
      return std::unexpected(InvalidArgument("flag --" + name + " needs a value"));
    }
  }
  return flags;
}

std::optional<std::string> Flags::Value(const std::string& name) const {
  const auto it = values_.find(name);
  if (it == values_.end()) return std::nullopt;
  return it->second;
}

Result<std::string> Flags::Required(const std::string& name) const {
  std::optional<std::string> value = Value(name);
  if (!value) return std::unexpected(InvalidArgument("missing required flag --" + name));
  return *value;
}

Result<uint64_t> Flags::Unsigned(const std::string& name, uint64_t fallback) const {
  std::optional<std::string> value = Value(name);
  if (!value) return fallback;
  std::optional<uint64_t> parsed = ParseDecimalU64(*value);
  if (!parsed) {
    return std::unexpected(InvalidArgument("--" + name + " needs a decimal unsigned integer, got '" + *value + "'"));
  }
  return *parsed;
}

Result<uint64_t> Flags::Hex(const std::string& name, uint64_t fallback) const {
  std::optional<std::string> value = Value(name);
  if (!value) return fallback;
  std::optional<uint64_t> parsed = ParseHexU64(*value);
  if (!parsed) {
    return std::unexpected(
        InvalidArgument("--" + name + " needs 1 to 16 hex digits (optionally after 0x), got '" + *value + "'"));
  }
  return *parsed;
}

Result<double> Flags::Double(const std::string& name, double fallback) const {
  std::optional<std::string> value = Value(name);
  if (!value) return fallback;
  std::optional<double> parsed = ParseDouble(*value);
  if (!parsed) return std::unexpected(InvalidArgument("--" + name + " needs a number, got '" + *value + "'"));
  return *parsed;
}

Result<std::vector<uint32_t>> Flags::TokenList(const std::string& name) const {
  Result<std::string> text = Required(name);
  if (!text) return std::unexpected(text.error());
  std::vector<uint32_t> ids;
  // Split by hand: getline would drop a trailing empty item ("1,2,") while
  // refusing an inner one ("1,,2").
  std::string_view rest = *text;
  while (true) {
    const size_t comma = rest.find(',');
    const std::string_view item = rest.substr(0, comma);
    const std::optional<uint64_t> id = ParseDecimalU64(item);
    if (!id || *id > UINT32_MAX) {
      return std::unexpected(InvalidArgument("--" + name + " needs comma-separated token ids, got '" +
                                             std::string(item) + "' in '" + *text + "'"));
    }
    ids.push_back(static_cast<uint32_t>(*id));
    if (comma == std::string_view::npos) break;
    rest = rest.substr(comma + 1);
  }
  return ids;
}

std::string Usage(const std::string& synopsis, std::span<const FlagSpec> specs) {
  std::string text = "Usage: " + synopsis + "\n";
  for (const FlagSpec& spec : specs) {
    std::string left = std::string("  --") + spec.name + (spec.takes_value ? " VALUE" : "");
    if (left.size() < 28) left.append(28 - left.size(), ' ');
    text += left + spec.help + "\n";
  }
  return text;
}

}  // namespace kvrt::cli
