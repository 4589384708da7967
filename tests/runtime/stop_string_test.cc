// Stop strings and streamed text: a corpus of 52 generations (stops inside
// tokens and across them, inside multi-byte characters, overlapping stops, a
// stop at the first token, end tokens and limits at the same step), each run
// through the generation loop with scripted logits, checking the stop reason,
// the tokens generated, the text and what the token callback streamed.
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "generate/generated_text.h"
#include "generate/generation_loop.h"
#include "kvrt/generation.h"
#include "kvrt/tokenizer.h"

namespace kvrt {
namespace {

// A literal vocabulary whose pieces split text where the cases need it.
const std::vector<std::string>& Pieces() {
  static const std::vector<std::string> pieces = {
      "a", "b", "c", "ab", "bc", "\n", "\n\n", " ",                 // 0-7
      "\xC3\xA9", "\xC3", "\xA9",                                   // 8-10: é whole, then split
      "\xE2\x82\xAC", "\xE2", "\x82", "\xAC", "\xE2\x82",           // 11-15: € and its bytes
      "\xF0\x9F\x98\x80", "\xF0\x9F", "\x98\x80",                   // 16-18: 😀 and halves
      "STOP", "ST", "OP", "S", "T", "O", "P",                       // 19-25
      "Hello", " world", "</s>", "<", "/s>", "xyz", "END",          // 26-32
      "\xF0", "\x9F\x98", "\x80",                                   // 33-35: 😀 in three
  };
  return pieces;
}

constexpr size_t kVocabulary = 36;

struct StopCase {
  std::vector<uint32_t> tokens;  // what the scripted model makes the loop pick
  std::vector<std::string> stops;
  std::optional<std::string> text;  // nullopt: not UTF-8
  std::string stop;
  size_t generated;                 // tokens the loop takes before it stops
  std::optional<uint32_t> eos = std::nullopt;
  std::vector<uint32_t> prompt = {31};  // "xyz"
  std::string streamed = "";            // when it differs from `text` (U+FFFD)
};

const std::string kFffd = "\xEF\xBF\xBD";

std::vector<StopCase> Corpus() {
  return {
      {{0, 1, 2}, {"b"}, "a", "stop-string", 2},
      {{0, 1, 2}, {"ab"}, "", "stop-string", 2},
      {{3, 2}, {"bc"}, "a", "stop-string", 2},
      {{0, 4}, {"ab"}, "", "stop-string", 2},
      {{19}, {"STOP"}, "", "stop-string", 1},                              // at the first token
      {{20, 21}, {"STOP"}, "", "stop-string", 2},                          // across two tokens
      {{22, 23, 24, 25}, {"STOP"}, "", "stop-string", 4},                  // across four
      {{26, 27, 19, 0}, {"STOP"}, "Hello world", "stop-string", 3},
      {{26, 27}, {"STOP"}, "Hello world", "token-limit", 2},
      {{26, 20, 0}, {"STOP"}, "HelloSTa", "token-limit", 3},               // a held "ST" is released
      {{8}, {"\xC3\xA9"}, "", "stop-string", 1},
      {{9, 10}, {"\xC3\xA9"}, "", "stop-string", 2},                        // é split across tokens
      {{0, 9, 10, 1}, {"\xC3\xA9"}, "a", "stop-string", 3},
      {{0, 9}, {"\xC3\xA9"}, std::nullopt, "token-limit", 2, std::nullopt, {31}, "a" + kFffd},
      {{12, 13, 14}, {"\xE2\x82\xAC"}, "", "stop-string", 3},               // € in three bytes
      {{15, 14}, {"\xE2\x82\xAC"}, "", "stop-string", 2},
      {{0, 12, 13, 14, 1}, {"\xE2\x82\xAC"}, "a", "stop-string", 4},
      {{17, 18}, {"\xF0\x9F\x98\x80"}, "", "stop-string", 2},
      {{0, 17, 18}, {"\xF0\x9F\x98\x80"}, "a", "stop-string", 3},
      {{16, 0}, {"a"}, "\xF0\x9F\x98\x80", "stop-string", 2},
      {{5, 5}, {"\n\n"}, "", "stop-string", 2},
      {{0, 5, 1, 5, 5}, {"\n\n"}, "a\nb", "stop-string", 5},
      {{0, 6}, {"\n\n"}, "a", "stop-string", 2},
      {{0, 5, 6}, {"\n\n"}, "a", "stop-string", 3},                         // the earliest of two matches
      {{0, 1, 2}, {"bc", "ab"}, "", "stop-string", 2},                      // overlapping stops
      {{0, 1, 2}, {"abc", "bc"}, "", "stop-string", 3},
      {{0, 1, 2}, {"b", "abc"}, "a", "stop-string", 2},
      {{0, 1, 2}, {"c", "bc"}, "a", "stop-string", 3},
      {{29, 30}, {"</s>"}, "", "stop-string", 2},
      {{0, 28}, {"</s>"}, "a", "stop-string", 2},
      {{29, 0, 30}, {"</s>"}, "<a/s>", "token-limit", 3},
      {{11}, {"\xE2\x82\xAC"}, "", "stop-string", 1},
      {{23, 24, 25}, {"STOP"}, "TOP", "token-limit", 3, std::nullopt, {22}},  // the prompt is not searched
      {{31, 32}, {"END"}, "xyz", "stop-string", 2},
      {{31, 32}, {"yzE"}, "x", "stop-string", 2},
      {{31, 7, 0}, {"z a"}, "xy", "stop-string", 3},
      {{0, 1}, {"abcdef"}, "ab", "token-limit", 2},                          // held to the end
      {{0, 0, 0, 1}, {"aab"}, "a", "stop-string", 4},
      {{0, 0, 1}, {"aab"}, "", "stop-string", 3},
      {{3, 3, 3}, {"bab"}, "a", "stop-string", 2},
      {{0, 32}, {"b"}, "a", "eos", 2, 32u},                                  // an end token's bytes are no text
      {{0, 19}, {"STOP"}, "a", "eos", 2, 19u},                               // the end token wins
      {{0, 1}, {"b"}, "a", "stop-string", 2},                                // a stop beats the token limit
      {{0, 20}, {"STOP"}, "aST", "token-limit", 2},
      {{0, 12, 13}, {"STOP"}, std::nullopt, "token-limit", 3, std::nullopt, {31}, "a" + kFffd},
      {{14, 0, 1}, {"b"}, std::nullopt, "stop-string", 3, std::nullopt, {31}, kFffd + "a"},
      {{33, 34, 35}, {"\xF0\x9F\x98\x80"}, "", "stop-string", 3},            // 😀 in three tokens
      {{0, 33, 34, 35, 0}, {"a\xF0\x9F\x98\x80" "a"}, "", "stop-string", 5},
      {{26, 7, 8}, {" \xC3\xA9"}, "Hello", "stop-string", 3},
      {{3, 4}, {"bb", "abb"}, "", "stop-string", 2},
      {{0, 1, 0, 1, 2}, {"abc"}, "ab", "stop-string", 5},
      {{26, 33, 34}, {"\xF0\x9F\x98\x80"}, std::nullopt, "token-limit", 3, std::nullopt, {31}, "Hello" + kFffd},
  };
}

// Makes the loop pick the scripted tokens: greedy over one-hot logits.
class ScriptedPicks final : public LogitSource {
 public:
  explicit ScriptedPicks(const std::vector<uint32_t>& tokens) : tokens_(tokens) {}
  Result<std::span<const double>> First(std::span<const uint32_t>) override { return Next({}, 0); }
  Result<std::span<const double>> Next(std::span<const uint32_t>, uint32_t) override {
    logits_.assign(kVocabulary, 0.0);
    logits_[tokens_.at(calls_++)] = 1.0;
    return std::span<const double>(logits_);
  }
  size_t calls() const override { return calls_; }

