// The chat formats llama.cpp's llama_chat_apply_template knows (b4747's
// built-in list), and how it recognises one: by its name, or in a model's Jinja
// template text by marker substrings.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

namespace kvrt::chat {

enum class ChatFormat : uint8_t {
  kChatml,
  kChatglm3,
  kChatglm4,
  kCommandR,
  kDeepseek,
  kDeepseek2,
  kDeepseek3,
  kExaone3,
  kFalcon3,
  kGemma,
  kGigachat,
  kGlmedge,
  kGranite,
  kLlama2,
  kLlama2Sys,
  kLlama2SysBos,
  kLlama2SysStrip,
  kLlama3,
  kMegrez,
  kMinicpm,
  kMistralV1,
  kMistralV3,
  kMistralV3Tekken,
  kMistralV7,
  kMonarch,
  kOpenchat,
  kOrion,
  kPhi3,
  kPhi4,
  kRwkvWorld,
  kVicuna,
  kVicunaOrca,
  kZephyr,
};

struct NamedChatFormat {
  std::string_view name;
  ChatFormat format;
};

// Every format under its llama.cpp name, in alphabetical order (the order of
// llama_chat_builtin_templates), and the names alone.
std::span<const NamedChatFormat> ChatFormatNames();
std::span<const std::string_view> ChatFormatNameList();

std::string_view ChatFormatName(ChatFormat format);

// The format called `name` exactly.
std::optional<ChatFormat> ChatFormatNamed(std::string_view name);

// llm_chat_detect_template: a name, else the first of llama.cpp's marker tests
// that `template_text` passes ("<|im_start|>" is ChatML, "<|start_header_id|>"
// with "<|end_header_id|>" Llama 3, ...); nullopt when none does.
std::optional<ChatFormat> DetectChatFormat(std::string_view template_text);

}  // namespace kvrt::chat
