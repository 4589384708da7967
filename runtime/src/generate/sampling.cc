// The reference crate's sampler (spec/sampling.md §2): Sampler and the mode checks.
#include "kvrt/sampling.h"

#include <algorithm>
#include <cmath>
#include <new>
#include <string>

#include "core/buffer.h"
#include "core/rust_format.h"
#include "generate/sampling_steps.h"

namespace kvrt {
namespace {

using sampling::FirstRanked;
using sampling::RankIds;
using sampling::WalkIntervals;

// Spec §2.7: the distribution behind a selection, from the full rank order.
void Describe(const uint32_t* order, size_t v, size_t keep, const double* p,
              TokenDistribution& distribution) {
  distribution.rank_order.assign(order, order + v);
  distribution.retained_in_rank_order.assign(order, order + keep);
  distribution.probabilities.assign(p, p + v);
  distribution.intervals.clear();
  WalkIntervals(p, v, [&](uint32_t id, double start, double end, bool) {
    distribution.intervals.push_back({id, start, end});
    return false;
  });
}

}  // namespace

Result<void> ValidateSamplingMode(const SamplingMode& mode, size_t vocabulary_size) {
  if (mode.kind == SamplingMode::Kind::kGreedy) return {};
  if (!std::isfinite(mode.temperature) || mode.temperature <= 0.0) {
    return Fail(ErrorCode::kInvalidTemperature, {{"value", mode.temperature}},
                "sampling temperature must be finite and positive, received " +
                    RustDisplay(mode.temperature));
  }
  if (mode.kind == SamplingMode::Kind::kTemperature) return {};
  if (mode.top_k == 0 || mode.top_k > vocabulary_size) {
    return Fail(ErrorCode::kInvalidTopK,
                {{"top_k", uint64_t{mode.top_k}}, {"vocabulary_size", uint64_t{vocabulary_size}}},
                "top-k must be in 1..=" + std::to_string(vocabulary_size) + ", received " +
                    std::to_string(mode.top_k));
  }
  return {};
}

struct Sampler::Buffers {
  Buffer<uint32_t> order;        // ids, ranked
  Buffer<double> probabilities;  // by id
};

Sampler::Sampler(std::unique_ptr<Buffers> buffers) : buffers_(std::move(buffers)) {}
Sampler::Sampler(Sampler&&) noexcept = default;
Sampler& Sampler::operator=(Sampler&&) noexcept = default;
Sampler::~Sampler() = default;

Result<Sampler> Sampler::Create(size_t vocabulary_size) try {
  std::optional<Buffer<uint32_t>> order = Buffer<uint32_t>::Allocate(vocabulary_size);
  std::optional<Buffer<double>> probabilities = Buffer<double>::Allocate(vocabulary_size);
  if (!order || !probabilities) {
    return Fail(
        ErrorCode::kAllocationFailed, {{"values", uint64_t{vocabulary_size}}},
        "could not allocate sampling buffers for " + std::to_string(vocabulary_size) + " values");
  }
  return Sampler(std::unique_ptr<Buffers>(new Buffers{std::move(*order), std::move(*probabilities)}));
} catch (const std::bad_alloc&) {
  return Fail(ErrorCode::kAllocationFailed, {{"values", uint64_t{vocabulary_size}}},
              "could not allocate sampling buffers for " + std::to_string(vocabulary_size) + " values");
}

Result<TokenSelection> Sampler::Sample(std::span<const double> logits, const SamplingMode& mode,
                                       SplitMix64& rng, TokenDistribution* distribution) {
  if (Result<void> valid = sampling::ValidateLogits(logits); !valid) return Fail(std::move(valid.error()));
  const size_t v = logits.size();
  if (v > buffers_->order.size()) {
    return Fail(ErrorCode::kAllocationFailed, {{"values", uint64_t{v}}},
                "sampler buffers hold " + std::to_string(buffers_->order.size()) + " values, " +
                    std::to_string(v) + " needed");
  }
  if (Result<void> valid = ValidateSamplingMode(mode, v); !valid)
    return Fail(std::move(valid.error()));
  const bool greedy = mode.kind == SamplingMode::Kind::kGreedy;
  if (greedy && distribution == nullptr) {
    TokenSelection selection;
    selection.token_id = FirstRanked(logits);
    return selection;
  }

  const size_t keep = greedy ? 1 : mode.kind == SamplingMode::Kind::kTemperature ? v : mode.top_k;
  uint32_t* order = buffers_->order.data();
  RankIds(logits, distribution != nullptr ? v : keep, order);
  double* p = buffers_->probabilities.data();
  std::fill_n(p, v, 0.0);
  TokenSelection selection;
  if (greedy) {
    p[order[0]] = 1.0;  // one-hot; no draw
    selection.token_id = order[0];
  } else {
    if (Result<void> weighed = sampling::WeighRetained(logits, {order, keep}, mode.temperature, p);
        !weighed)
      return Fail(std::move(weighed.error()));
    if (Result<void> summed = sampling::CheckProbabilitySum(p, v); !summed)
      return Fail(std::move(summed.error()));
    // The only RNG use: one draw, after every check passed.
    selection = sampling::SelectByDraw(p, v, rng.NextUnit());
  }
  if (distribution != nullptr) Describe(order, v, keep, p, *distribution);
  return selection;
}

Result<TokenSelection> SampleNextToken(std::span<const double> logits, const SamplingMode& mode,
                                       SplitMix64& rng, TokenDistribution* distribution) {
  Result<Sampler> sampler = Sampler::Create(logits.size());
  if (!sampler) return Fail(std::move(sampler.error()));
  return sampler->Sample(logits, mode, rng, distribution);
}

}  // namespace kvrt
