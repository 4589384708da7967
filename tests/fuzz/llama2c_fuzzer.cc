// llama2.c files (kvrt/llama2c.h) on arbitrary input. The first byte picks:
//   0: tokenizer.bin bytes. Parsing returns a typed error or a tokenizer whose
//      encoding reproduces the bytes exactly; that tokenizer encodes any text
//      into ids inside its vocabulary, which decode without error.
//   1: text for one of the synthetic vocabularies of `kvrt synth`: content
//      decoding gives back " " + text (run.c's dummy prefix), document decoding
//      (the after-BOS rule) gives back the text itself when it is UTF-8 and the
//      vocabulary spells " ".
//   2: model.bin bytes, through a file (the reader takes paths). Loading
//      returns a typed error or a model that saves and loads back to the same
//      configuration and bit-identical weights, and runs one fast-f32 prefill.
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "fuzz_check.h"
#include "fuzz_input.h"
#include "kv/decoder_kv_cache.h"
#include "formats/llama2c/llama2c.h"
#include "session/decoder_kv_session.h"
#include "kvrt/tokenizer.h"
#include "text_oracles.h"

namespace kvrt::fuzz {
namespace {

const std::vector<Tokenizer>& SyntheticTokenizers() {
  static const std::vector<Tokenizer> tokenizers = [] {
    std::vector<Tokenizer> built;
    for (const auto& [size, seed] : {std::pair<size_t, uint64_t>{259, 1}, {300, 2}, {1000, 3}}) {
      Result<Tokenizer> tokenizer = SyntheticLlama2cTokenizer(size, seed);
      KVRT_FUZZ_CHECK(tokenizer, Describe(tokenizer));
      built.push_back(std::move(*tokenizer));
    }
    return built;
  }();
  return tokenizers;
}

// Every id a llama2.c encoder returns must decode, whatever the vocabulary.
std::vector<uint32_t> EncodeChecked(const Tokenizer& tokenizer, std::string_view text) {
  Result<std::vector<uint32_t>> ids = tokenizer.EncodeContent(text);
  KVRT_FUZZ_CHECK(ids, Describe(ids));
  for (uint32_t id : *ids) KVRT_FUZZ_CHECK(id < tokenizer.vocabulary_size(), "id past the vocabulary");
  KVRT_FUZZ_CHECK(text.empty() == ids->empty(), "only empty text encodes to nothing");
  return *ids;
}

void CheckTokenizerFile(std::span<const uint8_t> bytes) {
  Result<Tokenizer> tokenizer = ParseLlama2cTokenizer(bytes);
  if (!tokenizer) return CheckTypedError(tokenizer.error());
  Result<std::vector<uint8_t>> encoded = EncodeLlama2cTokenizer(*tokenizer);
  KVRT_FUZZ_CHECK(encoded, Describe(encoded));
  KVRT_FUZZ_CHECK(std::equal(encoded->begin(), encoded->end(), bytes.begin(), bytes.end()),
                  "tokenizer.bin does not re-encode to its bytes");
  for (std::string_view text : {"", "a", "hello world", "h\xC3\xA9llo w\xC3\xB6rld", "\xFF\xFE\x80",
                                "\xF0\x9F\xA6\x80 crab"}) {
    const std::vector<uint32_t> ids = EncodeChecked(*tokenizer, text);
    Result<std::string> decoded = tokenizer->DecodeContent(ids);
    KVRT_FUZZ_CHECK(decoded, Describe(decoded));
  }
}

void CheckSyntheticText(const Tokenizer& tokenizer, std::string_view text) {
  const std::vector<uint32_t> ids = EncodeChecked(tokenizer, text);
  Result<std::string> decoded = tokenizer.DecodeContent(ids);
  KVRT_FUZZ_CHECK(decoded, Describe(decoded));
  const std::string expected = text.empty() ? std::string() : " " + std::string(text);
  KVRT_FUZZ_CHECK(*decoded == expected, "decode(encode(text)) != \" \" + text");
  Result<std::vector<uint32_t>> document = tokenizer.EncodeDocument(text);
  KVRT_FUZZ_CHECK(document, Describe(document));
  // run.c drops the dummy space after BOS only from a piece that spells it; a
  // vocabulary without a " " piece sends it as the raw byte <0x20>, which stays.
  const std::vector<std::string>& pieces = tokenizer.pieces();
  if (std::find(pieces.begin(), pieces.end(), " ") == pieces.end()) return;
  Result<std::string> round_trip = tokenizer.DecodeDocumentUtf8(*document);
  if (RustUtf8Check(text)) {
    KVRT_FUZZ_CHECK(!round_trip && round_trip.error().code() == ErrorCode::kInvalidUtf8,
                    "invalid UTF-8 decoded as text");
    return;
  }
  KVRT_FUZZ_CHECK(round_trip && *round_trip == text, "document round trip: " + Describe(round_trip));
}

// A per-process scratch file in memory-backed storage.
std::string ScratchPath(const char* name) {
  return "/dev/shm/kvrt-fuzz-" + std::to_string(::getpid()) + "-" + name;
}

std::vector<double> Values(const Parameter& parameter) {
  std::vector<double> values(parameter.element_count());
  parameter.ReadValues(values);
  return values;
}

void CheckModelFile(std::span<const uint8_t> bytes) {
  const std::string path = ScratchPath("model.bin");
  std::ofstream(path, std::ios::binary | std::ios::trunc)
      .write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  Result<DecoderModel> model = LoadLlama2cModel(path);
  if (!model) return CheckTypedError(model.error());

  const std::string copy_path = ScratchPath("copy.bin");
  Result<void> saved = SaveLlama2cModel(*model, copy_path);
  KVRT_FUZZ_CHECK(saved, Describe(saved));
  Result<DecoderModel> copy = LoadLlama2cModel(copy_path);
  KVRT_FUZZ_CHECK(copy, Describe(copy));
  KVRT_FUZZ_CHECK(copy->config().SameAs(model->config()), "config changed by save and load");
  for (size_t i = 0; i < model->parameters().size(); ++i) {
    const std::vector<double> a = Values(model->parameter(i)), b = Values(copy->parameter(i));
    KVRT_FUZZ_CHECK(a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * 8) == 0,
                    "weights changed by save and load: " + model->parameter(i).name());
  }

