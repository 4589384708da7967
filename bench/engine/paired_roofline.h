// A roofline fraction against a machine probe taken right before and right after
// each timed segment of a benchmark row, instead of once for the whole row.
//
// Why: on a shared VM the machine's speed drifts by tens of percent within seconds
// (other tenants of the host take its cores, caches and memory bandwidth; the same
// L1-resident FMA loop read 0.36 and 0.99 of the peak minutes apart, 2026-12-02).
// A probe taken once at set-up, or the best of many
// readings, then describes another moment than the work it divides: a quiet set-up
// probe understates a busy row's fraction, a busy one inflates it. Each segment
// (one prefill; a run of decode steps between two prefills) is divided by the mean
// of the probes around it, and the row reports the median of those fractions.
#pragma once

#include <algorithm>
#include <cstddef>
#include <functional>
#include <utility>
#include <vector>

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

 private:
  std::function<double()> probe_;
  double before_;
  double best_;
  std::vector<double> fractions_;
};

}  // namespace kvrt::bench
