// tokenizer.bin of llama2.c: parsing with every length checked against the bytes
// that remain (so a hostile file allocates nothing it does not contain), and
// encoding for kvrt synth.
#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>
#include <new>
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

// The bytes of a tokenizer.bin in order: Take(n) gives the next n bytes (valid
// until the next call), or nullptr when fewer than n remain.
class SpanSource {
 public:
  explicit SpanSource(std::span<const uint8_t> bytes) : bytes_(bytes) {}
  uint64_t size() const { return bytes_.size(); }
  uint64_t offset() const { return at_; }
  Result<const uint8_t*> Take(size_t n) {
    if (bytes_.size() - at_ < n) return nullptr;
    const uint8_t* out = bytes_.data() + at_;
    at_ += n;
    return out;
  }

 private:
  std::span<const uint8_t> bytes_;
  size_t at_ = 0;
};

// A file read through a window that holds at least one record, so that a file
// of millions of records costs the pieces kept, not the file's size in memory.
class FileSource {
 public:
  // `file` is positioned at `offset`.
  FileSource(llama2c::InputFile& file, std::vector<uint8_t>& window, uint64_t offset)
      : file_(file), window_(window), offset_(offset) {}
  uint64_t size() const { return file_.size(); }
  uint64_t offset() const { return offset_; }
  Result<const uint8_t*> Take(size_t n) {
    if (file_.size() - offset_ < n) return nullptr;
    if (end_ - begin_ < n) {
      std::memmove(window_.data(), window_.data() + begin_, end_ - begin_);
      end_ -= begin_;
      begin_ = 0;
      const uint64_t unread = file_.size() - offset_ - end_;
      const size_t fill = static_cast<size_t>(std::min<uint64_t>(window_.size() - end_, unread));
      if (Result<void> read = file_.Read(std::span<uint8_t>(window_.data() + end_, fill), "tokenizer");
          !read) {
        return Fail(std::move(read.error()));
      }
      end_ += fill;
    }
    const uint8_t* out = window_.data() + begin_;
    begin_ += n;
    offset_ += n;
    return out;
  }

 private:
  llama2c::InputFile& file_;
  std::vector<uint8_t>& window_;  // at least kRecordHeaderBytes + max_token_length
  size_t begin_ = 0, end_ = 0;    // unread bytes of the window
  uint64_t offset_ = 0;           // file offset of window_[begin_]
};

// The records after max_token_length (already validated): at most `max_pieces`
// are decoded, the rest only counted for VocabularyMismatch.
template <class Source>
Result<Tokenizer> ParseRecords(Source& source, int32_t max_token_length, size_t max_pieces) {
  std::vector<std::string> pieces;
  std::vector<float> scores;
  // Each record takes at least 8 bytes, so this reservation is backed by data;
  // it is also bounded by the pieces the caller accepts (a 900 MB file of empty
  // records would otherwise reserve 112 million strings).
  const uint64_t reserved =
      std::min<uint64_t>((source.size() - source.offset()) / kRecordHeaderBytes, max_pieces);
  pieces.reserve(static_cast<size_t>(reserved));
  scores.reserve(static_cast<size_t>(reserved));
  uint64_t records = 0;
  for (; source.offset() < source.size(); ++records) {
    const uint64_t id = records;
    const uint64_t at = source.offset();
    Result<const uint8_t*> header = source.Take(kRecordHeaderBytes);
    if (!header) return Fail(std::move(header.error()));
    if (*header == nullptr) {
      return Fail(llama2c::Truncated("tokenizer record " + std::to_string(id), at + kRecordHeaderBytes,
                                     source.size()));
    }
    const float score = std::bit_cast<float>(llmcp35::LoadLittleEndian<uint32_t>(*header));
    const int32_t length = LoadI32(*header + sizeof(float));
    if (length < 0 || length > max_token_length) {
      return Fail(llama2c::InvalidTokenLength(id, length,
                                              "it must be in [0, max_token_length " +
                                                  std::to_string(max_token_length) + "]"));
    }
    Result<const uint8_t*> piece = source.Take(static_cast<size_t>(length));
    if (!piece) return Fail(std::move(piece.error()));
    if (*piece == nullptr) {
      return Fail(llama2c::Truncated("tokenizer record " + std::to_string(id),
                                     at + kRecordHeaderBytes + static_cast<size_t>(length),
                                     source.size()));
    }
    // Past `max_pieces` the records are only counted, for the error below.
    if (records < max_pieces) {
      pieces.emplace_back(reinterpret_cast<const char*>(*piece), static_cast<size_t>(length));
      scores.push_back(score);
    }
  }
  if (records > max_pieces) return Fail(llmcp35::VocabularyMismatch(records, max_pieces));
  return Tokenizer::Llama2c(std::move(pieces), std::move(scores), static_cast<uint32_t>(max_token_length));
}

