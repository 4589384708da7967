// Each format as llama.cpp b4747's llm_chat_apply_template writes it.
#include "chat/render_chat.h"

#include <string_view>
#include <utility>

namespace kvrt::chat {
namespace {

using F = ChatFormat;

constexpr std::string_view kDeepseekEnd = "<\xEF\xBD\x9C" "end\xE2\x96\x81of\xE2\x96\x81sentence\xEF\xBD\x9C>";

bool IsSpace(char c) {  // C-locale isspace, as llama.cpp's trim uses it
  return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

std::string_view Trim(std::string_view text) {
  while (!text.empty() && IsSpace(text.front())) text.remove_prefix(1);
  while (!text.empty() && IsSpace(text.back())) text.remove_suffix(1);
  return text;
}

// A string builder that reads like the format it writes.
class Out {
 public:
  Out& operator<<(std::string_view part) {
    text_ += part;
    return *this;
  }
  std::string Take() { return std::move(text_); }

 private:
  std::string text_;
};

// Formats that write every message the same way, with the role in it.
void RenderUniform(F format, std::span<const ChatMessage> messages, bool add_prompt, Out& out) {
  if (format == F::kChatglm3) out << "[gMASK]sop";
  if (format == F::kChatglm4) out << "[gMASK]<sop>";
  for (const ChatMessage& m : messages) {
    switch (format) {
      case F::kChatml:
        out << "<|im_start|>" << m.role << "\n" << m.content << "<|im_end|>\n";
        break;
      case F::kPhi3:
        out << "<|" << m.role << "|>\n" << m.content << "<|end|>\n";
        break;
      case F::kPhi4:
        out << "<|im_start|>" << m.role << "<|im_sep|>" << m.content << "<|im_end|>";
        break;
      case F::kFalcon3:
        out << "<|" << m.role << "|>\n" << m.content << "\n";
        break;
      case F::kZephyr:
        out << "<|" << m.role << "|>\n" << m.content << "<|endoftext|>\n";
        break;
      case F::kLlama3:
        out << "<|start_header_id|>" << m.role << "<|end_header_id|>\n\n" << Trim(m.content)
            << "<|eot_id|>";
        break;
      case F::kGlmedge:
      case F::kChatglm4:
        out << "<|" << m.role << "|>\n" << m.content;
        break;
      case F::kChatglm3:
        out << "<|" << m.role << "|>\n " << m.content;
        break;
      case F::kMegrez:
        out << "<|role_start|>" << m.role << "<|role_end|>" << m.content << "<|turn_end|>";
        break;
      case F::kGranite:
        out << "<|start_of_role|>" << m.role << "<|end_of_role|>";
        if (m.role == "assistant_tool_call") out << "<|tool_call|>";
        out << m.content << "<|end_of_text|>\n";
        break;
      default:
        break;
    }
  }
  if (!add_prompt) return;
  switch (format) {
    case F::kChatml: out << "<|im_start|>assistant\n"; break;
    case F::kPhi3:
    case F::kFalcon3:
    case F::kZephyr: out << "<|assistant|>\n"; break;
    case F::kPhi4: out << "<|im_start|>assistant<|im_sep|>"; break;
    case F::kLlama3: out << "<|start_header_id|>assistant<|end_header_id|>\n\n"; break;
    case F::kGlmedge:
    case F::kChatglm4:
    case F::kChatglm3: out << "<|assistant|>"; break;
    case F::kMegrez: out << "<|role_start|>assistant<|role_end|>"; break;
    case F::kGranite: out << "<|start_of_role|>assistant<|end_of_role|>\n"; break;
    default: break;
  }
}

// The formats that write each role its own way; a role they do not name is
// written as the last branch of llama.cpp's chain (an assistant) or not at all.
void RenderByRole(F format, std::span<const ChatMessage> messages, bool add_prompt, Out& out) {
  for (const ChatMessage& m : messages) {
    const bool system = m.role == "system", user = m.role == "user";
    const bool assistant = m.role == "assistant";
    switch (format) {
      case F::kMistralV7:
        if (system) {
          out << "[SYSTEM_PROMPT] " << m.content << "[/SYSTEM_PROMPT]";
        } else if (user) {
          out << "[INST] " << m.content << "[/INST]";
        } else {
          out << " " << m.content << "</s>";
        }
        break;
      case F::kVicuna:
      case F::kVicunaOrca:
        if (system) {
          if (format == F::kVicunaOrca) {
            out << "SYSTEM: " << m.content << "\n";
          } else {
            out << m.content << "\n\n";
          }
        } else if (user) {
          out << "USER: " << m.content << "\n";
        } else if (assistant) {
          out << "ASSISTANT: " << m.content << "</s>\n";
        }
        break;
      case F::kDeepseek:
        if (system) {
          out << m.content;
        } else if (user) {
          out << "### Instruction:\n" << m.content << "\n";
        } else if (assistant) {
          out << "### Response:\n" << m.content << "\n<|EOT|>\n";
        }
        break;
      case F::kCommandR:
        if (system) {
          out << "<|START_OF_TURN_TOKEN|><|SYSTEM_TOKEN|>" << Trim(m.content) << "<|END_OF_TURN_TOKEN|>";
        } else if (user) {
          out << "<|START_OF_TURN_TOKEN|><|USER_TOKEN|>" << Trim(m.content) << "<|END_OF_TURN_TOKEN|>";
        } else if (assistant) {
          out << "<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>" << Trim(m.content)
              << "<|END_OF_TURN_TOKEN|>";
        }
        break;
      case F::kMinicpm:
        if (user) {
          out << "<\xE7\x94\xA8\xE6\x88\xB7>" << Trim(m.content) << "<AI>";  // "<用户>"
        } else {
          out << Trim(m.content);
        }
        break;
      case F::kDeepseek2:
        if (system) {
          out << m.content << "\n\n";
        } else if (user) {
          out << "User: " << m.content << "\n\n";
        } else if (assistant) {
          out << "Assistant: " << m.content << kDeepseekEnd;
        }
        break;
      case F::kDeepseek3:
        if (system) {
          out << m.content << "\n\n";
        } else if (user) {
          out << "<\xEF\xBD\x9CUser\xEF\xBD\x9C>" << m.content;
        } else if (assistant) {
          out << "<\xEF\xBD\x9C" "Assistant\xEF\xBD\x9C>" << m.content << kDeepseekEnd;
        }
        break;
      case F::kExaone3:
        if (system) {
          out << "[|system|]" << Trim(m.content) << "[|endofturn|]\n";
        } else if (user) {
          out << "[|user|]" << Trim(m.content) << "\n";
        } else if (assistant) {
          out << "[|assistant|]" << Trim(m.content) << "[|endofturn|]\n";
        }
        break;
      case F::kRwkvWorld:
        if (user) {
          out << "User: " << m.content << "\n\nAssistant:";
        } else {
          out << m.content << "\n\n";
        }
        break;
      default:
        break;
    }
  }
  if (!add_prompt) return;
  switch (format) {
    case F::kVicuna:
    case F::kVicunaOrca: out << "ASSISTANT:"; break;
    case F::kDeepseek: out << "### Response:\n"; break;
    case F::kCommandR: out << "<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>"; break;
    case F::kDeepseek2: out << "Assistant:"; break;
    case F::kDeepseek3: out << "<\xEF\xBD\x9C" "Assistant\xEF\xBD\x9C>"; break;
    case F::kExaone3: out << "[|assistant|]"; break;
    default: break;
  }
}

// Mistral's v1, v3 and v3-tekken: "[INST]" opens a turn that an assistant
// message closes; they differ only in spaces.
void RenderMistral(F format, std::span<const ChatMessage> messages, Out& out) {
  const std::string_view leading = format == F::kMistralV1 ? " " : "";
  const std::string_view trailing = format == F::kMistralV3Tekken ? "" : " ";
  const bool trim_assistant = format == F::kMistralV3;
  bool inside_turn = false;
  for (const ChatMessage& m : messages) {
    if (!inside_turn) {
      out << leading << "[INST]" << trailing;
      inside_turn = true;
    }
    if (m.role == "system") {
      out << m.content << "\n\n";
    } else if (m.role == "user") {
      out << m.content << leading << "[/INST]";
    } else {
      out << trailing << (trim_assistant ? Trim(m.content) : std::string_view(m.content)) << "</s>";
      inside_turn = false;
    }
  }
}

// Llama 2 and its variants: with a system block, with BOS between turns, with
// trimmed contents.
void RenderLlama2(F format, std::span<const ChatMessage> messages, Out& out) {
  const bool system_block = format != F::kLlama2;
  const bool bos_between_turns = format == F::kLlama2SysBos;
  const bool trim = format == F::kLlama2SysStrip;
  bool inside_turn = true;  // the first "[INST] " has no BOS before it
  out << "[INST] ";
  for (const ChatMessage& m : messages) {
    const std::string_view content = trim ? Trim(m.content) : std::string_view(m.content);
    if (!inside_turn) {
      inside_turn = true;
      out << (bos_between_turns ? "<s>[INST] " : "[INST] ");
    }
    if (m.role == "system") {
      if (system_block) {
        out << "<<SYS>>\n" << content << "\n<</SYS>>\n\n";
      } else {
        out << content << "\n";
      }
    } else if (m.role == "user") {
      out << content << " [/INST]";
    } else {
      out << content << "</s>";
      inside_turn = false;
    }
  }
}

// Formats that carry state across messages: a system prompt merged into the next
// user turn, a BOS before every message but the first, a role capitalised.
void RenderStateful(F format, std::span<const ChatMessage> messages, bool add_prompt, Out& out) {
  switch (format) {
    case F::kGemma: {
      // Gemma has no system turn: its text opens the next user turn.
      std::string_view system_prompt;
      for (const ChatMessage& m : messages) {
        if (m.role == "system") {
          system_prompt = Trim(m.content);
          continue;
        }
        const std::string_view role = m.role == "assistant" ? "model" : std::string_view(m.role);
        out << "<start_of_turn>" << role << "\n";
        if (!system_prompt.empty() && role != "model") {
          out << system_prompt << "\n\n";
          system_prompt = {};
        }
        out << Trim(m.content) << "<end_of_turn>\n";
      }
      if (add_prompt) out << "<start_of_turn>model\n";
      break;
    }
    case F::kOrion: {
      std::string_view system_prompt;
      for (const ChatMessage& m : messages) {
        if (m.role == "system") {
          system_prompt = m.content;
        } else if (m.role == "user") {
          out << "Human: ";
          if (!system_prompt.empty()) {
            out << system_prompt << "\n\n";
            system_prompt = {};
          }
          out << m.content << "\n\nAssistant: </s>";
        } else {
          out << m.content << "</s>";
        }
      }
      break;
    }
    case F::kMonarch:
      for (size_t i = 0; i < messages.size(); ++i) {
        out << (i == 0 ? "" : "<s>") << messages[i].role << "\n" << messages[i].content << "</s>\n";
      }
      if (add_prompt) out << "<s>assistant\n";
      break;
    case F::kOpenchat:
      for (const ChatMessage& m : messages) {
        if (m.role == "system") {
          out << m.content << "<|end_of_turn|>";
          continue;
        }
        std::string role = m.role;
        if (!role.empty() && role[0] >= 'a' && role[0] <= 'z') role[0] = static_cast<char>(role[0] - 'a' + 'A');
        out << "GPT4 Correct " << role << ": " << m.content << "<|end_of_turn|>";
      }
      if (add_prompt) out << "GPT4 Correct Assistant:";
      break;
    case F::kGigachat: {
      const bool has_system = !messages.empty() && messages[0].role == "system";
      out << "<s>";
      if (has_system) out << messages[0].content << "<|message_sep|>";
      for (size_t i = has_system ? 1 : 0; i < messages.size(); ++i) {
        if (messages[i].role == "user") {
          out << "user<|role_sep|>" << messages[i].content << "<|message_sep|>"
              << "available functions<|role_sep|>[]<|message_sep|>";
        } else if (messages[i].role == "assistant") {
          out << "assistant<|role_sep|>" << messages[i].content << "<|message_sep|>";
        }
      }
      if (add_prompt) out << "assistant<|role_sep|>";
      break;
    }
    default:
      break;
  }
}

}  // namespace

std::string RenderChat(ChatFormat format, std::span<const ChatMessage> messages,
                       bool add_generation_prompt) {
  Out out;
  switch (format) {
    case F::kChatml:
    case F::kPhi3:
    case F::kPhi4:
    case F::kFalcon3:
    case F::kZephyr:
    case F::kLlama3:
    case F::kGlmedge:
    case F::kChatglm3:
    case F::kChatglm4:
    case F::kMegrez:
    case F::kGranite:
      RenderUniform(format, messages, add_generation_prompt, out);
      break;
    case F::kMistralV7:
    case F::kVicuna:
    case F::kVicunaOrca:
    case F::kDeepseek:
    case F::kCommandR:
    case F::kMinicpm:
    case F::kDeepseek2:
    case F::kDeepseek3:
    case F::kExaone3:
    case F::kRwkvWorld:
      RenderByRole(format, messages, add_generation_prompt, out);
      break;
    case F::kMistralV1:
    case F::kMistralV3:
    case F::kMistralV3Tekken:
      RenderMistral(format, messages, out);
      break;
    case F::kLlama2:
    case F::kLlama2Sys:
    case F::kLlama2SysBos:
    case F::kLlama2SysStrip:
      RenderLlama2(format, messages, out);
      break;
    case F::kGemma:
    case F::kOrion:
    case F::kMonarch:
    case F::kOpenchat:
    case F::kGigachat:
      RenderStateful(format, messages, add_generation_prompt, out);
      break;
  }
  return out.Take();
}

}  // namespace kvrt::chat
