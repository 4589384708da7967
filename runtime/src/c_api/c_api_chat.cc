// The C API's chat templates (kvrt/kvrt.h) over kvrt::ChatTemplate.
#include <cstdlib>
#include <cstring>
#include <new>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "c_api/c_api_internal.h"
#include "kvrt/chat.h"

using kvrt::c_api::Guard;
using kvrt::c_api::InvalidArgument;
using kvrt::c_api::MakeError;

extern "C" {

kvrt_error* kvrt_chat_apply_template(const kvrt_model* model, const char* tmpl,
                                     const kvrt_chat_message* messages, size_t count,
                                     int add_generation_prompt, char** text, size_t* length) {
  return Guard([&]() -> kvrt_error* {
    if ((messages == nullptr && count > 0) || text == nullptr || length == nullptr) {
      return InvalidArgument("kvrt_chat_apply_template needs the messages and two outputs");
    }
    if (tmpl == nullptr && model == nullptr) {
      return InvalidArgument("kvrt_chat_apply_template needs a model or a template");
    }
    // A model without a tokenizer has no template either: ForTokenizer says so.
    const kvrt::Result<kvrt::ChatTemplate> chat =
        tmpl != nullptr ? kvrt::ChatTemplate::Detect(tmpl)
                        : kvrt::ChatTemplate::ForTokenizer(model->tokenizer ? *model->tokenizer
                                                                            : kvrt::Tokenizer());
    if (!chat) return MakeError(chat.error());
    std::vector<kvrt::ChatMessage> conversation;
    conversation.reserve(count);
    for (size_t i = 0; i < count; ++i) {
      if (messages[i].role == nullptr || messages[i].content == nullptr) {
        return InvalidArgument("chat message " + std::to_string(i) + " has no role or no content");
      }
      conversation.push_back({messages[i].role, messages[i].content});
    }
    kvrt::Result<std::string> prompt = chat->Apply(conversation, add_generation_prompt != 0);
    if (!prompt) return MakeError(prompt.error());
    // malloc, so a C caller could also release it with free().
    auto* copy = static_cast<char*>(std::malloc(prompt->size() + 1));
    if (copy == nullptr) throw std::bad_alloc();
    std::memcpy(copy, prompt->c_str(), prompt->size() + 1);
    *text = copy;
    *length = prompt->size();
    return nullptr;
  });
}

const char* kvrt_model_chat_template(const kvrt_model* model) {
  if (model == nullptr || !model->tokenizer) return nullptr;
  // The view is of the std::string the tokenizer keeps, so it ends with a NUL.
  const std::optional<std::string_view> text = model->tokenizer->chat_template();
  return text ? text->data() : nullptr;
}

}  // extern "C"