Result<int32_t> MaxTokenLength(const uint8_t* bytes) {
  const int32_t max_token_length = LoadI32(bytes);
  if (max_token_length <= 0 || max_token_length > kMaxTokenLengthLimit) {
    return Fail(llama2c::InvalidHeaderValue("max_token_length", max_token_length,
                                            "it must be in [1, 2^20]"));
  }
  return max_token_length;
}

}  // namespace

Result<Tokenizer> ParseLlama2cTokenizer(std::span<const uint8_t> bytes, size_t max_pieces) {
  if (bytes.size() < sizeof(int32_t)) {
    return Fail(llama2c::Truncated("tokenizer max_token_length", sizeof(int32_t), bytes.size()));
  }
  Result<int32_t> max_token_length = MaxTokenLength(bytes.data());
  if (!max_token_length) return Fail(std::move(max_token_length.error()));
  SpanSource source(bytes);
  (void)source.Take(sizeof(int32_t));
  return ParseRecords(source, *max_token_length, max_pieces);
}

Result<Tokenizer> ReadLlama2cTokenizer(const std::string& path, size_t max_pieces) try {
  Result<llama2c::InputFile> file = llama2c::InputFile::Open(path);
  if (!file) return Fail(std::move(file.error()));
  if (file->size() > kTokenizerFileLimit) {
    return Fail(ErrorCode::kInvalidArgument, {},
                path + " has " + std::to_string(file->size()) + " bytes, more than the " +
                    std::to_string(kTokenizerFileLimit) + " this kind of file may have");
  }
  if (file->size() < sizeof(int32_t)) {
    return Fail(llama2c::Truncated("tokenizer max_token_length", sizeof(int32_t), file->size()));
  }
  uint8_t header[sizeof(int32_t)];
  if (Result<void> read = file->Read(header, "tokenizer max_token_length"); !read) {
    return Fail(std::move(read.error()));
  }
  Result<int32_t> max_token_length = MaxTokenLength(header);
  if (!max_token_length) return Fail(std::move(max_token_length.error()));
  // A window of 1 MiB, or one record of the longest piece the header allows.
  const size_t record = kRecordHeaderBytes + static_cast<size_t>(*max_token_length);
  std::vector<uint8_t> window(std::max<size_t>(size_t{1} << 20, record));
  FileSource source(*file, window, sizeof(int32_t));
  return ParseRecords(source, *max_token_length, max_pieces);
} catch (const std::bad_alloc&) {
  return Fail(ErrorCode::kAllocationFailed, {}, "could not allocate the tokenizer of " + path);
}

Result<Tokenizer> LoadLlama2cTokenizer(const std::string& path, std::optional<size_t> vocabulary_size) {
  if (!vocabulary_size) return ReadLlama2cTokenizer(path);
  Result<Tokenizer> tokenizer = ReadLlama2cTokenizer(path, *vocabulary_size);
  if (tokenizer && tokenizer->vocabulary_size() != *vocabulary_size) {
    return Fail(llmcp35::VocabularyMismatch(tokenizer->vocabulary_size(), *vocabulary_size));
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
