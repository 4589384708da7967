// The one model-file dispatch: recognise the format by content, then hand the
// file to that format's reader (formats/llmcp35, formats/llama2c).
#include <array>
#include <string>

#include "formats/gguf/gguf_file.h"
#include "formats/gguf/gguf_llama.h"
#include "formats/gguf/gguf_tokenizer.h"
#include "formats/llama2c/file_io.h"
#include "formats/llama2c/llama2c.h"
#include "formats/llmcp35/checkpoint.h"
#include "formats/llmcp35/layout.h"
#include "formats/load_model.h"

namespace kvrt {
namespace {

// What the file itself says, without a name-based guess.
enum class Evidence { kLlmcp35, kGguf, kLlama2c, kNone };

constexpr std::array<uint8_t, 4> kGgufMagic = {'G', 'G', 'U', 'F'};

Result<Evidence> ReadEvidence(const std::string& path) {
  Result<llama2c::InputFile> file = llama2c::InputFile::Open(path, "a model file");
  if (!file) return Fail(std::move(file.error()));
  std::array<uint8_t, kLlama2cHeaderBytes> prefix{};
  static_assert(kLlama2cHeaderBytes >= llmcp35::kMagic.size());
  const size_t available = file->size() < prefix.size() ? file->size() : prefix.size();
  if (!file->Read(std::span<uint8_t>(prefix.data(), available), "format detection")) {
    return Evidence::kNone;
  }
  if (available >= llmcp35::kMagic.size() &&
      std::equal(llmcp35::kMagic.begin(), llmcp35::kMagic.end(), prefix.begin())) {
    return Evidence::kLlmcp35;
  }
  if (available >= kGgufMagic.size() &&
      std::equal(kGgufMagic.begin(), kGgufMagic.end(), prefix.begin())) {
    return Evidence::kGguf;
  }
  if (available == prefix.size() && Llama2cConfig(llama2c::DecodeHeader(prefix))) {
    return Evidence::kLlama2c;
  }
  return Evidence::kNone;
}

}  // namespace

std::string_view ModelFormatName(ModelFormat format) {
  switch (format) {
    case ModelFormat::kLlmcp35: return "llmcp35";
    case ModelFormat::kLlama2c: return "llama2c";
    case ModelFormat::kGguf: return "gguf";
  }
  return "unknown";
}

Result<ModelFormat> DetectModelFormat(const std::string& path) {
  Result<Evidence> evidence = ReadEvidence(path);
  if (!evidence) return Fail(std::move(evidence.error()));
  if (*evidence == Evidence::kLlmcp35) return ModelFormat::kLlmcp35;
  if (*evidence == Evidence::kGguf) return ModelFormat::kGguf;
  if (*evidence == Evidence::kLlama2c) return ModelFormat::kLlama2c;
  // No format's signature: a damaged file of the format its extension names
  // gets that reader's precise diagnosis (InvalidMagic, Truncated, ...).
  if (path.ends_with(".ckpt")) return ModelFormat::kLlmcp35;
  if (path.ends_with(".bin")) return ModelFormat::kLlama2c;
  if (path.ends_with(".gguf")) return ModelFormat::kGguf;
  return Fail(ErrorCode::kUnknownModelFormat, {{"path", path}},
              "'" + path +
                  "' is not a model file kvrt reads; tried LLMCP35 (no \"LLMCP35\\0\" magic), GGUF (no "
                  "\"GGUF\" magic) and llama2.c (the first 28 bytes are not a valid llama2.c header)");
}

Result<ModelFile> ReadModelFile(const std::string& path) {
  Result<ModelFormat> format = DetectModelFormat(path);
  if (!format) return Fail(std::move(format.error()));
  switch (*format) {
    case ModelFormat::kLlama2c: {
      Result<DecoderModel> model = LoadLlama2cModel(path);
      if (!model) return Fail(std::move(model.error()));
      Result<uint64_t> bytes = Llama2cFileBytes(model->config());
      return ModelFile{*format, std::move(*model), std::nullopt, std::nullopt, bytes.value_or(0)};
    }
    case ModelFormat::kLlmcp35: {
      Result<Checkpoint> checkpoint = LoadCheckpoint(path);
      if (!checkpoint) return Fail(std::move(checkpoint.error()));
      Result<DecoderModel> model = checkpoint->BuildModel();
      if (!model) return Fail(std::move(model.error()));
      return ModelFile{*format, std::move(*model), std::move(checkpoint->tokenizer),
                         checkpoint->sampling_rng_state, checkpoint->file_bytes};
    }
    case ModelFormat::kGguf: {
      Result<gguf::GgufFile> file = gguf::GgufFile::Open(path);
      if (!file) return Fail(std::move(file.error()));
      // Everything checkable without reading a weight first, the tokenizer's
      // token count against the model included: a lying count must not build a
      // vocabulary of that size. Then the tokenizer, validated before the
      // weights are decoded.
      Result<ModelConfig> config = gguf::LlamaConfig(*file);
      if (!config) return Fail(std::move(config.error()));
      if (auto tensors = gguf::ValidateLlamaTensors(*file, *config); !tensors) return Fail(std::move(tensors.error()));
      Result<std::optional<Tokenizer>> tokenizer = gguf::ReadTokenizer(*file);
      if (!tokenizer) return Fail(std::move(tokenizer.error()));
      Result<DecoderModel> model = gguf::BuildLlamaModel(*file, ModelStorage::kPanelsF32);
      if (!model) return Fail(std::move(model.error()));
      if (*tokenizer && (*tokenizer)->vocabulary_size() != model->config().vocabulary_size) {
        return Fail(ErrorCode::kVocabularyMismatch,
                    {{"tokenizer", uint64_t{(*tokenizer)->vocabulary_size()}},
                     {"decoder", uint64_t{model->config().vocabulary_size}}},
                    "the GGUF tokenizer has " + std::to_string((*tokenizer)->vocabulary_size()) +
                        " tokens but the model's vocabulary is " +
                        std::to_string(model->config().vocabulary_size));
      }
      return ModelFile{*format, std::move(*model), std::move(*tokenizer), std::nullopt,
                         file->mapping()->bytes().size()};
    }
  }
  return Fail(ErrorCode::kInvariantViolation, {}, "unhandled model format");
}

Result<Tokenizer> LoadTokenizer(const std::string& path) {
  Result<ModelFormat> format = DetectModelFormat(path);
  if (!format) return Fail(std::move(format.error()));
  if (*format == ModelFormat::kGguf) {
    Result<gguf::GgufFile> file = gguf::GgufFile::Open(path);
    if (!file) return Fail(std::move(file.error()));
    Result<std::optional<Tokenizer>> tokenizer = gguf::ReadTokenizer(*file);
    if (!tokenizer) return Fail(std::move(tokenizer.error()));
    if (*tokenizer) return std::move(**tokenizer);
  } else if (*format == ModelFormat::kLlmcp35) {
    Result<Checkpoint> checkpoint = LoadCheckpoint(path);
    if (!checkpoint) return Fail(std::move(checkpoint.error()));
    return std::move(checkpoint->tokenizer);
  }
  return Fail(ErrorCode::kInvalidArgument, {},
              "'" + path + "' carries no tokenizer (a llama2.c model comes with a separate tokenizer.bin)");
}

}  // namespace kvrt
