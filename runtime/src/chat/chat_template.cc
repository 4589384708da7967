// kvrt::ChatTemplate (kvrt/chat.h) over the formats of chat_formats.h and
// render_chat.h.
#include "kvrt/chat.h"

#include <new>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>

#include "chat/chat_formats.h"
#include "chat/render_chat.h"

namespace kvrt {
namespace {

constexpr size_t kExcerptBytes = 60;

std::string SupportedNames() {
  std::string names;
  for (const std::string_view name : chat::ChatFormatNameList()) {
    if (!names.empty()) names += ", ";
    names += name;
  }
  return names;
}

// The start of a template for an error message: its first line, cut short
// (before a character, not inside one).
std::string Excerpt(std::string_view text) {
  const std::string_view line = text.substr(0, text.find('\n'));
  if (line.size() <= kExcerptBytes) return std::string(line);
  size_t cut = kExcerptBytes;
  while (cut > 0 && (static_cast<uint8_t>(line[cut]) & 0xC0) == 0x80) --cut;
  return std::string(line.substr(0, cut)) + "...";
}

Error Unsupported(std::string_view template_text, std::string_view what) {
  return Error(ErrorCode::kUnsupportedChatTemplate, {{"template", Excerpt(template_text)}},
               std::string(what) + " (kvrt knows llama.cpp's formats: " + SupportedNames() + ")");
}

Result<void> CheckNoNul(std::span<const ChatMessage> messages) {
  for (size_t i = 0; i < messages.size(); ++i) {
    for (const auto& [field, text] : {std::pair{"role", &messages[i].role},
                                      std::pair{"content", &messages[i].content}}) {
      if (text->find('\0') != std::string::npos) {
        return Fail(ErrorCode::kInvalidArgument, {{"message", uint64_t{i}}},
                    "chat message " + std::to_string(i) + "'s " + field + " holds a NUL byte");
      }
    }
  }
  return {};
}

}  // namespace

Result<ChatTemplate> ChatTemplate::FromName(std::string_view name) {
  const std::optional<chat::ChatFormat> format = chat::ChatFormatNamed(name);
  if (!format) return Fail(Unsupported(name, "\"" + Excerpt(name) + "\" is not a chat template name"));
  return ChatTemplate(static_cast<uint8_t>(*format));
}

Result<ChatTemplate> ChatTemplate::Detect(std::string_view template_text) {
  const std::optional<chat::ChatFormat> format = chat::DetectChatFormat(template_text);
  if (!format) {
    return Fail(Unsupported(template_text, "the chat template \"" + Excerpt(template_text) +
                                               "\" is none of the formats kvrt recognises"));
  }
  return ChatTemplate(static_cast<uint8_t>(*format));
}

Result<ChatTemplate> ChatTemplate::ForTokenizer(const Tokenizer& tokenizer) {
  const std::optional<std::string_view> text = tokenizer.chat_template();
  if (!text) {
    return Fail(ErrorCode::kMissingKey, {{"key", std::string("tokenizer.chat_template")}},
                "the model file has no chat template (tokenizer.chat_template)");
  }
  return Detect(*text);
}

std::span<const std::string_view> ChatTemplate::Names() { return chat::ChatFormatNameList(); }

std::string_view ChatTemplate::name() const {
  return chat::ChatFormatName(static_cast<chat::ChatFormat>(format_));
}

Result<std::string> ChatTemplate::Apply(std::span<const ChatMessage> messages,
                                        bool add_generation_prompt) const {
  if (Result<void> clean = CheckNoNul(messages); !clean) return Fail(std::move(clean.error()));
  try {
    return chat::RenderChat(static_cast<chat::ChatFormat>(format_), messages,
                            add_generation_prompt);
  } catch (const std::bad_alloc&) {
  } catch (const std::length_error&) {
  }
  return Fail(ErrorCode::kAllocationFailed, {{"context", std::string("chat prompt")}},
              "could not allocate the chat prompt");
}

}  // namespace kvrt
