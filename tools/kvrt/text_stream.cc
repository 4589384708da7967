#include "text_stream.h"

#include "kvrt/tokenizer.h"

namespace kvrt::cli {
namespace {
constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD
}

void Utf8Stream::Write(std::string_view bytes) {
  pending_.append(bytes);
  for (;;) {
    const std::optional<Utf8Error> error = ValidateUtf8(pending_);
    if (!error) {
      std::fwrite(pending_.data(), 1, pending_.size(), out_);
      pending_.clear();
      break;
    }
    std::fwrite(pending_.data(), 1, error->valid_up_to, out_);
    if (!error->error_len) {  // an incomplete character: wait for the next token
      pending_.erase(0, error->valid_up_to);
      break;
    }
    std::fwrite(kReplacement.data(), 1, kReplacement.size(), out_);
    pending_.erase(0, error->valid_up_to + *error->error_len);
  }
}

void Utf8Stream::Finish() {
  if (!pending_.empty()) std::fwrite(kReplacement.data(), 1, kReplacement.size(), out_);
  pending_.clear();
}

}  // namespace kvrt::cli
