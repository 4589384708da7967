#include "generate/sampler_chain.h"

#include <algorithm>
#include <new>
#include <string>

#include "generate/candidate_filters.h"
#include "generate/log_probabilities.h"
#include "generate/logit_shaping.h"
#include "generate/sampling_steps.h"

namespace kvrt {
namespace {

std::unexpected<Error> BuffersFailed(size_t vocabulary_size) {
  return Fail(ErrorCode::kAllocationFailed, {{"values", uint64_t{vocabulary_size}}},
              "could not allocate sampling buffers for " + std::to_string(vocabulary_size) + " values");
}

// A buffer of `count` entries when `needed`, else an empty one.
template <class T>
bool AllocateIf(bool needed, size_t count, Buffer<T>& out) {
  if (!needed) return true;
  std::optional<Buffer<T>> buffer = Buffer<T>::Allocate(count);
  if (!buffer) return false;
  out = std::move(*buffer);
  return true;
}

}  // namespace

Result<SamplerChain> SamplerChain::Create(const SamplingMode& mode, const SamplerOptions& options,
                                          size_t vocabulary_size, size_t longest_sequence) try {
  if (Result<void> valid = ValidateSamplingMode(mode, vocabulary_size); !valid) {
    return Fail(std::move(valid.error()));
  }
  if (Result<void> valid = ValidateSamplerOptions(options, vocabulary_size); !valid) {
    return Fail(std::move(valid.error()));
  }
  SamplerChain chain;
  chain.mode_ = mode;
  chain.options_ = options;
  const bool penalties = sampling::PenaltiesActive(options);
  if (penalties) {
    Result<PenaltyWindow> window =
        PenaltyWindow::Create(vocabulary_size, options.penalty_last_n, longest_sequence);
    if (!window) return Fail(std::move(window.error()));
    chain.window_.emplace(std::move(*window));
  }
  const size_t v = vocabulary_size;
  const bool typical = options.typical_p < 1.0;
  if (!AllocateIf(true, v, chain.order_) || !AllocateIf(true, v, chain.probabilities_) ||
      !AllocateIf(penalties || !options.logit_bias.empty(), v, chain.shaped_) ||
      !AllocateIf(chain.DropsCandidates(), v, chain.weights_) ||
      !AllocateIf(typical, v, chain.distances_) || !AllocateIf(typical, v, chain.by_distance_)) {
    return BuffersFailed(v);
  }
  return chain;
} catch (const std::bad_alloc&) {  // copying the bias list
  return BuffersFailed(vocabulary_size);
}

bool SamplerChain::DropsCandidates() const {
  return options_.typical_p < 1.0 || options_.top_p < 1.0 || options_.min_p > 0.0;
}

size_t SamplerChain::KeepCandidates(std::span<const double> x, size_t count) {
  uint32_t* candidates = order_.data();
  if (options_.typical_p < 1.0) {
    count = sampling::KeepTypical(x, candidates, count, options_.typical_p, weights_.data(),
                                  distances_.data(), by_distance_.data());
  }
  if (options_.top_p < 1.0) {
    count = sampling::KeepTopP(x, candidates, count, options_.top_p, weights_.data());
  }
  if (options_.min_p > 0.0) {
    count = sampling::KeepMinP(x, candidates, count, options_.min_p, weights_.data());
  }
  return count;
}

Result<TokenSelection> SamplerChain::Sample(std::span<const double> logits, SplitMix64& rng,
                                            StepLogprobs* logprobs) {
  if (Result<void> valid = sampling::ValidateLogits(logits); !valid) {
    return Fail(std::move(valid.error()));
  }
  if (logits.size() != vocabulary_size()) {
    return Fail(ErrorCode::kLogitCountMismatch,
                {{"expected", uint64_t{vocabulary_size()}}, {"actual", uint64_t{logits.size()}}},
                "sampler expects " + std::to_string(vocabulary_size()) + " logits, received " +
                    std::to_string(logits.size()));
  }
  Result<std::span<const double>> x = Shape(logits);
  if (!x) return Fail(std::move(x.error()));
  std::optional<sampling::LogSoftmax> log_softmax;
  if (logprobs != nullptr) {
    log_softmax.emplace(*x);
    sampling::TopLogprobs(*x, *log_softmax, order_.data(), logprobs->top);
  }
  Result<TokenSelection> selection = Pick(*x, rng);
  if (selection && logprobs != nullptr) logprobs->chosen = log_softmax->Of((*x)[selection->token_id]);
  return selection;
}

// §2: the logits themselves, or their copy with the bias and the penalties.
Result<std::span<const double>> SamplerChain::Shape(std::span<const double> logits) {
  if (shaped_.empty()) return logits;
  const PenaltyWindow* window = window_ ? &*window_ : nullptr;
  if (Result<void> shaped = sampling::ShapeLogits(logits, options_, window, shaped_.span()); !shaped) {
    return Fail(std::move(shaped.error()));
  }
  return std::span<const double>(shaped_.span());
}

// §3–§7: the candidates, then greedy's first one or the one draw.
Result<TokenSelection> SamplerChain::Pick(std::span<const double> x, SplitMix64& rng) {
  const size_t v = vocabulary_size();
  const bool greedy = mode_.kind == SamplingMode::Kind::kGreedy;
  candidates_ = 0;
  // Top-k, top-p and min-p always keep the first-ranked token, so greedy only
  // ranks when typical-p may drop it.
  if (greedy && options_.typical_p >= 1.0) {
    TokenSelection selection;
    selection.token_id = sampling::FirstRanked(x);
    return selection;
  }
  const size_t top_k = mode_.kind == SamplingMode::Kind::kTemperatureTopK ? mode_.top_k : v;
  sampling::RankIds(x, top_k, order_.data());
  candidates_ = DropsCandidates() ? KeepCandidates(x, top_k) : top_k;
  if (greedy) {
    TokenSelection selection;
    selection.token_id = order_[0];
    return selection;
  }
  double* p = probabilities_.data();
  std::fill_n(p, v, 0.0);
  if (Result<void> weighed = sampling::WeighRetained(x, last_candidates(), mode_.temperature, p); !weighed) {
    return Fail(std::move(weighed.error()));
  }
  if (Result<void> summed = sampling::CheckProbabilitySum(p, v); !summed) return Fail(std::move(summed.error()));
  // The only RNG use: one draw, after every check passed.
  return sampling::SelectByDraw(p, v, rng.NextUnit());
}

void SamplerChain::Accept(uint32_t token) {
  if (window_) window_->Push(token);
}

void SamplerChain::ClearHistory() {
  if (window_) window_->Clear();
}

}  // namespace kvrt
