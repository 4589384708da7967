#include "request_lines.h"

#include <cstring>
#include <utility>

#include "flags.h"

namespace kvrt::cli {
namespace {

constexpr size_t kChunkBytes = size_t{1} << 16;

}  // namespace

Result<RequestLines> RequestLines::Open(const std::string& path) {
  Result<InputFile> file = InputFile::Open(path, "a requests file");
  if (!file) return std::unexpected(file.error());
  return RequestLines(std::move(*file));
}

Result<bool> RequestLines::Fill() {
  if (end_of_file_) return false;
  // Drop what was consumed, then read one chunk after the rest.
  buffer_.erase(buffer_.begin(), buffer_.begin() + static_cast<std::ptrdiff_t>(begin_));
  begin_ = 0;
  const size_t kept = buffer_.size();
  buffer_.resize(kept + kChunkBytes);
  Result<size_t> got = file_.ReadAt(offset_, std::span<char>(buffer_.data() + kept, kChunkBytes));
  if (!got) {
    buffer_.resize(kept);
    return std::unexpected(got.error());
  }
  buffer_.resize(kept + *got);
  offset_ += *got;
  if (*got == 0) end_of_file_ = true;
  return *got > 0;
}

Result<std::optional<std::string_view>> RequestLines::Next() {
  size_t scanned = 0;  // leading bytes of the unread part known to hold no '\n'
  while (true) {
    const char* unread = buffer_.data() + begin_;
    const size_t available = buffer_.size() - begin_;
    // memchr's pointer must not be null even for zero bytes, and an empty
    // buffer's data() may be.
    const void* newline = available > scanned ? std::memchr(unread + scanned, '\n', available - scanned) : nullptr;
    const size_t length = newline ? static_cast<size_t>(static_cast<const char*>(newline) - unread) : available;
    if (length > kMaxRequestLineBytes) {
      return std::unexpected(InvalidArgument("requests line " + std::to_string(line_number_ + 1) +
                                             " is longer than " + std::to_string(kMaxRequestLineBytes) +
                                             " bytes, the most a request line may have"));
    }
    if (newline != nullptr || end_of_file_) {
      if (newline == nullptr && length == 0) return std::optional<std::string_view>();  // the end
      begin_ += length + (newline != nullptr ? 1 : 0);
      ++line_number_;
      return std::optional<std::string_view>(std::string_view(unread, length));
    }
    scanned = available;
    Result<bool> filled = Fill();  // keeps the unread bytes, moved to the front
    if (!filled) return std::unexpected(filled.error());
  }
}

void RequestLines::Rewind() {
  offset_ = 0;
  buffer_.clear();
  begin_ = 0;
  line_number_ = 0;
  end_of_file_ = false;
}

}  // namespace kvrt::cli
