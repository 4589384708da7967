// The statistics `kvrt generate` prints on stderr after a run, like llama.cpp's
// timings: load time, prompt tokens/s (prefill), generated tokens/s (decode)
// and the KV-cache size.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdio>
#include <optional>

#include "kvrt/config.h"
#include "kvrt/engine_options.h"
#include "kvrt/generation.h"
#include "kvrt/model.h"

namespace kvrt::cli {

class LoadTimer {
 public:
  LoadTimer() : start_(std::chrono::steady_clock::now()) {}
  double Seconds() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }

 private:
  std::chrono::steady_clock::time_point start_;
};

// Time stamps of a generation. The first token is sampled right after the
// prefill, so start → first token is the prefill (plus one sampling), and first
// → last token covers the decode steps.
class GenerationClock {
 public:
  void Start() { start_ = Now(); }
  void TokenSampled() {
    const auto now = Now();
    if (!first_) first_ = now;
    last_ = now;
  }
  double PrefillSeconds() const { return first_ ? Seconds(start_, *first_) : Seconds(start_, Now()); }
  double DecodeSeconds() const { return first_ ? Seconds(*first_, last_) : 0.0; }
  double TotalSeconds() const { return first_ ? Seconds(start_, last_) : 0.0; }

 private:
  using TimePoint = std::chrono::steady_clock::time_point;
  static TimePoint Now() { return std::chrono::steady_clock::now(); }
  static double Seconds(TimePoint from, TimePoint to) {
    return std::chrono::duration<double>(to - from).count();
  }
  TimePoint start_{};
  std::optional<TimePoint> first_;
  TimePoint last_{};
};

// Bytes of the keys and values a cache of `positions` holds.
size_t KvCacheBytes(const ModelConfig& config, const EngineOptions& engine, size_t positions);

// The first line names the engine and its weight formats (fallbacks included);
// the cache holds `positions` (the context size).
void PrintGenerationStats(std::FILE* out, const Model& model, const EngineOptions& engine,
                          double load_seconds, const GenerationResult& run,
                          const GenerationClock& clock, bool cached, size_t positions);

}  // namespace kvrt::cli
