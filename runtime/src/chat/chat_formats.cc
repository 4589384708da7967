// The names and the detection rules of llama.cpp b4747's src/llama-chat.cpp.
#include "chat/chat_formats.h"

#include <array>
#include <iterator>

namespace kvrt::chat {
namespace {

using F = ChatFormat;

constexpr NamedChatFormat kNames[] = {
    {"chatglm3", F::kChatglm3},
    {"chatglm4", F::kChatglm4},
    {"chatml", F::kChatml},
    {"command-r", F::kCommandR},
    {"deepseek", F::kDeepseek},
    {"deepseek2", F::kDeepseek2},
    {"deepseek3", F::kDeepseek3},
    {"exaone3", F::kExaone3},
    {"falcon3", F::kFalcon3},
    {"gemma", F::kGemma},
    {"gigachat", F::kGigachat},
    {"glmedge", F::kGlmedge},
    {"granite", F::kGranite},
    {"llama2", F::kLlama2},
    {"llama2-sys", F::kLlama2Sys},
    {"llama2-sys-bos", F::kLlama2SysBos},
    {"llama2-sys-strip", F::kLlama2SysStrip},
    {"llama3", F::kLlama3},
    {"megrez", F::kMegrez},
    {"minicpm", F::kMinicpm},
    {"mistral-v1", F::kMistralV1},
    {"mistral-v3", F::kMistralV3},
    {"mistral-v3-tekken", F::kMistralV3Tekken},
    {"mistral-v7", F::kMistralV7},
    {"monarch", F::kMonarch},
    {"openchat", F::kOpenchat},
    {"orion", F::kOrion},
    {"phi3", F::kPhi3},
    {"phi4", F::kPhi4},
    {"rwkv-world", F::kRwkvWorld},
    {"vicuna", F::kVicuna},
    {"vicuna-orca", F::kVicunaOrca},
    {"zephyr", F::kZephyr},
};

constexpr auto kNameList = [] {
  std::array<std::string_view, std::size(kNames)> names{};
  for (size_t i = 0; i < names.size(); ++i) names[i] = kNames[i].name;
  return names;
}();

// The Mistral and Llama 2 family: "[INST]" in the text (or a text that starts
// with "mistral"), told apart by their own markers.
ChatFormat InstFormat(std::string_view text) {
  const auto has = [&](std::string_view marker) { return text.find(marker) != text.npos; };
  if (has("[SYSTEM_PROMPT]")) return F::kMistralV7;
  // Mistral's official v1, v3 and v3-tekken templates.
  if (has("' [INST] ' + system_message") || has("[AVAILABLE_TOOLS]")) {
    if (has(" [INST]")) return F::kMistralV1;
    if (has("\"[INST]\"")) return F::kMistralV3Tekken;
    return F::kMistralV3;
  }
  if (has("content.strip()")) return F::kLlama2SysStrip;
  if (has("bos_token + '[INST]")) return F::kLlama2SysBos;
  if (has("<<SYS>>")) return F::kLlama2Sys;
  return F::kLlama2;
}

}  // namespace

std::span<const NamedChatFormat> ChatFormatNames() { return kNames; }
std::span<const std::string_view> ChatFormatNameList() { return kNameList; }

std::string_view ChatFormatName(ChatFormat format) {
  for (const NamedChatFormat& named : kNames) {
    if (named.format == format) return named.name;
  }
  return {};
}

std::optional<ChatFormat> ChatFormatNamed(std::string_view name) {
  for (const NamedChatFormat& named : kNames) {
    if (named.name == name) return named.format;
  }
  return std::nullopt;
}

std::optional<ChatFormat> DetectChatFormat(std::string_view text) {
  if (const std::optional<ChatFormat> named = ChatFormatNamed(text)) return named;
  const auto has = [&](std::string_view marker) { return text.find(marker) != text.npos; };
  if (has("<|im_start|>")) return has("<|im_sep|>") ? F::kPhi4 : F::kChatml;
  if (text.starts_with("mistral") || has("[INST]")) return InstFormat(text);
  if (has("<|assistant|>") && has("<|end|>")) return F::kPhi3;
  if (has("<|assistant|>") && has("<|user|>")) return has("</s>") ? F::kFalcon3 : F::kGlmedge;
  if (has("<|user|>") && has("<|endoftext|>")) return F::kZephyr;
  if (has("bos_token + message['role']")) return F::kMonarch;
  if (has("<start_of_turn>")) return F::kGemma;
  if (has(R"('\n\nAssistant: ' + eos_token)")) return F::kOrion;
  if (has("GPT4 Correct ")) return F::kOpenchat;
  if (has("USER: ") && has("ASSISTANT: ")) return has("SYSTEM: ") ? F::kVicunaOrca : F::kVicuna;
  if (has("### Instruction:") && has("<|EOT|>")) return F::kDeepseek;
  if (has("<|START_OF_TURN_TOKEN|>") && has("<|USER_TOKEN|>")) return F::kCommandR;
  if (has("<|start_header_id|>") && has("<|end_header_id|>")) return F::kLlama3;
  if (has("[gMASK]sop")) return F::kChatglm3;
  if (has("[gMASK]<sop>")) return F::kChatglm4;
  if (has("<\xE7\x94\xA8\xE6\x88\xB7>")) return F::kMinicpm;  // "<用户>"
  if (has("'Assistant: ' + message['content'] + eos_token")) return F::kDeepseek2;
  // "<｜Assistant｜>", "<｜User｜>", "<｜end▁of▁sentence｜>"
  if (has("<\xEF\xBD\x9C" "Assistant\xEF\xBD\x9C>") && has("<\xEF\xBD\x9CUser\xEF\xBD\x9C>") &&
      has("<\xEF\xBD\x9C" "end\xE2\x96\x81of\xE2\x96\x81sentence\xEF\xBD\x9C>")) {
    return F::kDeepseek3;
  }
  if (has("[|system|]") && has("[|assistant|]") && has("[|endofturn|]")) return F::kExaone3;
  if (has("rwkv-world")) return F::kRwkvWorld;
  if (has("<|start_of_role|>")) return F::kGranite;
  if (has("message['role'] + additional_special_tokens[0] + message['content'] + "
          "additional_special_tokens[1]")) {
    return F::kGigachat;
  }
  if (has("<|role_start|>")) return F::kMegrez;
  return std::nullopt;
}

}  // namespace kvrt::chat
