// Prints generated text as tokens arrive. A token may end in the middle of a
// UTF-8 character (byte-BPE merges cross character boundaries), so bytes are held
// back until they form complete characters; bytes that can never be valid are
// shown as U+FFFD. This is display only: the strict decoded text of a run comes
// from Tokenizer::DecodeContentUtf8. The caller flushes (and checks) the stream
// when the text should show.
#pragma once

#include <cstdio>
#include <string>
#include <string_view>

namespace kvrt::cli {

class Utf8Stream {
 public:
  explicit Utf8Stream(std::FILE* out) : out_(out) {}
  void Write(std::string_view bytes);
  // Flushes what is left (an incomplete character becomes U+FFFD).
  void Finish();

 private:
  std::FILE* out_;
  std::string pending_;
};

}  // namespace kvrt::cli
