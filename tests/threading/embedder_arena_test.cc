// An embedder that runs oneTBB itself hands kvrt its arena: its own parallel_for
// work and kvrt's decode then run side by side on the arena's threads, the process
// starts no thread beyond the arena's size, and the logits are the bits of a plain
// run on the calling thread alone. A binary of its own: a process where no other
// test has made TBB start workers.
#include <gtest/gtest.h>

#include <oneapi/tbb/blocked_range.h>
#include <oneapi/tbb/parallel_for.h>
#include <oneapi/tbb/task_arena.h>
#include <oneapi/tbb/task_group.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <fstream>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "kvrt/kvrt.h"
#include "kvrt/model.h"
#include "kvrt/rng.h"
#include "kvrt/session.h"
#include "kvrt/threading/tbb_arena.h"
#include "kvrt/threading/thread_pool.h"
#include "test_support.h"

namespace kvrt {
namespace {

// The process's thread count, as the kernel reports it.
size_t ProcessThreads() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("Threads:", 0) == 0) return std::stoul(line.substr(8));
  }
  ADD_FAILURE() << "no Threads: line in /proc/self/status";
  return 0;
}

Model WideModel() {
  // Several panels and task tiles per loop: D 96 (3 heads of 32), F 160, V 300, 2 layers.
  SplitMix64 rng(2024);
  return *Model::FromSeed(ModelConfig::Create(300, 96, 3, 160, 2, 80, 10000.0, 1e-5), rng);
}

// The logits of a prefill of 5 tokens and then 20 decode steps, in f32.
// Without a pool: on the calling thread alone.
std::vector<std::vector<double>> DecodeLogits(const Model& model, threading::ThreadPool* pool) {
  KvCache cache = *KvCache::Create(model, CacheOptions{.precision = Precision::kF32});
  EngineOptions engine;
  engine.threads = 1;
  engine.pool = pool;
  Result<Session> session = Session::Bind(cache, model, engine);
  EXPECT_TRUE(session);
  std::vector<std::vector<double>> logits;
  const std::vector<uint32_t> prompt = {1, 17, 250, 42, 5};
  Result<StepOutput> step = session->Prefill(prompt);
  EXPECT_TRUE(step);
  for (uint32_t token = 7; step && logits.size() < 21; token = (token * 31 + 11) % 300) {
    logits.emplace_back(step->logits.begin(), step->logits.end());
    step = session->Decode(token);
    EXPECT_TRUE(step);
  }
  return logits;
}

// The host's own work: a parallel_for that fills a vector, with the most threads
// the process had while it ran.
struct HostWork {
  std::vector<double> values = std::vector<double>(1 << 16);
  std::atomic<size_t> most_threads{0};

  void Run() {
    for (int round = 0; round < 50; ++round) {
      tbb::parallel_for(tbb::blocked_range<size_t>(0, values.size(), 1024), [&](const auto& range) {
        for (size_t i = range.begin(); i != range.end(); ++i) values[i] += std::sqrt(static_cast<double>(i));
        size_t seen = most_threads.load();
        const size_t now = ProcessThreads();
        while (now > seen && !most_threads.compare_exchange_weak(seen, now)) {
        }
      });
    }
  }
};

TEST(EmbedderArenaTest, HostWorkAndKvrtDecodeShareTheHostsArena) {
  const Model model = WideModel();
  const std::vector<std::vector<double>> plain = DecodeLogits(model, nullptr);
  ASSERT_EQ(ProcessThreads(), 1u) << "the test needs a process without threads of its own";

  constexpr int kArenaThreads = 2;  // the calling thread and one TBB worker
  tbb::task_arena arena(kArenaThreads);
  std::unique_ptr<threading::ThreadPool> pool = threading::PoolOnArena(arena);
  EXPECT_EQ(pool->threads(), static_cast<size_t>(kArenaThreads));

  HostWork host;
  std::vector<std::vector<double>> in_arena;
  size_t threads_after_decode = 0;
  arena.execute([&] {
    tbb::task_group group;
    group.run([&] { host.Run(); });
    group.run([&] {
      in_arena = DecodeLogits(model, pool.get());
      threads_after_decode = ProcessThreads();
    });
    group.wait();
  });

  EXPECT_EQ(in_arena, plain) << "the logits must be a plain run's bits";
  EXPECT_GT(pool->parallel_regions(), 0u) << "kvrt's loops must have run in the arena";
  EXPECT_LE(host.most_threads.load(), static_cast<size_t>(kArenaThreads));
  EXPECT_LE(threads_after_decode, static_cast<size_t>(kArenaThreads));
  EXPECT_LE(ProcessThreads(), static_cast<size_t>(kArenaThreads));
  for (size_t i = 0; i < host.values.size(); i += 4099) {
    double want = 0;
    for (int round = 0; round < 50; ++round) want += std::sqrt(static_cast<double>(i));
    EXPECT_EQ(host.values[i], want) << i;
  }
}

// The C entry point wraps the arena of the thread that calls it: inside the host's
// arena of 2 it is a pool of 2 that starts no thread, and its logits are the bits of
// a run on the calling thread alone.
TEST(EmbedderArenaTest, TheCEntryPointWrapsTheCallersArena) {
  kvrt_model* model = nullptr;
  ASSERT_EQ(kvrt_model_load(testing::FixturePath("llama2c/gqa_untied.bin").c_str(), &model), nullptr);
  kvrt_model_info info;
  kvrt_model_get_info(model, &info);
  const std::vector<uint32_t> tokens = {1, 5, 9, 2, 7, 3};
  const auto prefill_logits = [&](const kvrt_engine_options& engine) {
    kvrt_cache* cache = nullptr;
    EXPECT_EQ(kvrt_cache_create(model, 0, KVRT_PRECISION_F32, &cache), nullptr);
    kvrt_session* session = nullptr;
    EXPECT_EQ(kvrt_session_bind(cache, model, &engine, &session), nullptr);
    const double* logits = nullptr;
    EXPECT_EQ(kvrt_session_prefill(session, tokens.data(), tokens.size(), &logits), nullptr);
    std::vector<double> out(logits, logits + info.vocabulary_size);
    kvrt_session_free(session);
    kvrt_cache_free(cache);
    return out;
  };
  kvrt_engine_options serial = kvrt_engine_options_default();
  serial.threads = 1;
  const std::vector<double> plain = prefill_logits(serial);
  // ctest runs each test in a process of its own; run together, the test above
  // leaves its arena's one worker.
  ASSERT_LE(ProcessThreads(), 2u) << "the test needs a process with no other threads";

  tbb::task_arena arena(2);
  std::vector<double> pooled;
  size_t pool_threads = 0;
  arena.execute([&] {
    kvrt_pool* pool = nullptr;
    ASSERT_EQ(kvrt_pool_attach_current_arena(&pool), nullptr);
    pool_threads = kvrt_pool_threads(pool);
    kvrt_engine_options engine = kvrt_engine_options_default();
    engine.pool = pool;
    pooled = prefill_logits(engine);
    kvrt_pool_free(pool);
  });
  EXPECT_EQ(pool_threads, 2u);
  EXPECT_EQ(pooled, plain);
  EXPECT_LE(ProcessThreads(), 2u);
  kvrt_model_free(model);

  kvrt_error* error = kvrt_pool_attach_current_arena(nullptr);
  ASSERT_NE(error, nullptr);
  EXPECT_EQ(kvrt_error_code(error), KVRT_ERR_INVALID_ARGUMENT);
  kvrt_error_free(error);
}

}  // namespace
}  // namespace kvrt