 private:
  const std::vector<uint32_t>& tokens_;
  std::vector<double> logits_;
  size_t calls_ = 0;
};

ModelConfig Config() { return ModelConfig::Create(kVocabulary, 4, 2, 4, 1, 64, 1e4, 1e-6); }

TEST(StopStringTest, EveryCaseOfTheCorpusStopsStreamsAndCutsItsText) {
  const std::vector<StopCase> corpus = Corpus();
  ASSERT_GE(corpus.size(), 50u);
  Result<Tokenizer> tokenizer = Tokenizer::Literal(Pieces());
  ASSERT_TRUE(tokenizer) << tokenizer.error().message();
  size_t correct = 0;
  for (size_t i = 0; i < corpus.size(); ++i) {
    const StopCase& c = corpus[i];
    GenerationConfig request;
    request.stop = c.stops;
    request.tokenizer = *tokenizer;
    request.eos_token = c.eos;
    request.max_new_tokens = c.tokens.size();
    GenerationResult result;
    result.prompt = c.prompt;
    ScriptedPicks script(c.tokens);
    std::string streamed;
    bool whole_characters = true;
    const TokenCallback on_token = [&](const StreamedToken& token) {
      whole_characters = whole_characters && !ValidateUtf8(token.text);
      streamed += token.text;
      return StreamAction::kContinue;
    };
    SplitMix64 rng(0);
    ASSERT_TRUE(RunGenerationLoop(Config(), request, rng, script, on_token, result)) << "case " << i;
    const std::string want_streamed = c.text ? *c.text : c.streamed;
    const bool ok = GenerationStopName(result.stop) == c.stop && result.generated.size() == c.generated &&
                    result.text == c.text && streamed == want_streamed && whole_characters;
    EXPECT_TRUE(ok) << "case " << i << ": stop " << GenerationStopName(result.stop) << " after "
                    << result.generated.size() << ", text " << (result.text ? "\"" + *result.text + "\"" : "null")
                    << ", streamed \"" << streamed << "\"";
    correct += ok;
  }
  std::printf("[ stops    ] %zu of %zu stop-string cases correct\n", correct, corpus.size());
}

TEST(StopStringTest, BadStopStringsAreTypedErrorsBeforeAnyWork) {
  Result<Tokenizer> tokenizer = Tokenizer::Literal(Pieces());
  ASSERT_TRUE(tokenizer);
  GenerationConfig request;
  request.max_new_tokens = 3;
  request.tokenizer = *tokenizer;
  const std::vector<uint32_t> prompt = {0};
  for (const auto& [stops, message] : std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{"ok", ""}, "stop string 1 is empty"},
           {{"\xE2\x82"}, "stop string 0 is not UTF-8"},
       }) {
    request.stop = stops;
    Result<void> valid = ValidateCachedRequest(Config(), prompt, request);
    ASSERT_FALSE(valid);
    EXPECT_EQ(valid.error().code(), ErrorCode::kInvalidStopString);
    EXPECT_EQ(valid.error().message(), message);
  }
  request.stop = {"a"};
  request.tokenizer.reset();
  Result<void> without = ValidateCachedRequest(Config(), prompt, request);
  ASSERT_FALSE(without);
  EXPECT_EQ(without.error().code(), ErrorCode::kInvalidStopString);
}

