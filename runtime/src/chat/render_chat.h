// Writing a conversation in one chat format, byte for byte as llama.cpp's
// llm_chat_apply_template writes it (b4747). Formats differ in what they do with
// roles they do not know, whether they trim contents (C-locale whitespace) and
// whether they have a generation prompt; this is llama.cpp's behaviour in each,
// not a guess at what the model's Jinja text would do.
#pragma once

#include <span>
#include <string>

#include "chat/chat_formats.h"
#include "kvrt/chat.h"

namespace kvrt::chat {

// Throws only std::bad_alloc / std::length_error.
std::string RenderChat(ChatFormat format, std::span<const ChatMessage> messages,
                       bool add_generation_prompt);

}  // namespace kvrt::chat
