// A roofline fraction against a machine probe taken right before and right after
// each timed segment of a benchmark row, instead of once for the whole row.
//
// Why: on a shared VM the machine's speed drifts by tens of percent within seconds
// (other tenants of the host take its cores, caches and memory bandwidth; the same
// L1-resident FMA loop read 0.36 and 0.99 of the peak minutes apart, 2026-12-02).
// A probe taken once at set-up, or the best of many readings, then describes another
// moment than the work it divides: a quiet set-up probe understates a busy row's
// fraction, a busy one inflates it. Each segment
// (one prefill; a run of decode steps between two prefills) is divided by the mean
// of the probes around it, and the row reports the median of those fractions.
#pragma once

#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <utility>
#include <vector>

#include "alternating_timing.h"
#include "bench_session.h"

namespace kvrt::bench {

class PairedRoofline {
 public:
  // `probe` returns the machine's rate (FLOP/s, bytes/s) now; it is called here
  // once and after every segment, so call Segment with the row's timing paused.
  explicit PairedRoofline(std::function<double()> probe)
      : probe_(std::move(probe)), before_(probe_()), best_(before_) {}

  // A segment that did `work` (FLOPs, bytes) in `seconds`, just ended.
  void Segment(double work, double seconds) {
    const double after = probe_();
    if (seconds > 0 && before_ + after > 0) fractions_.push_back(work / seconds / ((before_ + after) / 2));
    best_ = std::max(best_, after);
    before_ = after;
  }

  // The median of the segments' fractions; 0 before any segment.
  double MedianFraction() const {
    if (fractions_.empty()) return 0;
    std::vector<double> sorted = fractions_;
    std::sort(sorted.begin(), sorted.end());
    const size_t mid = sorted.size() / 2;
    return sorted.size() % 2 == 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
  }
  double best_probe() const { return best_; }
  double last_probe() const { return before_; }

  // The row's fraction counters, once its rates are set: the fraction those rates
  // give against the best probe (the caller's roofline_fraction) moves to
  // `best_counter`, and roofline_fraction becomes the median paired fraction.
  void Report(benchmark::State& state, const char* best_counter) const {
    state.counters[best_counter] = state.counters["roofline_fraction"];
    state.counters["roofline_fraction"] = MedianFraction();
  }

 private:
  std::function<double()> probe_;
  double before_;
  double best_;
  std::vector<double> fractions_;
};

// The decode rows' loop: one `decode(token)` step per iteration of `state`, the
// session prefilled with the first `prompt` of `tokens` and, untimed, again every
// `per_prompt` steps (the context stays short, so the weights dominate). Each run of
// steps between two prefills, and the last one, is a segment of `bytes_per_step`
// bytes a step. Returns the seconds of all the timed steps.
template <class Decode>
double DecodeInSegments(benchmark::State& state, BenchSession& bound, std::span<const uint32_t> tokens,
                      size_t prompt, size_t per_prompt, double bytes_per_step, PairedRoofline& roofline,
                      Decode&& decode) {
  bound.Prefill(tokens.first(prompt));
  size_t decoded = 0;
  double seconds = 0;  // the steps since the last probe
  double total_seconds = 0;
  for (auto _ : state) {
    if (decoded == per_prompt) {
      state.PauseTiming();
      roofline.Segment(static_cast<double>(decoded) * bytes_per_step, seconds);
      total_seconds += seconds;
      seconds = 0;
      bound.Prefill(tokens.first(prompt));
      decoded = 0;
      state.ResumeTiming();
    }
    seconds += SecondsOf([&] { decode(tokens[prompt + decoded++]); });
  }
  roofline.Segment(static_cast<double>(decoded) * bytes_per_step, seconds);
  return total_seconds + seconds;
}

}  // namespace kvrt::bench
