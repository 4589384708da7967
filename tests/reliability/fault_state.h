// Shared pieces of the fault tests: small seeded models, the engines, and the
// "nothing changed" checks on models and caches.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kvrt/engine_options.h"
#include "kv/decoder_kv_cache.h"
#include "model/decoder_model.h"
#include "kvrt/rng.h"
#include "kvrt/threading/thread_pool.h"

namespace kvrt::testing {

// The ch38 fixture geometry (two layers) and a grouped-query model with an
// untied head, so every engine code path with its own buffers is swept.
inline ModelConfig FaultConfig(bool grouped) {
  if (!grouped) return ModelConfig::Create(5, 4, 2, 4, 2, 4, 10000.0, 1e-6);
  ModelConfig config = ModelConfig::Create(11, 8, 4, 6, 2, 6, 10000.0, 1e-6);
  config.kv_heads = 2;
  config.tied_output = false;
  return config;
}

inline DecoderModel FaultModel(bool grouped) {
  SplitMix64 rng(38);
  Result<DecoderModel> model = DecoderModel::FromSeed(FaultConfig(grouped), rng);
  EXPECT_TRUE(model) << model.error().Debug();
  return std::move(*model);
}

struct EngineCase {
  std::string name;
  EngineOptions options;
};

// The fast engine also with a two-thread pool: its workers allocate on their
// own threads (not injected), but the calling thread's side of a parallel
// step is swept.
inline threading::ThreadPool& FaultPool() {
  static threading::ThreadPool pool(2);
  return pool;
}

inline std::vector<EngineCase> AllEngines() {
  return {{"reference", {Backend::kReference, Precision::kF64, 0, nullptr}},
          {"fast-f64", {Backend::kFast, Precision::kF64, 0, nullptr}},
          {"fast-f32", {Backend::kFast, Precision::kF32, 0, nullptr}},
          {"fast-f32-pool", {Backend::kFast, Precision::kF32, 0, &FaultPool()}}};
}

// Revisions and borrows of every parameter: a failed operation must leave both
// as they were (no revision moved, no borrow leaked).
struct ParameterState {
  std::vector<uint64_t> revisions;
  std::vector<int64_t> borrows;
  bool operator==(const ParameterState&) const = default;
};

inline ParameterState StateOf(const DecoderModel& model) {
  ParameterState state;
  for (const ParameterPtr& parameter : model.parameters()) {
    state.revisions.push_back(parameter->revision());
    state.borrows.push_back(parameter->shared_borrows());
  }
  return state;
}

inline std::vector<std::vector<double>> ValuesOf(const DecoderModel& model) {
  std::vector<std::vector<double>> values;
  for (const ParameterPtr& parameter : model.parameters()) {
    values.emplace_back(parameter->element_count());
    parameter->ReadValues(values.back());
  }
  return values;
}

inline DecoderKvCache CacheFor(const DecoderModel& model, Precision precision) {
  CacheOptions options;
  options.precision = precision;
  Result<DecoderKvCache> cache = DecoderKvCache::Create(model, options);
  EXPECT_TRUE(cache) << cache.error().Debug();
  return std::move(*cache);
}

inline DecoderKvCache CloneOf(const DecoderKvCache& cache) {
  Result<DecoderKvCache> copy = cache.Clone();
  EXPECT_TRUE(copy) << copy.error().Debug();
  return std::move(*copy);
}

}  // namespace kvrt::testing
