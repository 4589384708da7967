// The tokenizer.ggml.* fields of a GGUF file, fuzzed as fields rather than bytes
// (the GGUF fuzzer's random bytes rarely make metadata a tokenizer builds from):
// the input chooses the model and pre-tokenizer names, the token strings (pieces
// llama.cpp files use, byte tokens, special tokens, raw bytes), scores, token
// types, merges, special ids and flags, then a text. The fields go into a
// vocabulary-only GGUF (GgufWriter), which is parsed and read as a tokenizer.
// Properties:
//   * ReadTokenizer returns a typed error or a tokenizer of exactly the listed
//     tokens;
//   * every error message is one line of at most 1024 bytes (the strings are
//     the file's, hostile ones included);
//   * encoding any text gives ids inside the vocabulary or a typed error, and so
//     does decoding them; every id's bytes are a typed answer.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "formats/gguf/gguf_file.h"
#include "formats/gguf/gguf_tokenizer.h"
#include "formats/gguf/gguf_writer.h"
#include "fuzz_check.h"
#include "fuzz_input.h"
#include "kvrt/tokenizer.h"

namespace kvrt::fuzz {
namespace {

constexpr size_t kMaxTokens = 320;
constexpr size_t kMaxMerges = 96;

// Pieces real llama.cpp vocabularies hold, so that tokenizers often build.
constexpr std::string_view kPieces[] = {
    "<unk>", "<s>", "</s>", "<0x00>", "<0x0A>", "<0x41>", "<0xFF>", "<0xC3>", "<0xA9>", "\xE2\x96\x81",
    "\xE2\x96\x81the", "\xE2\x96\x81" "a", "a", "b", "ab", "the", "\xC4\xA0", "\xC4\xA0the", "\xC4\x8A", "Hello",
    "<|endoftext|>", "<|user|>", " ", "e", "t", "he", "\xC3\xA9", "\xE4\xB8\x96", "\xF0\x9F\x98\x80", "",
};
constexpr std::string_view kModels[] = {"llama", "gpt2", "bert", "no_vocab", ""};
constexpr std::string_view kPres[] = {"default", "gpt-2", "llama3", "phi-3", "qwen2", ""};

void CheckOneLine(const Error& error) {
  CheckTypedError(error);
  const std::string& message = error.message();
  KVRT_FUZZ_CHECK(message.size() <= 1024, "message of " + std::to_string(message.size()) + " bytes");
  for (const char c : message) {
    const auto byte = static_cast<unsigned char>(c);
    KVRT_FUZZ_CHECK(byte >= 0x20 && byte != 0x7F, "a control character in: " + message.substr(0, 200));
  }
}

std::string Token(FuzzInput& in) {
  if (in.Below(4) == 0) return in.String(in.Below(9));  // any bytes, NUL and invalid UTF-8 included
  std::string piece(kPieces[in.Below(std::size(kPieces))]);
  if (in.Bit()) piece += kPieces[in.Below(std::size(kPieces))];
  return piece;
}

// The tokenizer keys of one vocabulary-only file, as the input describes them.
void AddTokenizerKeys(FuzzInput& in, gguf::GgufWriter& writer) {
  const size_t model = in.Below(std::size(kModels) + 1);
  writer.AddString("tokenizer.ggml.model", model < std::size(kModels) ? std::string(kModels[model]) : in.String(12));
  if (in.Bit()) {
    const size_t pre = in.Below(std::size(kPres) + 1);
    writer.AddString("tokenizer.ggml.pre", pre < std::size(kPres) ? std::string(kPres[pre]) : in.String(12));
  }
  const size_t count = in.U16() % kMaxTokens;
  std::vector<std::string> tokens;
  for (size_t i = 0; i < count; ++i) tokens.push_back(Token(in));
  writer.AddStringArray("tokenizer.ggml.tokens", tokens);
  if (in.Bit()) {  // scores, sometimes of the wrong length
    std::vector<float> scores(in.Bit() ? count : in.Below(count + 2));
    for (float& score : scores) score = static_cast<float>(static_cast<int16_t>(in.U16())) / 64.0f;
    writer.AddF32Array("tokenizer.ggml.scores", scores);
  }
  if (in.Bit()) {  // token types 1..6 are llama.cpp's; others are invalid
    std::vector<int32_t> types(in.Bit() ? count : in.Below(count + 2));
    for (int32_t& type : types) type = in.Below(4) == 0 ? static_cast<int8_t>(in.Byte()) : 1 + static_cast<int32_t>(in.Below(6));
    writer.AddI32Array("tokenizer.ggml.token_type", types);
  }
  if (in.Bit()) {  // merges "left right", mostly of listed tokens
    std::vector<std::string> merges(in.Below(kMaxMerges));
    for (std::string& merge : merges) {
      const auto pick = [&] { return count > 0 && in.Below(8) != 0 ? tokens[in.U16() % count] : in.String(4); };
      merge = pick();
      if (in.Below(8) != 0) merge += ' ';
      merge += pick();
    }
    writer.AddStringArray("tokenizer.ggml.merges", merges);
  }
  for (const char* key : {"tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id",
                          "tokenizer.ggml.unknown_token_id", "tokenizer.ggml.padding_token_id"}) {
    if (!in.Bit()) continue;
    const uint32_t id = in.Below(8) == 0 ? 0xFFFFFFFFu : static_cast<uint32_t>(in.U16() % (count + 4));
    writer.AddU32(key, id);
  }
  for (const char* key :
       {"tokenizer.ggml.add_bos_token", "tokenizer.ggml.add_eos_token", "tokenizer.ggml.add_space_prefix"}) {
    if (in.Bit()) writer.AddBool(key, in.Bit());
  }
}

void CheckTokenizer(const Tokenizer& tokenizer, size_t count, std::string_view text) {
  KVRT_FUZZ_CHECK(tokenizer.vocabulary_size() == count,
                  std::to_string(tokenizer.vocabulary_size()) + " ids for " + std::to_string(count) + " tokens");
  for (uint32_t id = 0; id < count; ++id) {
    if (Result<std::string_view> bytes = tokenizer.TokenBytes(id); !bytes) CheckOneLine(bytes.error());
  }
  for (const bool prompt : {false, true}) {
    Result<std::vector<uint32_t>> ids = prompt ? tokenizer.EncodePrompt(text) : tokenizer.EncodeContent(text);
    if (!ids) {
      CheckOneLine(ids.error());
      continue;
    }
    for (const uint32_t id : *ids) KVRT_FUZZ_CHECK(id < count, "id " + std::to_string(id) + " outside the vocabulary");
    if (Result<std::string> decoded = tokenizer.DecodeContent(*ids); !decoded) CheckOneLine(decoded.error());
  }
}

}  // namespace
}  // namespace kvrt::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace kvrt;
  fuzz::FuzzInput in(data, size);
  gguf::GgufWriter writer;
  writer.AddString("general.architecture", "llama");
  fuzz::AddTokenizerKeys(in, writer);
  Result<std::vector<uint8_t>> bytes = writer.Serialize();
  KVRT_FUZZ_CHECK(bytes, fuzz::Describe(bytes));
  Result<std::shared_ptr<const gguf::FileMapping>> mapping = gguf::FileMapping::FromBytes(std::move(*bytes));
  KVRT_FUZZ_CHECK(mapping, fuzz::Describe(mapping));
  Result<gguf::GgufFile> file = gguf::GgufFile::Parse(*mapping);
  KVRT_FUZZ_CHECK(file, "the writer's file does not parse: " + fuzz::Describe(file));
  Result<std::span<const std::string_view>> tokens = file->GetStringArray("tokenizer.ggml.tokens");
  KVRT_FUZZ_CHECK(tokens, fuzz::Describe(tokens));
  Result<std::optional<Tokenizer>> tokenizer = gguf::ReadTokenizer(*file);
  if (!tokenizer) {
    fuzz::CheckOneLine(tokenizer.error());
    return 0;
  }
  KVRT_FUZZ_CHECK(tokenizer->has_value(), "a tokenizer.ggml.model key but no tokenizer");
  fuzz::CheckTokenizer(**tokenizer, tokens->size(), in.Rest());
  return 0;
}
