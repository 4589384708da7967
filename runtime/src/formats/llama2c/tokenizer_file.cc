// tokenizer.bin of llama2.c: parsing with every length checked against the bytes
// that remain (so a hostile file allocates nothing it does not contain), and
// encoding for kvrt synth.
#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "formats/byte_order.h"
#include "formats/llmcp35/checkpoint_errors.h"
#include "formats/llama2c/errors.h"
#include "formats/llama2c/file_io.h"
#include "formats/llama2c/llama2c.h"

namespace kvrt {
namespace {

// run.c allocates 2·max_token_length + 3 bytes for merging; real tokenizers
// declare a few dozen. Anything past this is a corrupt or hostile header.
constexpr int32_t kMaxTokenLengthLimit = 1 << 20;
// Real tokenizer.bin files are well under a megabyte.
constexpr uint64_t kTokenizerFileLimit = uint64_t{1} << 30;
constexpr size_t kRecordHeaderBytes = sizeof(float) + sizeof(int32_t);

int32_t LoadI32(const uint8_t* bytes) {
  return static_cast<int32_t>(llmcp35::LoadLittleEndian<uint32_t>(bytes));
}

}  // namespace

Result<Tokenizer> ParseLlama2cTokenizer(std::span<const uint8_t> bytes, size_t max_pieces) {
  if (bytes.size() < sizeof(int32_t)) {
    return Fail(llama2c::Truncated("tokenizer max_token_length", sizeof(int32_t), bytes.size()));
  }
  const int32_t max_token_length = LoadI32(bytes.data());
  if (max_token_length <= 0 || max_token_length > kMaxTokenLengthLimit) {
    return Fail(llama2c::InvalidHeaderValue("max_token_length", max_token_length,
                                            "it must be in [1, 2^20]"));
  }
  std::vector<std::string> pieces;
  std::vector<float> scores;
  // Each record takes at least 8 bytes, so this reservation is backed by data;
  // it is also bounded by the pieces the caller accepts (a 900 MB file of empty
  // records would otherwise reserve 112 million strings).
  const size_t reserved = std::min(bytes.size() / kRecordHeaderBytes, max_pieces);
  pieces.reserve(reserved);
  scores.reserve(reserved);
  uint64_t records = 0;
  for (size_t at = sizeof(int32_t); at < bytes.size(); ++records) {
    const uint64_t id = records;
    if (bytes.size() - at < kRecordHeaderBytes) {
      return Fail(llama2c::Truncated("tokenizer record " + std::to_string(id), at + kRecordHeaderBytes,
                                     bytes.size()));
    }
    const float score = std::bit_cast<float>(llmcp35::LoadLittleEndian<uint32_t>(&bytes[at]));
    const int32_t length = LoadI32(&bytes[at + sizeof(float)]);
    at += kRecordHeaderBytes;
    if (length < 0 || length > max_token_length) {
      return Fail(llama2c::InvalidTokenLength(id, length,
                                              "it must be in [0, max_token_length " +
                                                  std::to_string(max_token_length) + "]"));
    }
    if (bytes.size() - at < static_cast<size_t>(length)) {
      return Fail(llama2c::Truncated("tokenizer record " + std::to_string(id),
                                     at + static_cast<size_t>(length), bytes.size()));
    }
    // Past `max_pieces` the records are only counted, for the error below.
    if (records < max_pieces) {
      pieces.emplace_back(reinterpret_cast<const char*>(&bytes[at]), static_cast<size_t>(length));
      scores.push_back(score);
    }
    at += static_cast<size_t>(length);
  }
  if (records > max_pieces) return Fail(llmcp35::VocabularyMismatch(records, max_pieces));
  return Tokenizer::Llama2c(std::move(pieces), std::move(scores), static_cast<uint32_t>(max_token_length));
}

Result<Tokenizer> LoadLlama2cTokenizer(const std::string& path, size_t max_pieces) {
  Result<std::vector<uint8_t>> bytes = llama2c::ReadSmallFile(path, kTokenizerFileLimit);
  if (!bytes) return Fail(std::move(bytes.error()));
  return ParseLlama2cTokenizer(*bytes, max_pieces);
}

Result<Tokenizer> LoadLlama2cTokenizerFor(const std::string& path, size_t vocabulary_size) {
  Result<Tokenizer> tokenizer = LoadLlama2cTokenizer(path, vocabulary_size);
  if (tokenizer && tokenizer->vocabulary_size() != vocabulary_size) {
    return Fail(llmcp35::VocabularyMismatch(tokenizer->vocabulary_size(), vocabulary_size));
  }
  return tokenizer;
}

Result<std::vector<uint8_t>> EncodeLlama2cTokenizer(const Tokenizer& tokenizer) {
  if (tokenizer.kind() != TokenizerKind::kLlama2c) {
    return Fail(ErrorCode::kInvalidArgument, {},
                "only a llama2c tokenizer has a tokenizer.bin form, not " +
                    std::string(tokenizer.kind_name()));
  }
  std::vector<uint8_t> out;
  llmcp35::AppendLittleEndian(out, tokenizer.max_token_length());
  for (size_t id = 0; id < tokenizer.pieces().size(); ++id) {
    const std::string& piece = tokenizer.pieces()[id];
    llmcp35::AppendLittleEndian(out, std::bit_cast<uint32_t>(tokenizer.scores()[id]));
    llmcp35::AppendLittleEndian(out, static_cast<uint32_t>(piece.size()));
    out.insert(out.end(), piece.begin(), piece.end());
  }
  return out;
}

Result<void> SaveLlama2cTokenizer(const Tokenizer& tokenizer, const std::string& path) {
  Result<std::vector<uint8_t>> bytes = EncodeLlama2cTokenizer(tokenizer);
  if (!bytes) return Fail(std::move(bytes.error()));
  return llama2c::WriteFileAtomically(path, *bytes);
}

}  // namespace kvrt
