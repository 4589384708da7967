#include "generate/generated_text.h"

#include <algorithm>
#include <new>

namespace kvrt {
namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD
// The text buffer is reserved for the planned tokens up to this size; a longer
// text grows it as it goes.
constexpr size_t kMaxReservedTextBytes = size_t{16} << 20;

std::unexpected<Error> InvalidStop(size_t index, const std::string& why) {
  return Fail(ErrorCode::kInvalidStopString, {{"index", uint64_t{index}}},
              "stop string " + std::to_string(index) + " " + why);
}

}  // namespace

Result<void> ValidateStopStrings(std::span<const std::string> stops, bool has_tokenizer) {
  for (size_t i = 0; i < stops.size(); ++i) {
    if (stops[i].empty()) return InvalidStop(i, "is empty");
    if (ValidateUtf8(stops[i])) return InvalidStop(i, "is not UTF-8");
    if (!has_tokenizer) return InvalidStop(i, "needs a tokenizer to decode the text it is matched on");
  }
  return {};
}

Result<GeneratedText> GeneratedText::Create(const std::optional<Tokenizer>& tokenizer,
                                            std::span<const std::string> stops,
                                            std::optional<uint32_t> previous,
                                            size_t planned_tokens) try {
  GeneratedText text;
  text.tokenizer_ = tokenizer;
  text.stops_.assign(stops.begin(), stops.end());
  for (const std::string& stop : stops) text.longest_stop_ = std::max(text.longest_stop_, stop.size());
  text.previous_ = previous;
  size_t longest_token = 0;
  if (tokenizer) {
    for (size_t id = 0; id < tokenizer->vocabulary_size(); ++id) {
      if (Result<std::string_view> bytes = tokenizer->TokenBytes(static_cast<uint32_t>(id))) {
        longest_token = std::max(longest_token, bytes->size());
      }
    }
  }
  const size_t planned_bytes =
      longest_token == 0 || planned_tokens <= kMaxReservedTextBytes / longest_token
          ? planned_tokens * longest_token
          : kMaxReservedTextBytes;
  text.bytes_.reserve(std::min(planned_bytes, kMaxReservedTextBytes));
  // One release shows at most the held stop prefix, an incomplete character and
  // one token, each byte at worst as a 3-byte U+FFFD.
  text.shown_.reserve(3 * (text.longest_stop_ + longest_token + 4));
  return text;
} catch (const std::bad_alloc&) {
  return Fail(ErrorCode::kAllocationFailed, {}, "could not allocate the generated text");
}

bool GeneratedText::Append(uint32_t token, bool end_token) {
  if (end_token || stop_at_) return false;
  const std::optional<uint32_t> previous = std::exchange(previous_, token);
  if (!tokenizer_) {
    decodable_ = false;
    return false;
  }
  Result<std::string_view> piece = tokenizer_->TokenBytesAfter(previous, token);
  if (!piece) {
    decodable_ = false;
    return false;
  }
  const size_t before = bytes_.size();
  bytes_.append(*piece);
  // A stop string that ends in this token's bytes starts at most
  // longest_stop_ − 1 bytes before them; the earliest match wins.
  for (const std::string& stop : stops_) {
    const size_t from = before >= stop.size() - 1 ? before - (stop.size() - 1) : 0;
    const size_t at = std::string_view(bytes_).find(stop, from);
    if (at != std::string_view::npos && (!stop_at_ || at < *stop_at_)) stop_at_ = at;
  }
  return stop_at_.has_value();
}

// The longest end of the text that is a proper prefix of some stop string: it
// may still become one.
size_t GeneratedText::HeldForStops() const {
  const std::string_view text = bytes_;
  size_t held = 0;
  for (const std::string& stop : stops_) {
    for (size_t length = std::min(stop.size() - 1, text.size()); length > held; --length) {
      if (text.ends_with(std::string_view(stop).substr(0, length))) {
        held = length;
        break;
      }
    }
  }
  return held;
}

std::string_view GeneratedText::Kept() const {
  return std::string_view(bytes_).substr(0, stop_at_.value_or(bytes_.size()));
}

std::string_view GeneratedText::Release(bool final) {
  shown_.clear();
  const std::string_view kept = Kept();
  const bool everything = final || stop_at_.has_value();
  const size_t limit = std::max(released_, everything ? kept.size() : kept.size() - HeldForStops());
  while (released_ < limit) {
    const std::string_view rest = kept.substr(released_, limit - released_);
    const std::optional<Utf8Error> error = ValidateUtf8(rest);
    if (!error) {
      shown_.append(rest);
      released_ = limit;
      break;
    }
    shown_.append(rest.substr(0, error->valid_up_to));
    released_ += error->valid_up_to;
    if (!error->error_len) {  // the text ends inside a character
      if (!everything) break;  // the next token may complete it
      shown_.append(kReplacement);
      released_ = limit;
      break;
    }
    shown_.append(kReplacement);
    released_ += *error->error_len;
  }
  return shown_;
}

std::optional<std::string> GeneratedText::TakeText() {
  if (!decodable_ || ValidateUtf8(Kept())) return std::nullopt;
  bytes_.resize(Kept().size());
  released_ = std::min(released_, bytes_.size());
  return std::move(bytes_);
}

}  // namespace kvrt
