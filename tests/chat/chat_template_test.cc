// ChatTemplate against llama.cpp b4747's llama_chat_apply_template: every
// result of fixtures/gguf/modern/chat.json (33 built-in formats by name, the
// templates of the Llama 3 and Qwen vocabularies, a Llama 3.0 Jinja text and
// two templates llama.cpp does not recognise; four conversations, with and
// without the generation prompt), byte for byte.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <set>
#include <string>
#include <vector>

#include "kvrt/chat.h"
#include "kvrt/tokenizer.h"
#include "test_support.h"
#include "tokenizer/vocabulary_for_test.h"

namespace kvrt {
namespace {

using Json = nlohmann::json;

std::string Modern(const std::string& name) { return testing::FixturePath("gguf/modern/" + name); }

std::vector<ChatMessage> Messages(const Json& json) {
  std::vector<ChatMessage> messages;
  for (const Json& message : json) {
    messages.push_back({message["role"].get<std::string>(), message["content"].get<std::string>()});
  }
  return messages;
}

// The template an entry names: a built-in name, a vocabulary's own template, or
// a Jinja text.
Result<ChatTemplate> TemplateOf(const Json& entry) {
  const std::string kind = entry["template_kind"].get<std::string>();
  if (kind == "builtin") return ChatTemplate::FromName(entry["template_value"].get<std::string>());
  if (kind == "gguf") {
    const Tokenizer* tokenizer = testing::SharedTokenizer(Modern(entry["template"].get<std::string>()));
    if (tokenizer == nullptr) return Fail(ErrorCode::kIo, {}, "cannot read the vocabulary");
    return ChatTemplate::ForTokenizer(*tokenizer);
  }
  return ChatTemplate::Detect(entry["template_text"].get<std::string>());
}

TEST(ChatTemplateTest, MatchesLlamaCppOnEveryConversation) {
  const Json entries = Json::parse(testing::ReadText(Modern("chat.json")));
  ASSERT_EQ(entries.size(), 304u);
  size_t identical = 0, refused = 0;
  for (const Json& entry : entries) {
    SCOPED_TRACE(entry["template"].get<std::string>() + " / " +
                 entry["conversation"].get<std::string>() +
                 (entry["add_generation_prompt"].get<bool>() ? " + generation prompt" : ""));
    Result<ChatTemplate> chat = TemplateOf(entry);
    if (entry["rc"].get<int>() < 0) {
      // llama.cpp recognises no format in it: a typed error naming the ones kvrt knows.
      ASSERT_FALSE(chat);
      EXPECT_EQ(chat.error().code(), ErrorCode::kUnsupportedChatTemplate);
      EXPECT_NE(chat.error().message().find("chatml, "), std::string::npos) << chat.error().message();
      ++refused;
      continue;
    }
    ASSERT_TRUE(chat) << chat.error().Debug();
    if (entry.contains("matches_builtin") && entry["matches_builtin"].is_array()) {
      EXPECT_EQ(chat->name(), entry["matches_builtin"][0].get<std::string>());
    }
    Result<std::string> prompt =
        chat->Apply(Messages(entry["messages"]), entry["add_generation_prompt"].get<bool>());
    ASSERT_TRUE(prompt) << prompt.error().Debug();
    const std::string expected = entry["result"].get<std::string>();
    EXPECT_EQ(*prompt, expected);
    EXPECT_EQ(prompt->size(), entry["rc"].get<size_t>());
    identical += *prompt == expected;
  }
  EXPECT_EQ(identical, 288u);
  EXPECT_EQ(refused, 16u);
}

TEST(ChatTemplateTest, NamesAreLlamaCppsBuiltInList) {
  const Json entries = Json::parse(testing::ReadText(Modern("chat.json")));
  std::set<std::string> builtin;
  for (const Json& entry : entries) {
    if (entry["template_kind"] == "builtin") builtin.insert(entry["template_value"].get<std::string>());
  }
  const std::span<const std::string_view> names = ChatTemplate::Names();
  EXPECT_EQ(std::vector<std::string>(names.begin(), names.end()),
            std::vector<std::string>(builtin.begin(), builtin.end()));
  for (const std::string_view name : names) {
    // A name is also a template text that stands for itself, as in llama.cpp.
    Result<ChatTemplate> detected = ChatTemplate::Detect(name);
    ASSERT_TRUE(detected);
    EXPECT_EQ(detected->name(), name);
  }
}

TEST(ChatTemplateTest, DetectsFormatsByTheirMarkers) {
  EXPECT_EQ(ChatTemplate::Detect("{{ '<|im_start|>' + role }}")->name(), "chatml");
  EXPECT_EQ(ChatTemplate::Detect("<|im_start|>{{ role }}<|im_sep|>")->name(), "phi4");
  EXPECT_EQ(ChatTemplate::Detect("mistral")->name(), "llama2") << "a text starting with mistral";
  EXPECT_EQ(ChatTemplate::Detect("[INST] <<SYS>> {{ content.strip() }}")->name(), "llama2-sys-strip");
  EXPECT_EQ(ChatTemplate::Detect("[INST][SYSTEM_PROMPT]")->name(), "mistral-v7");
  EXPECT_EQ(ChatTemplate::Detect("{{ \"[INST]\" }}[AVAILABLE_TOOLS]")->name(), "mistral-v3-tekken");
  EXPECT_EQ(ChatTemplate::Detect("<|user|><|assistant|></s>")->name(), "falcon3");
  EXPECT_EQ(ChatTemplate::Detect("<|user|><|assistant|>")->name(), "glmedge");
  EXPECT_EQ(ChatTemplate::Detect("<start_of_turn>")->name(), "gemma");
  EXPECT_EQ(ChatTemplate::Detect("<|start_header_id|>x<|end_header_id|>")->name(), "llama3");
  EXPECT_EQ(ChatTemplate::Detect("<\xEF\xBD\x9C" "Assistant\xEF\xBD\x9C><\xEF\xBD\x9CUser\xEF\xBD\x9C>"
                                 "<\xEF\xBD\x9C" "end\xE2\x96\x81of\xE2\x96\x81sentence\xEF\xBD\x9C>")
                ->name(),
            "deepseek3");
  EXPECT_EQ(ChatTemplate::Detect("<\xE7\x94\xA8\xE6\x88\xB7>")->name(), "minicpm");
  Result<ChatTemplate> unknown = ChatTemplate::Detect("{{ messages }}\nsecond line");
  ASSERT_FALSE(unknown);
  EXPECT_EQ(unknown.error().Debug(), "UnsupportedChatTemplate { template: \"{{ messages }}\" }");
  Result<ChatTemplate> unnamed = ChatTemplate::FromName("chatml2");
  ASSERT_FALSE(unnamed);
  EXPECT_EQ(unnamed.error().code(), ErrorCode::kUnsupportedChatTemplate);
  EXPECT_NE(unnamed.error().message().find("llama3"), std::string::npos);
  EXPECT_FALSE(ChatTemplate::FromName("<|im_start|>")) << "a name is a name, not a template text";
  // A long first line is cut short in the payload, between characters.
  std::string accents = "a";
  for (int i = 0; i < 40; ++i) accents += "\u00E9";
  Result<ChatTemplate> long_line = ChatTemplate::Detect(accents);
  ASSERT_FALSE(long_line);
  EXPECT_EQ(ValidateUtf8(long_line.error().message()), std::nullopt);
  EXPECT_NE(long_line.error().message().find("..."), std::string::npos);
}

TEST(ChatTemplateTest, RefusesWhatLlamaCppCouldNotSee) {
  const ChatTemplate chatml = *ChatTemplate::FromName("chatml");
  const std::vector<ChatMessage> nul = {{"user", std::string("a\0b", 3)}};
  Result<std::string> prompt = chatml.Apply(nul);
  ASSERT_FALSE(prompt);
  EXPECT_EQ(prompt.error().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(*chatml.Apply({}, false), "");
  EXPECT_EQ(*chatml.Apply({}, true), "<|im_start|>assistant\n");
}

TEST(ChatTemplateTest, ATokenizerWithoutTemplateHasNone) {
  const Tokenizer* spm = testing::SharedTokenizer(Modern("kq-f32.gguf"));
  ASSERT_NE(spm, nullptr);
  Result<ChatTemplate> chat = ChatTemplate::ForTokenizer(*spm);
  ASSERT_FALSE(chat);
  EXPECT_EQ(chat.error().Debug(), "MissingKey { key: \"tokenizer.chat_template\" }");
}

}  // namespace
}  // namespace kvrt
