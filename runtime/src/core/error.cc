#include "kvrt/error.h"

#include <algorithm>
#include <array>
#include <string_view>
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

// Messages are one bounded line of text, whatever a file put into them (issue
// 38: an architecture "qwen2\nerror: Io: injected" forged a second error line on
// stderr, a NUL cut the message in C, a 1 MB tensor name made a 1 MB line).
// Every message passes through OneLine when an Error is made or rewrapped, so
// no caller has to remember it. Control characters become escapes (\n, \0,
// \x1b; U+0080–U+009F as \u{85}), bytes that are not UTF-8 become \xff, and a
// message longer than kMaxMessageBytes keeps its head and its tail around "…"
// (the tail usually says what is wrong). Backslashes stay as they are: the point
// is one safe line for a terminal or a log, not a reversible encoding.
constexpr size_t kMaxMessageBytes = 1024;
constexpr size_t kKeptTailBytes = 256;

// The length of the valid UTF-8 sequence at text[i], or 0.
size_t Utf8Length(std::string_view text, size_t i) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char lead = byte(i);
  size_t length = 0;
  uint32_t code_point = 0;
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2;
    code_point = lead & 0x1Fu;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3;
    code_point = lead & 0x0Fu;
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4;
    code_point = lead & 0x07u;
  } else {
    return 0;
  }
  if (i + length > text.size()) return 0;
  for (size_t k = 1; k < length; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80) return 0;
    code_point = (code_point << 6) | (byte(i + k) & 0x3Fu);
  }
  const bool overlong = (length == 3 && code_point < 0x800) || (length == 4 && code_point < 0x10000);
  const bool surrogate = code_point >= 0xD800 && code_point <= 0xDFFF;
  if (overlong || surrogate || code_point > 0x10FFFF) return 0;
  return length;
}

void AppendHexEscape(std::string& out, unsigned char byte) {
  static constexpr char kDigits[] = "0123456789abcdef";
  out += "\\x";
  out += kDigits[byte >> 4];
  out += kDigits[byte & 0xF];
}

std::string Escaped(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    const auto byte = static_cast<unsigned char>(text[i]);
    if (byte >= 0x20 && byte < 0x7F) {
      out += static_cast<char>(byte);
      ++i;
      continue;
    }
    switch (byte) {
      case '\n': out += "\\n"; ++i; continue;
      case '\r': out += "\\r"; ++i; continue;
      case '\t': out += "\\t"; ++i; continue;
      case '\0': out += "\\0"; ++i; continue;
      default: break;
    }
    const size_t length = byte < 0x80 ? 0 : Utf8Length(text, i);
    if (length == 0) {  // another control character, or not UTF-8
      AppendHexEscape(out, byte);
      ++i;
    } else if (length == 2 && byte == 0xC2 && static_cast<unsigned char>(text[i + 1]) < 0xA0) {
      static constexpr char kDigits[] = "0123456789abcdef";  // a C1 control, U+0080..U+009F
      const auto code = static_cast<unsigned char>(text[i + 1]);
      out += "\\u{";
      out += kDigits[code >> 4];
      out += kDigits[code & 0xF];
      out += '}';
      i += 2;
    } else {
      out.append(text.substr(i, length));
      i += length;
    }
  }
  return out;
}

bool IsContinuationByte(char c) { return (static_cast<unsigned char>(c) & 0xC0) == 0x80; }

// The start of the UTF-8 character of valid `text` at or before `at`, and at or
// after it: cutting there never splits a character.
size_t CharacterStartAtOrBefore(std::string_view text, size_t at) {
  while (at > 0 && at < text.size() && IsContinuationByte(text[at])) --at;
  return at;
}
size_t CharacterStartAtOrAfter(std::string_view text, size_t at) {
  while (at < text.size() && IsContinuationByte(text[at])) ++at;
  return at;
}

std::string OneLine(std::string message) {
  const bool plain = std::all_of(message.begin(), message.end(), [](char c) {
    const auto byte = static_cast<unsigned char>(c);
    return byte >= 0x20 && byte < 0x7F;
  });
  if (plain && message.size() <= kMaxMessageBytes) return message;  // the common case, untouched
  std::string line = plain ? std::move(message) : Escaped(message);
  if (line.size() <= kMaxMessageBytes) return line;
  constexpr std::string_view kEllipsis = "…";
  const size_t head = CharacterStartAtOrBefore(line, kMaxMessageBytes - kKeptTailBytes - kEllipsis.size());
  const size_t tail = CharacterStartAtOrAfter(line, line.size() - kKeptTailBytes);
  return line.substr(0, head) + std::string(kEllipsis) + line.substr(tail);
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
    : levels_{ErrorLevel{code, std::move(fields)}}, message_(OneLine(std::move(message))) {}

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
  if (!message.empty()) message_ = OneLine(std::move(message));
  return std::move(*this);
}

}  // namespace kvrt
