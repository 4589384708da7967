// Helpers the engine tests share: the model of a golden case, seeded token
// sequences, the logits of a whole session and the largest difference of two
// logit vectors.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <vector>

#include "allocation_counter.h"
#include "golden_case.h"
#include "kv/decoder_kv_cache.h"
#include "model/decoder_model.h"
#include "session/decoder_kv_session.h"
#include "kvrt/threading/thread_pool.h"

namespace kvrt::testing {

// The seeded model a golden case describes.
inline DecoderModel GoldenModel(const Json& golden) {
  SplitMix64 rng(golden.at("init").at("seed").get<uint64_t>());
  return *DecoderModel::FromSeed(GoldenConfig(golden.at("config")), rng);
}

// `n` tokens below `vocabulary`, the same for the same seed.
inline std::vector<uint32_t> SeededTokens(size_t n, uint64_t seed, uint32_t vocabulary) {
  std::vector<uint32_t> tokens;
  SplitMix64 rng(seed);
  for (size_t i = 0; i < n; ++i)
    tokens.push_back(static_cast<uint32_t>(rng.NextU64() % vocabulary));
  return tokens;
}

// max |a[i] − b[i]|; the two must have one length.
inline double MaxAbsDiff(std::span<const double> a, std::span<const double> b) {
  EXPECT_EQ(a.size(), b.size());
  double worst = 0.0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i)
    worst = std::max(worst, std::fabs(a[i] - b[i]));
  return worst;
}

// The largest MaxAbsDiff of two sessions' logits, step by step; the two must have
// one number of steps.
inline double MaxAbsDiff(const std::vector<std::vector<double>>& a, const std::vector<std::vector<double>>& b) {
  EXPECT_EQ(a.size(), b.size());
  double worst = 0.0;
  for (size_t s = 0; s < a.size() && s < b.size(); ++s) worst = std::max(worst, MaxAbsDiff(a[s], b[s]));
  return worst;
}

// The logits after the prefill of `prompt` and after each decode of
// `continuation`, one vector per step, from a fresh cache of `cache_options`; the
// prompt prefilled at once, or for `chunk` > 0 in chunks of that many tokens (Step
// runs; the last asks for the logits).
inline std::vector<std::vector<double>> SessionLogits(const DecoderModel& model,
                                                      const std::vector<uint32_t>& prompt,
                                                      const std::vector<uint32_t>& continuation,
                                                      const EngineOptions& engine,
                                                      const CacheOptions& cache_options, size_t chunk = 0) {
  std::vector<std::vector<double>> out;
  Result<DecoderKvCache> cache = DecoderKvCache::Create(model, cache_options);
  EXPECT_TRUE(cache) << cache.error().message();
  if (!cache) return out;
  Result<DecoderKvSession> session = Bind(*cache, model, engine);
  EXPECT_TRUE(session) << session.error().message();
  if (!session) return out;
  if (chunk == 0) {
    Result<StepOutput> step = session->Prefill(prompt);
    EXPECT_TRUE(step) << step.error().message();
    if (!step) return out;
    out.emplace_back(step->logits.begin(), step->logits.end());
  }
  for (size_t begin = 0; chunk != 0 && begin < prompt.size(); begin += chunk) {
    const size_t end = std::min(prompt.size(), begin + chunk);
    const SlotRun run{0, std::span(prompt).subspan(begin, end - begin), RunPhase::kPrefill, end == prompt.size()};
    Result<SlotStepOutput> step = session->Step(std::span(&run, 1));
    EXPECT_TRUE(step) << step.error().message();
    if (!step) return out;
    if (end == prompt.size()) out.emplace_back(step->logits.begin(), step->logits.end());
  }
  for (uint32_t token : continuation) {
    Result<StepOutput> step = session->Decode(token);
    EXPECT_TRUE(step) << step.error().message();
    if (!step) return out;
    out.emplace_back(step->logits.begin(), step->logits.end());
  }
  return out;
}

// The same with a cache of the engine's precision.
inline std::vector<std::vector<double>> ChunkedSessionLogits(const DecoderModel& model,
                                                             const std::vector<uint32_t>& prompt,
                                                             const std::vector<uint32_t>& continuation,
                                                             const EngineOptions& engine, size_t chunk = 0) {
  CacheOptions cache_options;
  cache_options.precision = engine.precision;
  return SessionLogits(model, prompt, continuation, engine, cache_options, chunk);
}

// How far an opt-in fast engine (less exact activations) and the same engine without
// the opt-in (`exact`) land from the f64 oracle on the same weights format, over a whole
// session, and the oracle's logit spread (the largest max − min of a step).
struct OracleDistances {
  double opt_in = 0;
  double exact = 0;
  double spread = 0;
};
inline OracleDistances DistancesFromTheOracle(const DecoderModel& model, const std::vector<uint32_t>& prompt,
                                              const std::vector<uint32_t>& continuation,
                                              const EngineOptions& opt_in, const EngineOptions& exact) {
  EngineOptions oracle{Backend::kReference, Precision::kF64, 0, nullptr};
  oracle.weights = exact.weights;
  const auto reference = ChunkedSessionLogits(model, prompt, continuation, oracle);
  OracleDistances distances;
  distances.opt_in = MaxAbsDiff(ChunkedSessionLogits(model, prompt, continuation, opt_in), reference);
  distances.exact = MaxAbsDiff(ChunkedSessionLogits(model, prompt, continuation, exact), reference);
  for (const std::vector<double>& row : reference) {
    distances.spread =
        std::max(distances.spread, *std::max_element(row.begin(), row.end()) - *std::min_element(row.begin(), row.end()));
  }
  return distances;
}

// The fast f32 engine on `format` weights, on `pool` (none: the calling thread).
inline EngineOptions FastF32Engine(WeightFormat format, threading::ThreadPool* pool = nullptr) {
  EngineOptions options;
  options.backend = Backend::kFast;
  options.precision = Precision::kF32;
  options.weights = format;
  options.pool = pool;
  return options;
}

// Binding `model` with each of `engines` fails with UnsupportedBackend.
inline void ExpectUnsupportedBackend(const DecoderModel& model, std::initializer_list<EngineOptions> engines) {
  DecoderKvCache cache = *DecoderKvCache::Create(model);
  for (const EngineOptions& options : engines) {
    Result<DecoderKvSession> session = Bind(cache, model, options);
    ASSERT_FALSE(session);
    EXPECT_EQ(session.error().code(), ErrorCode::kUnsupportedBackend) << session.error().message();
  }
}

// Heap allocations of a prefill and a decode after a warm-up prefill, on a fresh
// cache of `cache_options`: a step must allocate nothing a second time round.
inline uint64_t StepAllocations(const DecoderModel& model, const std::vector<uint32_t>& prompt,
                                const EngineOptions& engine, const CacheOptions& cache_options) {
  DecoderKvCache cache = *DecoderKvCache::Create(model, cache_options);
  DecoderKvSession session = *Bind(cache, model, engine);
  EXPECT_TRUE(session.Prefill(prompt));
  session.Reset();
  const uint64_t before = HeapAllocationsInProcess();
  EXPECT_TRUE(session.Prefill(prompt));
  EXPECT_TRUE(session.Decode(3));
  return HeapAllocationsInProcess() - before;
}

}  // namespace kvrt::testing
