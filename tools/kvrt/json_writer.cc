#include "json_writer.h"

#include <cmath>
#include <cstdio>

#include <nlohmann/json.hpp>

namespace kvrt::cli {

std::string Float17(double value) {
  if (!std::isfinite(value)) return "null";
  char buffer[40];
  std::snprintf(buffer, sizeof buffer, "%.17g", value);
  return buffer;
}

void JsonWriter::Separate() {
  if (after_key_) {
    after_key_ = false;
    return;
  }
  if (!first_in_container_.empty()) {
    if (!first_in_container_.back()) text_ += ',';
    first_in_container_.back() = false;
  }
}

JsonWriter& JsonWriter::BeginObject() {
  Separate();
  text_ += '{';
  first_in_container_.push_back(true);
  return *this;
}

JsonWriter& JsonWriter::EndObject() {
  text_ += '}';
  first_in_container_.pop_back();
  return *this;
}

JsonWriter& JsonWriter::BeginArray() {
  Separate();
  text_ += '[';
  first_in_container_.push_back(true);
  return *this;
}

JsonWriter& JsonWriter::EndArray() {
  text_ += ']';
  first_in_container_.pop_back();
  return *this;
}

JsonWriter& JsonWriter::Key(std::string_view key) {
  String(key);
  text_ += ':';
  after_key_ = true;
  return *this;
}

JsonWriter& JsonWriter::String(std::string_view value) {
  Separate();
  // nlohmann's serializer escapes what JSON requires and, with `replace`, turns
  // every byte that is not valid UTF-8 (a Latin-1 file name, say) into U+FFFD:
  // the output is valid JSON whatever bytes a path or piece of text holds.
  text_ += nlohmann::json(std::string(value)).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return *this;
}

JsonWriter& JsonWriter::Number(double value) {
  Separate();
  text_ += Float17(value);
  return *this;
}

JsonWriter& JsonWriter::Unsigned(uint64_t value) {
  Separate();
  text_ += std::to_string(value);
  return *this;
}

JsonWriter& JsonWriter::Bool(bool value) {
  Separate();
  text_ += value ? "true" : "false";
  return *this;
}

JsonWriter& JsonWriter::Null() {
  Separate();
  text_ += "null";
  return *this;
}

JsonWriter& JsonWriter::NumberArray(std::span<const double> values) {
  BeginArray();
  for (double v : values) Number(v);
  return EndArray();
}

}  // namespace kvrt::cli
