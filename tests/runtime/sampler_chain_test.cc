// The sampler set's fast path (SamplerChain, TokenSampler) against the scalar
// oracle of docs/sampling.md: 10,000 random cases per sampler, bit for bit
// (token, draw, interval, log-probabilities, RNG state, error), with ties,
// signed zeros, ±1e30 extremes and every identity value among the cases; and
// each sampler at its identity value leaves the reference crate's sampler
// (Sampler, spec/sampling.md §2) unchanged, draws included.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <functional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "generate/sampler_chain.h"
#include "kvrt/sampling.h"
#include "sampler_oracle.h"

namespace kvrt {
namespace {

using Rng = std::mt19937_64;

double Uniform(Rng& rng, double low, double high) {
  return low + (high - low) * std::uniform_real_distribution<double>(0.0, 1.0)(rng);
}

// Logits with the cases that break careless code: ties (small integers), signed
// zeros, ±1e30 and values a temperature turns into underflowing weights.
std::vector<double> RandomLogits(Rng& rng) {
  const size_t v = rng() % 100 == 0 ? 200 + rng() % 2000 : 1 + rng() % 40;
  const int style = static_cast<int>(rng() % 4);
  std::vector<double> logits(v);
  for (double& l : logits) {
    switch (style == 3 ? rng() % 6 : static_cast<uint64_t>(style)) {
      case 0: l = Uniform(rng, -8.0, 8.0); break;
      case 1: l = static_cast<double>(static_cast<int>(rng() % 5) - 2); break;  // ties
      case 2: l = rng() % 2 ? 0.0 : -0.0; break;
      case 3: l = rng() % 2 ? 1e30 : -1e30; break;
      case 4: l = Uniform(rng, -800.0, 800.0); break;
      default: l = Uniform(rng, -1e-3, 1e-3); break;
    }
  }
  return logits;
}

double RandomTemperature(Rng& rng) {
  constexpr double kChoices[] = {1.0, 0.5, 2.0, 1e-3, 250.0, 0.999999, 1.000001};
  return rng() % 3 == 0 ? kChoices[rng() % std::size(kChoices)] : Uniform(rng, 0.05, 3.0);
}

SamplingMode RandomMode(Rng& rng, size_t v) {
  switch (rng() % 3) {
    case 0: return SamplingMode::Greedy();
    case 1: return SamplingMode::TemperatureTopK(RandomTemperature(rng), 1 + rng() % v);
    default: return SamplingMode::Temperature(RandomTemperature(rng));
  }
}

// A probability-like setting: its identity value in one case of eight, the
// edges 0 and 1 sometimes, a power of two (which tied logits' probabilities hit
// exactly, so the ≥ and > of the rules matter), else anything in between.
double RandomFraction(Rng& rng, double identity) {
  switch (rng() % 8) {
    case 0: return identity;
    case 1: return rng() % 2 ? 0.0 : 1.0;
    case 2: return 1.0 / static_cast<double>(uint64_t{1} << (1 + rng() % 4));
    default: return Uniform(rng, 0.0, 1.0);
  }
}

struct Case {
  std::vector<double> logits;
  SamplingMode mode;
  SamplerOptions options;
  std::vector<uint32_t> sequence;
  uint64_t rng_state = 0;
  size_t top_n = 0;
};

// The options each sampler's cases set (the others stay at identity).
using Shape = std::function<void(Rng&, Case&)>;

void RandomPenaltyWindow(Rng& rng, Case& c) {
  const int64_t choices[] = {-1, 1, 3, 64, static_cast<int64_t>(rng() % 20)};
  c.options.penalty_last_n = choices[rng() % std::size(choices)];
}

const std::vector<std::pair<std::string, Shape>>& Samplers() {
  static const std::vector<std::pair<std::string, Shape>> samplers = {
      {"logit_bias",
       [](Rng& rng, Case& c) {
         const size_t entries = rng() % 4;
         for (size_t i = 0; i < entries; ++i) {
           const double bias = rng() % 8 == 0 ? 0.0 : rng() % 10 == 0 ? 1e30 : Uniform(rng, -20.0, 20.0);
           c.options.logit_bias.push_back({static_cast<uint32_t>(rng() % c.logits.size()), bias});
         }
         if (rng() % 50 == 0) {  // twice 1e308 on one id overflows: NonFiniteLogit, no draw
           const uint32_t id = static_cast<uint32_t>(rng() % c.logits.size());
           c.options.logit_bias.push_back({id, 1e308});
           c.options.logit_bias.push_back({id, 1e308});
         }
       }},
      {"repetition_penalty",
       [](Rng& rng, Case& c) {
         c.options.repetition_penalty = rng() % 8 == 0 ? 1.0 : Uniform(rng, 0.5, 2.0);
         RandomPenaltyWindow(rng, c);
       }},
      {"frequency_penalty",
       [](Rng& rng, Case& c) {
         c.options.frequency_penalty = rng() % 8 == 0 ? 0.0 : Uniform(rng, -2.0, 2.0);
         RandomPenaltyWindow(rng, c);
       }},
      {"presence_penalty",
       [](Rng& rng, Case& c) {
         c.options.presence_penalty = rng() % 8 == 0 ? 0.0 : Uniform(rng, -2.0, 2.0);
         RandomPenaltyWindow(rng, c);
       }},
      {"top_k", [](Rng& rng, Case& c) {
         c.mode = SamplingMode::TemperatureTopK(RandomTemperature(rng), 1 + rng() % c.logits.size());
       }},
      {"typical_p", [](Rng& rng, Case& c) { c.options.typical_p = RandomFraction(rng, 1.0); }},
      {"top_p", [](Rng& rng, Case& c) { c.options.top_p = RandomFraction(rng, 1.0); }},
      {"min_p", [](Rng& rng, Case& c) { c.options.min_p = RandomFraction(rng, 0.0); }},
      {"temperature", [](Rng& rng, Case& c) { c.mode = SamplingMode::Temperature(RandomTemperature(rng)); }},
      {"greedy", [](Rng&, Case& c) { c.mode = SamplingMode::Greedy(); }},
      {"all_together",
       [](Rng& rng, Case& c) {
         for (const auto& [name, shape] : Samplers()) {
           if (name != "all_together" && name != "greedy" && name != "temperature" && rng() % 2) shape(rng, c);
         }
       }},
  };
  return samplers;
}

Case RandomCase(Rng& rng, const Shape& shape) {
  Case c;
  c.logits = RandomLogits(rng);
  const size_t v = c.logits.size();
  c.mode = RandomMode(rng, v);
  const size_t length = rng() % 30;
  for (size_t i = 0; i < length; ++i) c.sequence.push_back(static_cast<uint32_t>(rng() % v));
  c.rng_state = rng();
  c.top_n = rng() % 3 == 0 ? 0 : rng() % (v + 1);
  shape(rng, c);
  return c;
}

// The fast path's outcome of one case, or its error code.
struct FastOutcome {
  std::optional<ErrorCode> error;
  TokenSelection selection;
  double logprob = 0.0;
  std::vector<TokenLogprob> top;
  uint64_t rng_state = 0;
};

FastOutcome RunFast(const Case& c) {
  FastOutcome out;
  Result<SamplerChain> chain = SamplerChain::Create(c.mode, c.options, c.logits.size(), SIZE_MAX);
  if (!chain) {
    out.error = chain.error().code();
    return out;
  }
  for (const uint32_t token : c.sequence) chain->Accept(token);
  SplitMix64 rng(c.rng_state);
  out.top.resize(c.top_n);
  StepLogprobs logprobs{0.0, out.top};
  Result<TokenSelection> selection = chain->Sample(c.logits, rng, &logprobs);
  out.rng_state = rng.state();
  if (!selection) {
    out.error = selection.error().code();
    return out;
  }
  out.selection = *selection;
  out.logprob = logprobs.chosen;
  return out;
}

uint64_t Bits(double x) { return std::bit_cast<uint64_t>(x); }

// Compares one case; a message naming the difference, or empty.
std::string Compare(const Case& c) {
  SplitMix64 oracle_rng(c.rng_state);
  const std::expected<testing::OracleOutcome, ErrorCode> want =
      testing::OracleSample(c.logits, c.mode, c.options, c.sequence, oracle_rng, c.top_n);
  const FastOutcome got = RunFast(c);
  if (!want || got.error) {
    if (!want && got.error && *got.error == want.error() && got.rng_state == c.rng_state) return "";
    return std::string("error mismatch: oracle ") + (want ? "ok" : std::string(ErrorName(want.error()))) +
           ", fast " + (got.error ? std::string(ErrorName(*got.error)) : "ok");
  }
  if (got.selection.token_id != want->selection.token_id) {
    return "token " + std::to_string(got.selection.token_id) + " != " + std::to_string(want->selection.token_id);
  }
  if (got.selection.unit_draw.has_value() != want->selection.unit_draw.has_value() ||
      (got.selection.unit_draw && Bits(*got.selection.unit_draw) != Bits(*want->selection.unit_draw)) ||
      Bits(got.selection.interval_start) != Bits(want->selection.interval_start) ||
      Bits(got.selection.interval_end) != Bits(want->selection.interval_end)) {
    return "draw or interval bits differ";
  }
  if (got.rng_state != oracle_rng.state()) return "RNG state differs";
  if (Bits(got.logprob) != Bits(want->logprob)) return "logprob bits differ";
  for (size_t i = 0; i < c.top_n; ++i) {
    if (got.top[i].token_id != want->top[i].token_id || Bits(got.top[i].logprob) != Bits(want->top[i].logprob)) {
      return "top logprob " + std::to_string(i) + " differs";
    }
  }
  return "";
}

TEST(SamplerChainTest, TheFastPathEqualsTheOracleOverTenThousandCasesPerSampler) {
  for (const auto& [name, shape] : Samplers()) {
    Rng rng(std::hash<std::string>{}(name));
    size_t errors = 0, draws = 0, mismatches = 0;
    for (int i = 0; i < 10000; ++i) {
      const Case c = RandomCase(rng, shape);
      const std::string problem = Compare(c);
      if (!problem.empty() && ++mismatches <= 3) ADD_FAILURE() << name << " case " << i << ": " << problem;
      SplitMix64 probe(c.rng_state);
      const auto outcome = testing::OracleSample(c.logits, c.mode, c.options, c.sequence, probe, 0);
      errors += !outcome;
      draws += outcome && outcome->selection.unit_draw.has_value();
    }
    EXPECT_EQ(mismatches, 0u) << name;
    // The cases exercise both greedy picks and draws, and the errors stay rare.
    if (name != "greedy") {
      EXPECT_GT(draws, 3000u) << name;
    }
    EXPECT_LT(errors, 1000u) << name;
    std::printf("[ sampler  ] %-18s 10000 cases, %zu draws, %zu errors, %zu mismatches\n", name.c_str(), draws,
                errors, mismatches);
  }
}

// The identity values against the reference crate's own sampler: same token,
// same draw and interval bits, same RNG state.
TEST(SamplerChainTest, EveryIdentityValueLeavesTheReferenceSamplerUnchanged) {
  Rng rng(41);
  for (int i = 0; i < 10000; ++i) {
    const std::vector<double> logits = RandomLogits(rng);
    const size_t v = logits.size();
    const SamplingMode mode = rng() % 3 == 0 ? SamplingMode::Greedy()
                                             : SamplingMode::TemperatureTopK(RandomTemperature(rng), 1 + rng() % v);
    SamplerOptions identity;
    identity.top_p = 1.0;
    identity.min_p = 0.0;
    identity.typical_p = 1.0;
    identity.repetition_penalty = 1.0;
    identity.frequency_penalty = 0.0;
    identity.presence_penalty = 0.0;
    identity.penalty_last_n = static_cast<int64_t>(rng() % 3) - 1;
    const uint64_t state = rng();
    SplitMix64 reference_rng(state), chain_rng(state);
    Result<TokenSelection> want = SampleNextToken(logits, mode, reference_rng);
    Result<SamplerChain> chain = SamplerChain::Create(mode, identity, v, SIZE_MAX);
    ASSERT_TRUE(chain);
    for (int t = 0; t < 5; ++t) chain->Accept(static_cast<uint32_t>(rng() % v));
    Result<TokenSelection> got = chain->Sample(logits, chain_rng);
    ASSERT_EQ(want.has_value(), got.has_value()) << i;
    if (!want) continue;
    EXPECT_EQ(got->token_id, want->token_id) << i;
    EXPECT_EQ(got->unit_draw.has_value(), want->unit_draw.has_value()) << i;
    if (want->unit_draw) {
      EXPECT_EQ(Bits(*got->unit_draw), Bits(*want->unit_draw)) << i;
    }
    EXPECT_EQ(Bits(got->interval_start), Bits(want->interval_start)) << i;
    EXPECT_EQ(Bits(got->interval_end), Bits(want->interval_end)) << i;
    EXPECT_EQ(chain_rng.state(), reference_rng.state()) << i;
  }
}

TEST(SamplerChainTest, TheDocumentedCandidateRulesHoldOnSmallExamples) {
  // Probabilities at temperature 1 of logits log(0.5), log(0.3), log(0.2).
  const std::vector<double> logits = {std::log(0.5), std::log(0.3), std::log(0.2)};
  auto survivors = [&](SamplerOptions options) {
    Result<SamplerChain> chain = SamplerChain::Create(SamplingMode::Temperature(1.0), options, 3, SIZE_MAX);
    EXPECT_TRUE(chain);
    // A draw just below 1 lands on the last survivor (the largest surviving id).
    std::set<uint32_t> seen;
    for (uint64_t seed = 0; seed < 400; ++seed) {
      SplitMix64 rng(seed);
      seen.insert(chain->Sample(logits, rng)->token_id);
    }
    return seen;
  };
  SamplerOptions top_p;
  top_p.top_p = 0.45;  // 0.5 reaches 0.45: the most likely token alone
  EXPECT_EQ(survivors(top_p), (std::set<uint32_t>{0}));
  top_p.top_p = 0.6;  // needs 0.5 + 0.3
  EXPECT_EQ(survivors(top_p), (std::set<uint32_t>{0, 1}));
  top_p.top_p = 0.0;  // at least one token
  EXPECT_EQ(survivors(top_p), (std::set<uint32_t>{0}));
  // Two equal logits have probability 0.5 each, exactly: 0.5 is reached by the first.
  const std::vector<double> halves = {0.0, 0.0};
  top_p.top_p = 0.5;
  Result<SamplerChain> exact = SamplerChain::Create(SamplingMode::Temperature(1.0), top_p, 2, SIZE_MAX);
  ASSERT_TRUE(exact);
  SplitMix64 rng(3);
  ASSERT_TRUE(exact->Sample(halves, rng));
  EXPECT_EQ(exact->last_candidates().size(), 1u);
  SamplerOptions typical;
  typical.typical_p = 0.5;  // equal distances: rank order, and 0.5 must be exceeded
  exact = SamplerChain::Create(SamplingMode::Temperature(1.0), typical, 2, SIZE_MAX);
  ASSERT_TRUE(exact && exact->Sample(halves, rng));
  EXPECT_EQ(exact->last_candidates().size(), 2u);
  SamplerOptions min_p;
  min_p.min_p = 0.5;  // 0.3 ≥ 0.5 · 0.5, 0.2 < 0.25
  EXPECT_EQ(survivors(min_p), (std::set<uint32_t>{0, 1}));
  min_p.min_p = 1.0;
  EXPECT_EQ(survivors(min_p), (std::set<uint32_t>{0}));
}

TEST(SamplerChainTest, PenaltiesCountTheWindowAndTheSignOfTheLogit) {
  // Token 0 (logit 2) twice and token 1 (logit -1) once in the window of 3;
  // token 2 only before it.
  const std::vector<double> logits = {2.0, -1.0, 0.5, 0.25};
  SamplerOptions options;
  options.repetition_penalty = 2.0;
  options.frequency_penalty = 0.125;
  options.presence_penalty = 0.25;
  options.penalty_last_n = 3;
  Result<SamplerChain> chain = SamplerChain::Create(SamplingMode::Greedy(), options, 4, SIZE_MAX);
  ASSERT_TRUE(chain);
  for (const uint32_t token : {2u, 0u, 1u, 0u}) chain->Accept(token);
  // 2 / 2 − (2 · 0.125 + 0.25) = 0.5; −1 · 2 − (0.125 + 0.25) = −2.375; 0.5 stays.
  std::vector<TokenLogprob> top(4);
  StepLogprobs logprobs{0.0, top};
  SplitMix64 rng(1);
  Result<TokenSelection> pick = chain->Sample(logits, rng, &logprobs);
  ASSERT_TRUE(pick);
  EXPECT_EQ(pick->token_id, 0u);  // 0.5 ties token 2's 0.5: the lower id
  EXPECT_EQ(top[0].token_id, 0u);
  EXPECT_EQ(top[1].token_id, 2u);
  EXPECT_EQ(top[2].token_id, 3u);
  EXPECT_EQ(top[3].token_id, 1u);
  EXPECT_EQ(Bits(top[0].logprob), Bits(top[1].logprob));
  EXPECT_EQ(rng.state(), 1u);  // greedy: no draw
}

TEST(SamplerChainTest, BadSettingsAreTypedErrors) {
  auto error_of = [](SamplingMode mode, SamplerOptions options) {
    Result<SamplerChain> chain = SamplerChain::Create(mode, options, 8, SIZE_MAX);
    return chain ? std::string("ok") : chain.error().Debug();
  };
  SamplerOptions options;
  options.top_p = 1.5;
  EXPECT_EQ(error_of(SamplingMode::Greedy(), options),
            "InvalidSamplerSetting { setting: top_p, value: 1.5 }");
  options = {};
  options.min_p = std::nan("");
  EXPECT_EQ(error_of(SamplingMode::Greedy(), options), "InvalidSamplerSetting { setting: min_p, value: NaN }");
  options = {};
  options.repetition_penalty = 0.0;
  EXPECT_EQ(error_of(SamplingMode::Greedy(), options),
            "InvalidSamplerSetting { setting: repetition_penalty, value: 0.0 }");
  options = {};
  options.penalty_last_n = -2;
  EXPECT_EQ(error_of(SamplingMode::Greedy(), options),
            "InvalidSamplerSetting { setting: penalty_last_n, value: -2 }");
  options = {};
  options.logit_bias = {{8, 1.0}};
  EXPECT_EQ(error_of(SamplingMode::Greedy(), options),
            "LogitBiasOutOfBounds { token_id: 8, vocabulary_size: 8 }");
  EXPECT_EQ(error_of(SamplingMode::Temperature(0.0), {}), "InvalidTemperature { value: 0.0 }");
  EXPECT_EQ(error_of(SamplingMode::TemperatureTopK(1.0, 9), {}),
            "InvalidTopK { top_k: 9, vocabulary_size: 8 }");
}

TEST(SamplerChainTest, ATokenSamplerIsTheChainWithItsOwnRngAndHistory) {
  SamplerOptions options;
  options.repetition_penalty = 1.3;
  options.top_p = 0.9;
  Result<TokenSampler> sampler = TokenSampler::Create(SamplingMode::Temperature(0.8), options, 6, 77);
  ASSERT_TRUE(sampler);
  const std::vector<double> logits = {0.1, 0.9, 0.3, 0.9, -1.0, 0.0};
  std::vector<uint32_t> first;
  for (int i = 0; i < 8; ++i) {
    Result<TokenSelection> pick = sampler->Sample(logits);
    ASSERT_TRUE(pick);
    first.push_back(pick->token_id);
    ASSERT_TRUE(sampler->Accept(pick->token_id));
  }
  EXPECT_EQ(sampler->rng_state(), 77 + 8 * SplitMix64::kGamma);
  sampler->Reset();
  EXPECT_EQ(sampler->rng_state(), 77u);
  for (int i = 0; i < 8; ++i) {
    Result<TokenSelection> pick = sampler->Sample(logits);
    ASSERT_TRUE(pick);
    EXPECT_EQ(pick->token_id, first[i]) << i;
    ASSERT_TRUE(sampler->Accept(pick->token_id));
  }
  EXPECT_EQ(sampler->Accept(6).error().code(), ErrorCode::kTokenIdOutOfBounds);
  const std::vector<double> short_logits = {0.0, 1.0};
  EXPECT_EQ(sampler->Sample(short_logits).error().code(), ErrorCode::kLogitCountMismatch);
  const uint64_t before = sampler->rng_state();
  const std::vector<double> bad = {0.0, 1.0, std::nan(""), 0.0, 0.0, 0.0};
  EXPECT_EQ(sampler->Sample(bad).error().code(), ErrorCode::kNonFiniteLogit);
  EXPECT_EQ(sampler->rng_state(), before);  // errors never draw
}

}  // namespace
}  // namespace kvrt
