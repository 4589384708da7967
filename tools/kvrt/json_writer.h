// A small streaming JSON writer for the CLI's output. Floats are written with 17
// significant digits (printf "%.17g"), so every double round-trips exactly.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace kvrt::cli {

class JsonWriter {
 public:
  JsonWriter& BeginObject();
  JsonWriter& EndObject();
  JsonWriter& BeginArray();
  JsonWriter& EndArray();
  JsonWriter& Key(std::string_view key);
  JsonWriter& String(std::string_view value);
  JsonWriter& Number(double value);
  JsonWriter& Unsigned(uint64_t value);
  JsonWriter& Bool(bool value);
  JsonWriter& Null();

  template <class T>
  JsonWriter& UnsignedArray(std::span<const T> values) {
    BeginArray();
    for (T v : values) Unsigned(v);
    return EndArray();
  }
  JsonWriter& NumberArray(std::span<const double> values);

  const std::string& text() const { return text_; }

 private:
  void Separate();
  std::string text_;
  std::vector<bool> first_in_container_;
  bool after_key_ = false;
};

// printf("%.17g") of a finite double; JSON has no NaN/inf, so those become null.
std::string Float17(double value);

}  // namespace kvrt::cli