TEST(StopStringTest, TheCallbackCancelsAfterItsTokenAndKeepsTheText) {
  Result<Tokenizer> tokenizer = Tokenizer::Literal(Pieces());
  ASSERT_TRUE(tokenizer);
  const std::vector<uint32_t> tokens = {26, 27, 0, 1, 2, 3};
  GenerationConfig request;
  request.tokenizer = *tokenizer;
  request.stop = {"abx"};  // "ab" is held back when the callback cancels
  request.max_new_tokens = tokens.size();
  GenerationResult result;
  result.prompt = {31};
  ScriptedPicks script(tokens);
  std::string streamed;
  size_t seen = 0;
  const TokenCallback cancel_at_four = [&](const StreamedToken& token) {
    streamed += token.text;
    return ++seen == 4 ? StreamAction::kCancel : StreamAction::kContinue;
  };
  SplitMix64 rng(0);
  ASSERT_TRUE(RunGenerationLoop(Config(), request, rng, script, cancel_at_four, result));
  EXPECT_EQ(result.stop, GenerationStop::kCancelled);
  EXPECT_EQ(result.generated.size(), 4u);
  EXPECT_EQ(result.text, "Hello worldab");
  EXPECT_EQ(streamed, "Hello world");
  EXPECT_EQ(script.calls(), 4u);  // no model call after the cancel
}

}  // namespace
}  // namespace kvrt
