// TokenSampler (kvrt/sampling.h): the sampler set with its own RNG and history,
// for a decode loop the host writes itself.
#include <cstdint>
#include <new>
#include <string>

#include "generate/sampler_chain.h"
#include "kvrt/sampling.h"

namespace kvrt {

struct TokenSampler::Impl {
  SamplerChain chain;
  uint64_t initial_state;
  SplitMix64 rng;
};

TokenSampler::TokenSampler(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
TokenSampler::TokenSampler(TokenSampler&&) noexcept = default;
TokenSampler& TokenSampler::operator=(TokenSampler&&) noexcept = default;
TokenSampler::~TokenSampler() = default;

Result<TokenSampler> TokenSampler::Create(const SamplingMode& mode, const SamplerOptions& options,
                                          size_t vocabulary_size, uint64_t rng_state) try {
  // The host's sequence has no known bound: a window keeps its own length.
  Result<SamplerChain> chain = SamplerChain::Create(mode, options, vocabulary_size, SIZE_MAX);
  if (!chain) return Fail(std::move(chain.error()));
  return TokenSampler(std::unique_ptr<Impl>(new Impl{std::move(*chain), rng_state, SplitMix64(rng_state)}));
} catch (const std::bad_alloc&) {
  return Fail(ErrorCode::kAllocationFailed, {}, "could not allocate the token sampler");
}

Result<TokenSelection> TokenSampler::Sample(std::span<const double> logits) {
  return impl_->chain.Sample(logits, impl_->rng);
}

Result<void> TokenSampler::Accept(uint32_t token) {
  const size_t vocabulary = impl_->chain.vocabulary_size();
  if (token >= vocabulary) {
    return Fail(ErrorCode::kTokenIdOutOfBounds,
                {{"id", uint64_t{token}}, {"vocabulary_size", uint64_t{vocabulary}}},
                "accepted token " + std::to_string(token) + " is out of bounds for vocabulary " +
                    std::to_string(vocabulary));
  }
  impl_->chain.Accept(token);
  return {};
}

void TokenSampler::Reset() {
  impl_->chain.ClearHistory();
  impl_->rng = SplitMix64(impl_->initial_state);
}

uint64_t TokenSampler::rng_state() const { return impl_->rng.state(); }

}  // namespace kvrt
