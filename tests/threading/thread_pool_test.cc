// The thread pool: every task runs exactly once, workers are named within the
// pool's size, and a deterministic body gives the same result for any thread
// count.
#include "kvrt/threading/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

namespace kvrt::threading {
namespace {

TEST(ThreadPoolTest, EveryTaskRunsExactlyOnce) {
  for (size_t threads : {1, 2, 3, 8}) {
    ThreadPool pool(threads);
    EXPECT_EQ(pool.threads(), threads);
    for (size_t tasks : {0, 1, 2, 7, 1000}) {
      std::vector<std::atomic<int>> runs(tasks);
      std::atomic<bool> worker_in_range{true};
      pool.ParallelFor(tasks, [&](size_t task, size_t worker) {
        runs[task].fetch_add(1);
        if (worker >= threads) worker_in_range = false;
      });
      for (size_t i = 0; i < tasks; ++i) EXPECT_EQ(runs[i].load(), 1) << threads << " threads, task " << i;
      EXPECT_TRUE(worker_in_range);
    }
  }
}

// Restores $KVRT_THREADS when a test that changes it ends.
class ScopedThreadsVariable {
 public:
  explicit ScopedThreadsVariable(const char* value) {
    if (const char* old = std::getenv("KVRT_THREADS"); old != nullptr) saved_ = old;
    if (value == nullptr) {
      unsetenv("KVRT_THREADS");
    } else {
      setenv("KVRT_THREADS", value, 1);
    }
  }
  ~ScopedThreadsVariable() {
    if (saved_) {
      setenv("KVRT_THREADS", saved_->c_str(), 1);
    } else {
      unsetenv("KVRT_THREADS");
    }
  }

 private:
  std::optional<std::string> saved_;
};

TEST(ThreadPoolTest, ZeroMeansTheMachinesConcurrency) {
  ScopedThreadsVariable unset(nullptr);
  ThreadPool pool(0);
  EXPECT_EQ(pool.threads(), HardwareThreads());
  EXPECT_GE(HardwareThreads(), 1u);
}

TEST(ThreadPoolTest, ZeroTakesAPositiveCountFromTheEnvironment) {
  {
    ScopedThreadsVariable three("3");
    EXPECT_EQ(DefaultThreads(), 3u);
    EXPECT_EQ(ThreadPool(0).threads(), 3u);
    EXPECT_EQ(ThreadPool(2).threads(), 2u) << "an explicit count wins over the environment";
  }
  for (const char* ignored : {"", "0", "-2", "two", "3x", "100000"}) {
    ScopedThreadsVariable bad(ignored);
    EXPECT_EQ(DefaultThreads(), HardwareThreads()) << "KVRT_THREADS='" << ignored << "'";
  }
}

// Tiles from the problem size, one owner per output: the same bits for any pool.
TEST(ThreadPoolTest, TiledReductionsAreIdenticalForAnyThreadCount) {
  std::vector<double> input(100000);
  for (size_t i = 0; i < input.size(); ++i) input[i] = std::sin(static_cast<double>(i)) * 1e3;
  auto tiled_sums = [&](ThreadPool& pool) {
    constexpr size_t kTile = 1000;
    std::vector<double> sums(input.size() / kTile);
    pool.ParallelFor(sums.size(), [&](size_t tile, size_t) {
      double sum = 0.0;
      for (size_t i = tile * kTile; i < (tile + 1) * kTile; ++i) sum += input[i];
      sums[tile] = sum;
    });
    return sums;
  };
  ThreadPool one(1);
  const std::vector<double> expected = tiled_sums(one);
  for (size_t threads : {2, 3, 4}) {
    ThreadPool pool(threads);
    EXPECT_EQ(tiled_sums(pool), expected) << threads;
  }
}

}  // namespace
}  // namespace kvrt::threading