  CacheOptions options;
  options.precision = Precision::kF32;
  options.capacity = model->config().max_positions < 2 ? model->config().max_positions : 2;
  Result<DecoderKvCache> cache = DecoderKvCache::Create(*model, options);
  if (!cache) return CheckTypedError(cache.error());
  Result<DecoderKvSession> session =
      Bind(*cache, *model, EngineOptions{Backend::kFast, Precision::kF32, 0, nullptr});
  KVRT_FUZZ_CHECK(session, Describe(session));
  const std::vector<uint32_t> prompt(options.capacity, 0);
  Result<StepOutput> step = session->Prefill(prompt);
  if (!step) CheckTypedError(step.error());
}

}  // namespace
}  // namespace kvrt::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  kvrt::fuzz::FuzzInput input(data, size);
  const uint8_t selector = input.Byte() % 3;
  if (selector == 1) {
    const auto& tokenizers = kvrt::fuzz::SyntheticTokenizers();
    const kvrt::Tokenizer& tokenizer = tokenizers[input.Below(tokenizers.size())];
    kvrt::fuzz::CheckSyntheticText(tokenizer, input.Rest());
    return 0;
  }
  const std::string_view rest = input.Rest();
  const std::span<const uint8_t> bytes(reinterpret_cast<const uint8_t*>(rest.data()), rest.size());
  if (selector == 0) {
    kvrt::fuzz::CheckTokenizerFile(bytes);
  } else {
    kvrt::fuzz::CheckModelFile(bytes);
  }
  return 0;
}
