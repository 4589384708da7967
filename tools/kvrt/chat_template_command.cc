// kvrt chat-template: the prompt text a conversation becomes with a model's chat
// template (kvrt/chat.h), exactly as llama.cpp's llama_chat_apply_template
// writes it. stdout gets the text and nothing else (no newline after it), so a
// script can compare it byte for byte or pass it to `kvrt tokenize --special`.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "commands.h"
#include "common.h"
#include "input_file.h"
#include "json_file.h"
#include "kvrt/chat.h"
#include "kvrt/model_file.h"
#include "output.h"

namespace kvrt::cli {
namespace {

using Json = nlohmann::json;

constexpr FlagSpec kFlags[] = {
    {"model", true, "model file whose chat template (tokenizer.chat_template) renders the messages"},
    {"messages", true, "JSON file: [{\"role\": ..., \"content\": ...}, ...]"},
    {"template", true, "a built-in format by name instead (chatml, llama3, mistral-v7, ...)"},
    {"template-file", true, "a Jinja chat template instead, recognised as llama.cpp recognises a model's"},
    {"no-generation-prompt", false, "do not end with the opening of the assistant's reply"},
    {"help", false, "show this help"},
};

// A template file is a model's Jinja text: a few KiB.
constexpr uint64_t kMaxTemplateBytes = uint64_t{1} << 20;

Error MessagesError(const std::string& path, const std::string& problem) {
  return InvalidArgument(path + ": " + problem + " (expected [{\"role\": ..., \"content\": ...}, ...])");
}

Result<std::vector<ChatMessage>> ReadMessages(const std::string& path) {
  Result<Json> json = ReadJsonFile(path, "a chat messages file");
  if (!json) return std::unexpected(json.error());
  if (!json->is_array()) return std::unexpected(MessagesError(path, "not a JSON array"));
  std::vector<ChatMessage> messages;
  for (size_t i = 0; i < json->size(); ++i) {
    const Json& message = (*json)[i];
    const std::string which = "message " + std::to_string(i);
    if (!message.is_object()) return std::unexpected(MessagesError(path, which + " is not an object"));
    for (const auto& [key, value] : message.items()) {
      if (key != "role" && key != "content") {
        return std::unexpected(MessagesError(path, which + " has the unknown field \"" + key + "\""));
      }
      if (!value.is_string()) {
        return std::unexpected(MessagesError(path, which + "'s \"" + key + "\" is not a string"));
      }
    }
    if (!message.contains("role") || !message.contains("content")) {
      return std::unexpected(MessagesError(path, which + " needs both \"role\" and \"content\""));
    }
    messages.push_back({message["role"].get<std::string>(), message["content"].get<std::string>()});
  }
  return messages;
}

Result<ChatTemplate> TemplateFromFlags(const Flags& flags, const std::string& model) {
  if (flags.Has("template") && flags.Has("template-file")) {
    return std::unexpected(InvalidArgument("--template and --template-file exclude each other"));
  }
  if (flags.Has("template") || flags.Has("template-file")) {
    // The model is not needed, but a wrong path is still an error.
    if (Result<ModelFormat> format = DetectModelFormat(model); !format) {
      return std::unexpected(format.error());
    }
    if (std::optional<std::string> name = flags.Value("template")) return ChatTemplate::FromName(*name);
    Result<std::string> text =
        ReadInputFile(*flags.Value("template-file"), "a chat template file", kMaxTemplateBytes);
    if (!text) return std::unexpected(text.error());
    return ChatTemplate::Detect(*text);
  }
  Result<Tokenizer> tokenizer = LoadTokenizer(model);
  if (!tokenizer) return std::unexpected(tokenizer.error());
  return ChatTemplate::ForTokenizer(*tokenizer);
}

}  // namespace

int RunChatTemplate(std::span<char* const> args) {
  Result<Flags> flags = Flags::Parse(args, kFlags);
  if (!flags) return ReportError(flags.error());
  if (flags->Has("help")) {
    PrintStdout("%s", Usage("kvrt chat-template --model M --messages FILE.json "
                            "[--template NAME | --template-file F] [--no-generation-prompt]",
                            kFlags)
                          .c_str());
    return 0;
  }
  Result<std::string> model = flags->Required("model");
  if (!model) return ReportError(model.error());
  Result<std::string> messages_path = flags->Required("messages");
  if (!messages_path) return ReportError(messages_path.error());
  Result<std::vector<ChatMessage>> messages = ReadMessages(*messages_path);
  if (!messages) return ReportError(messages.error());
  Result<ChatTemplate> chat = TemplateFromFlags(*flags, *model);
  if (!chat) return ReportError(chat.error());
  Result<std::string> prompt = chat->Apply(*messages, !flags->Has("no-generation-prompt"));
  if (!prompt) return ReportError(prompt.error());
  if (Result<void> written = WriteStdout(*prompt); !written) return ReportError(written.error());
  return 0;
}

}  // namespace kvrt::cli
