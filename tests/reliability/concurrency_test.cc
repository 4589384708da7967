// Sessions on many threads over one shared model (spec/kv-cache.md §3.4, §5):
//   * each thread with its own cache and session reproduces the serial logits
//     bit for bit, on the reference and the fast engines (with and without a
//     thread pool shared by all sessions);
//   * parameter updates from another thread are refused with
//     ParameterValueBorrowed every time while sessions live, and succeed once
//     they ended, after which the old caches never bind again;
//   * binds and updates racing each other keep revisions and borrows exact;
//   * a cache has one session at a time (CacheAlreadyBound), across threads;
//   * a session may end on another thread than the one that bound it.
// Meant to run under TSan too (tools/sanitize.sh thread).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <latch>
#include <optional>
#include <thread>
#include <vector>

#include "kv/decoder_kv_cache.h"
#include "model/decoder_model.h"
#include "session/decoder_kv_session.h"
#include "kvrt/threading/thread_pool.h"

namespace kvrt {
namespace {

constexpr size_t kThreads = 4;

DecoderModel SharedModel() {
  ModelConfig config = ModelConfig::Create(48, 16, 4, 24, 2, 16, 10000.0, 1e-6);
  config.kv_heads = 2;
  SplitMix64 rng(7);
  return *DecoderModel::FromSeed(config, rng);
}

struct Request {
  std::vector<uint32_t> prompt;
  std::vector<uint32_t> continuation;
};

std::vector<Request> Requests(size_t vocabulary) {
  std::vector<Request> requests;
  SplitMix64 rng(11);
  for (size_t i = 0; i < 2 * kThreads; ++i) {
    Request request;
    request.prompt.resize(1 + i % 5);
    request.continuation.resize(6);
    for (uint32_t& t : request.prompt) t = static_cast<uint32_t>(rng.NextU64() % vocabulary);
    for (uint32_t& t : request.continuation) t = static_cast<uint32_t>(rng.NextU64() % vocabulary);
    requests.push_back(request);
  }
  return requests;
}

using Logits = std::vector<std::vector<double>>;

// Prefill, then every continuation token, on a cache of `precision`.
Logits RunRequest(const DecoderModel& model, const Request& request, EngineOptions engine) {
  CacheOptions options;
  options.precision = engine.precision;
  DecoderKvCache cache = *DecoderKvCache::Create(model, options);
  Result<DecoderKvSession> session = Bind(cache, model, engine);
  if (!session) return {};
  Logits logits;
  Result<StepOutput> step = session->Prefill(request.prompt);
  for (size_t i = 0; step; ++i) {
    logits.emplace_back(step->logits.begin(), step->logits.end());
    if (i == request.continuation.size()) break;
    step = session->Decode(request.continuation[i]);
  }
  return logits;
}

struct EngineParam {
  const char* name;
  Backend backend;
  Precision precision;
  bool pool;
};

class ConcurrentSessionsTest : public ::testing::TestWithParam<EngineParam> {};

TEST_P(ConcurrentSessionsTest, EveryThreadReproducesTheSerialLogits) {
  const DecoderModel model = SharedModel();
  const std::vector<Request> requests = Requests(model.config().vocabulary_size);
  threading::ThreadPool pool(2);
  EngineOptions engine{GetParam().backend, GetParam().precision, 0, GetParam().pool ? &pool : nullptr};

  std::vector<Logits> serial;
  for (const Request& request : requests) serial.push_back(RunRequest(model, request, engine));
  for (const Logits& logits : serial) ASSERT_EQ(logits.size(), 7u);

  constexpr size_t kRounds = 3;
  std::vector<std::vector<Logits>> parallel(requests.size());
  std::latch start(kThreads);
  std::vector<std::thread> threads;
  for (size_t t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      start.arrive_and_wait();  // every thread runs its sessions at the same time
      for (size_t round = 0; round < kRounds; ++round) {
        for (size_t i = t; i < requests.size(); i += kThreads) {
          parallel[i].push_back(RunRequest(model, requests[i], engine));
        }
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (size_t i = 0; i < requests.size(); ++i) {
    ASSERT_EQ(parallel[i].size(), kRounds);
    for (const Logits& logits : parallel[i]) EXPECT_EQ(logits, serial[i]) << "request " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Engines, ConcurrentSessionsTest,
    ::testing::Values(EngineParam{"Reference", Backend::kReference, Precision::kF64, false},
                      EngineParam{"FastF64", Backend::kFast, Precision::kF64, false},
                      EngineParam{"FastF32", Backend::kFast, Precision::kF32, false},
                      EngineParam{"FastF64SharedPool", Backend::kFast, Precision::kF64, true},
                      EngineParam{"FastF32SharedPool", Backend::kFast, Precision::kF32, true}),
    [](const ::testing::TestParamInfo<EngineParam>& param_info) { return param_info.param.name; });

std::vector<ParameterUpdate> HalveEmbedding(const DecoderModel& model) {
  std::vector<double> values(model.embedding().element_count());
  model.embedding().ReadValues(values);
  for (double& v : values) v *= 0.5;
  return {{0, values}};
}

TEST(ConcurrentUpdateTest, RefusedWhileSessionsLiveAndAcceptedAfter) {
  DecoderModel model = SharedModel();
  const EngineOptions engines[] = {{Backend::kReference, Precision::kF64, 0, nullptr},
                                   {Backend::kFast, Precision::kF64, 0, nullptr},
                                   {Backend::kFast, Precision::kF32, 0, nullptr}};
  std::vector<DecoderKvCache> caches;
  for (size_t t = 0; t < kThreads; ++t) {
    CacheOptions options;
    options.precision = engines[t % 3].precision;
    caches.push_back(*DecoderKvCache::Create(model, options));
  }
  std::latch bound(kThreads);
  std::atomic<bool> stop{false};
  std::atomic<size_t> steps{0};
  std::vector<std::thread> sessions;
  for (size_t t = 0; t < kThreads; ++t) {
    sessions.emplace_back([&, t] {
      Result<DecoderKvSession> session = Bind(caches[t], model, engines[t % 3]);
      bound.count_down();
      if (!session) return;  // counted as a failure below (no steps)
      const uint32_t prompt[] = {1, 2};
      while (!stop.load()) {
        if (session->Prefill(prompt) && session->Decode(3)) steps.fetch_add(1);
        session->Reset();
      }
    });
  }
  bound.wait();
  for (size_t t = 0; t < kThreads; ++t) EXPECT_TRUE(caches[t].is_bound());

  std::thread optimizer([&] {
    for (int attempt = 0; attempt < 200; ++attempt) {
      Result<void> updated = model.UpdateParameters(HalveEmbedding(model));
      ASSERT_FALSE(updated) << "an update went through while sessions read the parameters";
      EXPECT_EQ(updated.error().Debug(),
                "ParameterValueBorrowed { name: \"token_embedding.weight\" }");
    }
  });
  optimizer.join();
  EXPECT_EQ(model.embedding().revision(), 0u);
  stop.store(true);
  for (std::thread& thread : sessions) thread.join();
  EXPECT_GT(steps.load(), 0u);
  for (const ParameterPtr& parameter : model.parameters()) EXPECT_EQ(parameter->shared_borrows(), 0);

  std::thread late_optimizer([&] { EXPECT_TRUE(model.UpdateParameters(HalveEmbedding(model))); });
  late_optimizer.join();
  EXPECT_EQ(model.embedding().revision(), 1u);
  for (size_t t = 0; t < kThreads; ++t) {
    Result<DecoderKvSession> rebound = Bind(caches[t], model, engines[t % 3]);
    ASSERT_FALSE(rebound);
    EXPECT_EQ(rebound.error().Debug(),
              "ModelParameterRevisionMismatch { index: 0, cache: 0, model: 1 }");
  }
}

// Sessions come and go while another thread keeps trying to update: each
// update either commits (and advances the revision by exactly one) or is
// refused; each bind either succeeds or finds its cache stale.
TEST(ConcurrentUpdateTest, BindsAndUpdatesRacingKeepRevisionsExact) {
  DecoderModel model = SharedModel();
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> committed{0}, refused{0}, stale{0}, decoded{0};
  std::vector<std::thread> workers;
  for (size_t t = 0; t < kThreads; ++t) {
    workers.emplace_back([&, t] {
      const EngineOptions engine{t % 2 ? Backend::kFast : Backend::kReference,
                                 t == 3 ? Precision::kF32 : Precision::kF64, 0, nullptr};
      CacheOptions options;
      options.precision = engine.precision;
      while (!stop.load()) {
        DecoderKvCache cache = *DecoderKvCache::Create(model, options);
        Result<DecoderKvSession> session = Bind(cache, model, engine);
        if (!session) {
          EXPECT_EQ(session.error().code(), ErrorCode::kModelParameterRevisionMismatch);
          stale.fetch_add(1);
          continue;
        }
        const uint32_t prompt[] = {4, 5, 6};
        Result<StepOutput> step = session->Prefill(prompt);
        for (uint32_t token = 7; step && token < 12; ++token) step = session->Decode(token);
        ASSERT_TRUE(step) << step.error().Debug();
        for (double logit : step->logits) ASSERT_TRUE(std::isfinite(logit));
        decoded.fetch_add(1);
      }
    });
  }
  std::thread optimizer([&] {
    // Until both outcomes were seen (sessions are short, so refusals need luck),
    // with a time limit for a loaded machine.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while ((decoded.load() < 400 || committed.load() == 0 || refused.load() == 0) &&
           std::chrono::steady_clock::now() < deadline) {
      Result<void> updated = model.UpdateParameters(HalveEmbedding(model));
      if (updated) {
        committed.fetch_add(1);
      } else {
        EXPECT_EQ(updated.error().code(), ErrorCode::kParameterValueBorrowed);
        refused.fetch_add(1);
      }
    }
    stop.store(true);
  });
  optimizer.join();
  for (std::thread& worker : workers) worker.join();
  EXPECT_EQ(model.embedding().revision(), committed.load());
  for (const ParameterPtr& parameter : model.parameters()) EXPECT_EQ(parameter->shared_borrows(), 0);
  EXPECT_GT(committed.load() + refused.load(), 0u);
  ::testing::Test::RecordProperty("committed", static_cast<int>(committed.load()));
  ::testing::Test::RecordProperty("stale_binds", static_cast<int>(stale.load()));
}

TEST(CacheOwnershipTest, ASecondSessionIsRefusedOnEveryThread) {
  const DecoderModel model = SharedModel();
  DecoderKvCache cache = *DecoderKvCache::Create(model, CacheOptions{.precision = Precision::kF64});
  std::optional<DecoderKvSession> owner;
  std::latch owned(1);
  std::atomic<bool> stop{false};
  std::thread owner_thread([&] {
    owner.emplace(*Bind(cache, model, ReferenceEngine()));
    owned.count_down();
    const uint32_t prompt[] = {1};
    while (!stop.load()) {
      EXPECT_TRUE(owner->Prefill(prompt));
      owner->Reset();
    }
  });
  owned.wait();
  std::vector<std::thread> intruders;
  std::atomic<int> refusals{0};
  for (size_t t = 0; t < kThreads; ++t) {
    intruders.emplace_back([&] {
      for (int attempt = 0; attempt < 100; ++attempt) {
        Result<DecoderKvSession> second = Bind(cache, model, ReferenceEngine());
        ASSERT_FALSE(second);
        EXPECT_EQ(second.error().code(), ErrorCode::kCacheAlreadyBound);
        refusals.fetch_add(1);
      }
    });
  }
  for (std::thread& intruder : intruders) intruder.join();
  stop.store(true);
  owner_thread.join();
  EXPECT_EQ(refusals.load(), static_cast<int>(100 * kThreads));
  owner.reset();
  EXPECT_FALSE(cache.is_bound());
  EXPECT_TRUE(Bind(cache, model, ReferenceEngine()));
}

TEST(CacheOwnershipTest, ASessionMayEndOnAnotherThread) {
  DecoderModel model = SharedModel();
  DecoderKvCache cache = *DecoderKvCache::Create(model, CacheOptions{.precision = Precision::kF64});
  DecoderKvSession session = *Bind(cache, model, ReferenceEngine());
  const uint32_t prompt[] = {3};
  ASSERT_TRUE(session.Prefill(prompt));
  std::thread([moved = std::move(session)]() mutable {
    EXPECT_TRUE(moved.Decode(4));
  }).join();  // the session is destroyed on that thread
  EXPECT_FALSE(cache.is_bound());
  EXPECT_EQ(cache.len(), 2u);
  for (const ParameterPtr& parameter : model.parameters()) EXPECT_EQ(parameter->shared_borrows(), 0);
  EXPECT_TRUE(model.UpdateParameters(HalveEmbedding(model)));
}

}  // namespace
}  // namespace kvrt
