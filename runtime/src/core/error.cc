#include "kvrt/error.h"

#include <array>
#include <utility>

#include "core/rust_format.h"

namespace kvrt {
namespace {

// Index = ErrorCode value: generated from the same list as the enum.
constexpr std::array<std::string_view, static_cast<size_t>(ErrorCode::kCount)> kNames = {
#define KVRT_ERROR_NAME(name) #name,
    KVRT_ERROR_CODES(KVRT_ERROR_NAME)
#undef KVRT_ERROR_NAME
};

void AppendValue(std::string& out, const FieldValue& value) {
  struct Visitor {
    std::string& out;
    void operator()(uint64_t v) const { out += std::to_string(v); }
    void operator()(int64_t v) const { out += std::to_string(v); }
    void operator()(double v) const { out += RustDebug(v); }
    void operator()(bool v) const { out += v ? "true" : "false"; }
    void operator()(const std::string& v) const { out += RustQuoted(v); }
    void operator()(const Identifier& v) const { out += v.name; }
    void operator()(const std::vector<std::string>& v) const {
      out += '[';
      for (size_t i = 0; i < v.size(); ++i) {
        if (i) out += ", ";
        out += RustQuoted(v[i]);
      }
      out += ']';
    }
    void operator()(const std::optional<uint64_t>& v) const {
      out += v ? "Some(" + std::to_string(*v) + ")" : std::string("None");
    }
  };
  std::visit(Visitor{out}, value);
}

bool IsTuplePayload(const std::vector<ErrorField>& fields) {
  return fields.size() == 1 && fields[0].name[0] == '\0';
}

}  // namespace

std::string_view ErrorName(ErrorCode code) {
  const auto index = static_cast<size_t>(code);
  return index < kNames.size() ? kNames[index] : std::string_view("Unknown");
}

Error::Error(ErrorCode code, std::vector<ErrorField> fields, std::string message)
    : levels_{ErrorLevel{code, std::move(fields)}}, message_(std::move(message)) {}

bool Error::Has(ErrorCode code) const {
  for (const ErrorLevel& level : levels_) {
    if (level.code == code) return true;
  }
  return false;
}

const FieldValue* Error::Field(std::string_view field_name) const {
  for (auto level = levels_.rbegin(); level != levels_.rend(); ++level) {
    for (const ErrorField& field : level->fields) {
      if (field_name == field.name) return &field.value;
    }
  }
  return nullptr;
}

std::optional<uint64_t> Error::U64(std::string_view field_name) const {
  const FieldValue* value = Field(field_name);
  if (value == nullptr) return std::nullopt;
  if (const auto* u = std::get_if<uint64_t>(value)) return *u;
  return std::nullopt;
}

std::string Error::Debug() const {
  // Render innermost first, then wrap outwards: `Outer(inner)` for a payload-free
  // wrapper, `Outer { field: v, source: inner }` for a wrapper with its own fields.
  std::string inner;
  for (auto level = levels_.rbegin(); level != levels_.rend(); ++level) {
    std::string text(ErrorName(level->code));
    const bool has_source = !inner.empty();
    if (IsTuplePayload(level->fields) && !has_source) {
      text += '(';
      AppendValue(text, level->fields[0].value);
      text += ')';
    } else if (!level->fields.empty()) {
      text += " { ";
      for (size_t i = 0; i < level->fields.size(); ++i) {
        if (i) text += ", ";
        text += level->fields[i].name;
        text += ": ";
        AppendValue(text, level->fields[i].value);
      }
      if (has_source) text += ", source: " + inner;
      text += " }";
    } else if (has_source) {
      text += "(" + inner + ")";
    }
    inner = std::move(text);
  }
  return inner;
}

Error Error::Wrap(ErrorCode outer, std::vector<ErrorField> fields, std::string message) && {
  levels_.insert(levels_.begin(), ErrorLevel{outer, std::move(fields)});
  if (!message.empty()) message_ = std::move(message);
  return std::move(*this);
}

}  // namespace kvrt
