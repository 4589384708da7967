#include "generate/log_probabilities.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "generate/sampling_steps.h"

namespace kvrt::sampling {

LogSoftmax::LogSoftmax(std::span<const double> x) : max_(x[FirstRanked(x)]) {
  KahanSum total;
  for (const double value : x) total.Add(std::exp(value - max_));
  log_total_ = std::log(total.value());
}

void TopLogprobs(std::span<const double> x, const LogSoftmax& log_softmax, uint32_t* order,
                 std::span<TokenLogprob> top) {
  if (top.empty()) return;
  std::iota(order, order + x.size(), uint32_t{0});
  std::partial_sort(order, order + top.size(), order + x.size(), RanksBefore{x.data()});
  for (size_t i = 0; i < top.size(); ++i) top[i] = {order[i], log_softmax.Of(x[order[i]])};
}

}  // namespace kvrt::sampling
