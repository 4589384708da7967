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

// `out` keeps its buffer when it has one or when it is not `needed`; else it
// gets one of `count` entries (false when that fails).
template <class T>
bool AllocateIf(bool needed, size_t count, Buffer<T>& out) {
  if (!needed || out.size() == count) return true;
  std::optional<Buffer<T>> buffer = Buffer<T>::Allocate(count);
  if (!buffer) return false;
  out = std::move(*buffer);
  return true;
}

}  // namespace

Result<SamplerChain> SamplerChain::Create(size_t vocabulary_size) {
  SamplerChain chain;
  if (!AllocateIf(true, vocabulary_size, chain.order_) ||
      !AllocateIf(true, vocabulary_size, chain.probabilities_)) {
    return BuffersFailed(vocabulary_size);
  }
  return chain;
}

Result<SamplerChain> SamplerChain::Create(const SamplingMode& mode, const SamplerOptions& options,
                                          size_t vocabulary_size, size_t longest_sequence) {
  if (Result<void> valid = ValidateSamplingMode(mode, vocabulary_size); !valid) {
    return Fail(std::move(valid.error()));
  }
  Result<SamplerChain> chain = Create(vocabulary_size);
  if (!chain) return chain;
  if (Result<void> configured = chain->Configure(mode, options, longest_sequence); !configured) {
    return Fail(std::move(configured.error()));
  }
  return chain;
}

Result<void> SamplerChain::Configure(const SamplingMode& mode, const SamplerOptions& options,
                                     size_t longest_sequence) try {
  const size_t v = vocabulary_size();
  if (Result<void> valid = ValidateSamplingMode(mode, v); !valid) return Fail(std::move(valid.error()));
  if (Result<void> valid = ValidateSamplerOptions(options, v); !valid) return Fail(std::move(valid.error()));
  SamplerOptions copied = options;  // may throw (the bias list): before anything changes
  // Buffers first, so that a failure leaves the chain as it was (a buffer it
  // gains early stays: it is only ever larger storage for the same settings).
  const bool penalties = sampling::PenaltiesActive(options);
  const bool drops = options.typical_p < 1.0 || options.top_p < 1.0 || options.min_p > 0.0;
  const bool typical = options.typical_p < 1.0;
  if (!AllocateIf(penalties || !options.logit_bias.empty(), v, shaped_) || !AllocateIf(drops, v, weights_) ||
      !AllocateIf(typical, v, distances_) || !AllocateIf(typical, v, by_distance_)) {
    return BuffersFailed(v);
  }
  if (penalties && !(window_ && window_->Reset(options.penalty_last_n, longest_sequence))) {
    Result<PenaltyWindow> window = PenaltyWindow::Create(v, options.penalty_last_n, longest_sequence);
    if (!window) return Fail(std::move(window.error()));
    window_.emplace(std::move(*window));
  }
  if (window_ && !penalties) window_->Clear();  // kept for a later request; counts nothing now
  mode_ = mode;
  options_ = std::move(copied);
  candidates_ = 0;
  return {};
} catch (const std::bad_alloc&) {  // copying the bias list
  return BuffersFailed(vocabulary_size());
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
  const bool penalties = sampling::PenaltiesActive(options_);
  if (!penalties && options_.logit_bias.empty()) return logits;
  const PenaltyWindow* window = penalties ? &*window_ : nullptr;
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
  if (window_ && sampling::PenaltiesActive(options_)) window_->Push(token);
}

void SamplerChain::ClearHistory() {
  if (window_) window_->Clear();
}

}  // namespace kvrt
