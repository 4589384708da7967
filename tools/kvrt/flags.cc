#include "flags.h"

#include <string_view>

#include "number_text.h"

namespace kvrt::cli {

Error InvalidArgument(const std::string& message) {
  return Error(ErrorCode::kInvalidArgument, {{"", message}}, message);
}

namespace {

const FlagSpec* LongFlag(std::span<const FlagSpec> specs, std::string_view name) {
  for (const FlagSpec& spec : specs) {
    if (name == spec.name || (spec.alias != nullptr && name == spec.alias)) return &spec;
  }
  return nullptr;
}

// `-x` or a dash name `-xy` naming a flag of `specs` (a word like "-1" or "-" is a value).
const FlagSpec* ShortFlag(std::span<const FlagSpec> specs, std::string_view arg) {
  if (arg.size() < 2 || arg[0] != '-' || arg[1] == '-') return nullptr;
  for (const FlagSpec& spec : specs) {
    if (arg.size() == 2 && spec.short_name != 0 && arg[1] == spec.short_name) return &spec;
    if (spec.dash_name != nullptr && arg == spec.dash_name) return &spec;
  }
  return nullptr;
}

}  // namespace

Result<Flags> Flags::Parse(std::span<char* const> args, std::span<const FlagSpec> specs,
                           size_t max_positional) {
  Flags flags;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string arg = args[i];
    const FlagSpec* spec = ShortFlag(specs, arg);
    std::optional<std::string> inline_value;
    if (spec == nullptr) {
      if (arg.rfind("--", 0) != 0 || arg == "--") {
        if (flags.positional_.size() == max_positional) {
          return std::unexpected(InvalidArgument("unexpected argument '" + arg + "'"));
        }
        flags.positional_.push_back(arg);
        continue;
      }
      std::string name = arg.substr(2);
      if (const size_t eq = name.find('='); eq != std::string::npos) {
        inline_value = name.substr(eq + 1);
        name = name.substr(0, eq);
      }
      spec = LongFlag(specs, name);
      if (spec == nullptr) return std::unexpected(InvalidArgument("unknown flag --" + name));
    }
    const std::string name = spec->name;
    if (flags.values_.count(name) && !spec->repeatable) {
      return std::unexpected(InvalidArgument("flag --" + name + " given twice"));
    }
    if (!spec->takes_value) {
      if (inline_value) return std::unexpected(InvalidArgument("flag --" + name + " takes no value"));
      flags.values_[name].push_back("");
      continue;
    }
    if (inline_value) {
      flags.values_[name].push_back(*inline_value);
    } else if (i + 1 < args.size() && std::string_view(args[i + 1]).substr(0, 2) != "--" &&
               ShortFlag(specs, args[i + 1]) == nullptr) {
      // A following `--flag` or `-x` is the next flag, not this one's value
      // (`--model --tokens 1`); a value that really starts with "--" is given as
      // --name=--value.
      flags.values_[name].push_back(args[++i]);
    } else {
      return std::unexpected(InvalidArgument("flag --" + name + " needs a value"));
    }
  }
  return flags;
}

std::optional<std::string> Flags::Value(const std::string& name) const {
  const auto it = values_.find(name);
  if (it == values_.end()) return std::nullopt;
  return it->second.back();
}

std::vector<std::string> Flags::Values(const std::string& name) const {
  const auto it = values_.find(name);
  if (it == values_.end()) return {};
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

Result<int64_t> Flags::CountOrAll(const std::string& name, int64_t fallback) const {
  std::optional<std::string> value = Value(name);
  if (!value) return fallback;
  if (*value == "-1") return -1;
  std::optional<uint64_t> parsed = ParseDecimalU64(*value);
  if (!parsed || *parsed > static_cast<uint64_t>(INT64_MAX)) {
    return std::unexpected(
        InvalidArgument("--" + name + " needs a decimal unsigned integer or -1, got '" + *value + "'"));
  }
  return static_cast<int64_t>(*parsed);
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
    std::string left = "  ";
    if (spec.short_name != 0) left += std::string("-") + spec.short_name + ", ";
    if (spec.dash_name != nullptr) left += std::string(spec.dash_name) + ", ";
    left += std::string("--") + spec.name;
    if (spec.alias != nullptr) left += std::string(", --") + spec.alias;
    if (spec.takes_value) left += " VALUE";
    left.append(left.size() < 28 ? 28 - left.size() : 1, ' ');
    text += left + spec.help + "\n";
  }
  return text;
}

}  // namespace kvrt::cli
