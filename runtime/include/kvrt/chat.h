// Chat templates: the prompt text a chat model expects for a conversation.
//
//   kvrt::Result<kvrt::ChatTemplate> chat = kvrt::ChatTemplate::ForTokenizer(tokenizer);
//   std::vector<kvrt::ChatMessage> messages = {{"system", "Be brief."}, {"user", "Hi!"}};
//   kvrt::Result<std::string> prompt = chat->Apply(messages);  // ends with the assistant's header
//   // encode with SpecialTokens::kParse, generate until one of
//   // tokenizer.end_of_generation_ids(), append {"assistant", reply}, repeat.
//
// kvrt does what llama.cpp's llama_chat_apply_template does (release b4747):
// no Jinja engine, but a list of built-in formats (chatml, llama3, llama2,
// mistral-v7, phi3, gemma, ...), one of which a model's Jinja template is
// recognised as by marker substrings ("<|im_start|>" is ChatML). The rendered
// text is byte-identical to llama.cpp's, including where llama.cpp differs from
// what the Jinja text would render (its llama3 format trims every message and
// writes no "<|begin_of_text|>": the tokenizer adds BOS).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "kvrt/error.h"
#include "kvrt/tokenizer.h"

namespace kvrt {

struct ChatMessage {
  std::string role;  // "system", "user", "assistant" (a format may know others)
  std::string content;
};

class ChatTemplate {
 public:
  // The built-in format called `name` ("chatml", "llama3", "mistral-v7", ...).
  // UnsupportedChatTemplate, whose message lists the names, otherwise.
  static Result<ChatTemplate> FromName(std::string_view name);
  // The format a model's template text stands for, recognised as llama.cpp
  // recognises tokenizer.chat_template: a built-in name, else by its markers.
  // UnsupportedChatTemplate when it is none of them.
  static Result<ChatTemplate> Detect(std::string_view template_text);
  // Detect on the template the tokenizer's file carries; MissingKey{key:
  // "tokenizer.chat_template"} when it carries none.
  static Result<ChatTemplate> ForTokenizer(const Tokenizer& tokenizer);
  // The built-in names, in alphabetical order.
  static std::span<const std::string_view> Names();

  std::string_view name() const;

  // The prompt text of `messages`, followed, with `add_generation_prompt`, by
  // what opens the assistant's reply (in the formats that have such a text).
  // Roles and contents are bytes; one holding a NUL byte is InvalidArgument
  // (llama.cpp's C strings would cut it short there).
  Result<std::string> Apply(std::span<const ChatMessage> messages,
                            bool add_generation_prompt = true) const;

 private:
  explicit ChatTemplate(uint8_t format) : format_(format) {}
  uint8_t format_;
};

}  // namespace kvrt
