// Log-probabilities as OpenAI reports them (docs/sampling.md §8): the softmax at
// temperature 1 over the whole vocabulary of the logits after the bias and the
// penalties, before any candidate is dropped.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "kvrt/sampling.h"

namespace kvrt::sampling {

// log softmax(x)[i] = (x[i] − M) − log S, with M the largest value and S the
// Kahan sum in id order of exp(x[i] − M).
class LogSoftmax {
 public:
  explicit LogSoftmax(std::span<const double> x);
  double Of(double value) const { return (value - max_) - log_total_; }

 private:
  double max_ = 0.0;
  double log_total_ = 0.0;
};

// The first top.size() ids of x's rank order with their log-probabilities;
// `order` is scratch of x.size() ids.
void TopLogprobs(std::span<const double> x, const LogSoftmax& log_softmax, uint32_t* order,
                 std::span<TokenLogprob> top);

}  // namespace kvrt::sampling
