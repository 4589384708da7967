#include "flags.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <sstream>

namespace kvrt::cli {

Error InvalidArgument(const std::string& message) {
  return Error(ErrorCode::kInvalidArgument, {{"", message}}, message);
}

Result<Flags> Flags::Parse(std::span<char* const> args, std::span<const FlagSpec> specs) {
  Flags flags;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string arg = args[i];
    if (arg.rfind("--", 0) != 0 || arg == "--") {
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
    } else if (i + 1 < args.size()) {
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
  errno = 0;
  char* end = nullptr;
  const unsigned long long parsed = std::strtoull(value->c_str(), &end, 0);
  if (value->empty() || *end != '\0' || errno != 0 || value->front() == '-') {
    return std::unexpected(InvalidArgument("--" + name + " needs an unsigned integer, got '" + *value + "'"));
  }
  return parsed;
}

Result<double> Flags::Double(const std::string& name, double fallback) const {
  std::optional<std::string> value = Value(name);
  if (!value) return fallback;
  char* end = nullptr;
  const double parsed = std::strtod(value->c_str(), &end);
  if (value->empty() || *end != '\0') {
    return std::unexpected(InvalidArgument("--" + name + " needs a number, got '" + *value + "'"));
  }
  return parsed;
}

Result<std::vector<uint32_t>> Flags::TokenList(const std::string& name) const {
  Result<std::string> text = Required(name);
  if (!text) return std::unexpected(text.error());
  std::vector<uint32_t> ids;
  std::istringstream in(*text);
  for (std::string item; std::getline(in, item, ',');) {
    char* end = nullptr;
    errno = 0;
    const unsigned long long id = std::strtoull(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || errno != 0 || id > UINT32_MAX || item.front() == '-') {
      return std::unexpected(InvalidArgument("--" + name + " needs comma-separated token ids, got '" + item + "'"));
    }
    ids.push_back(static_cast<uint32_t>(id));
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
