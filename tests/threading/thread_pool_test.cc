// The thread pool: every task runs exactly once, workers are named within the
// pool's size, and a deterministic body gives the same result for any thread
// count.
#include "kvrt/threading/thread_pool.h"

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <set>
#include <string>
#include <thread>
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

// Workers sleep after a short spin; a loop after a long pause must wake them and
// still run every task once, on more than the calling thread when it can.
TEST(ThreadPoolTest, LoopsAfterAnIdlePauseStillRunEveryTask) {
  ThreadPool pool(2);
  for (int round = 0; round < 3; ++round) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    std::vector<std::atomic<int>> runs(64);
    pool.ParallelFor(runs.size(), [&](size_t task, size_t) { runs[task].fetch_add(1); });
    for (size_t i = 0; i < runs.size(); ++i) EXPECT_EQ(runs[i].load(), 1) << "round " << round << ", task " << i;
  }
}

// A task may loop on the pool that runs it: the inner loop runs inline, under the
// task's own worker index, so per-worker scratch stays private to that thread.
TEST(ThreadPoolTest, ANestedLoopRunsInlineUnderTheOuterWorker) {
  ThreadPool pool(3);
  constexpr size_t kOuter = 12, kInner = 5;
  std::vector<std::atomic<int>> runs(kOuter * kInner);
  std::atomic<bool> same_worker{true};
  pool.ParallelFor(kOuter, [&](size_t outer, size_t worker) {
    pool.ParallelFor(kInner, [&](size_t inner, size_t inner_worker) {
      if (inner_worker != worker) same_worker = false;
      runs[outer * kInner + inner].fetch_add(1);
    });
  });
  for (size_t i = 0; i < runs.size(); ++i) EXPECT_EQ(runs[i].load(), 1) << i;
  EXPECT_TRUE(same_worker);
}

// Several threads sharing one pool run their loops at once; each sees its own loop complete
// (every task once, results written before ParallelFor returns).
TEST(ThreadPoolTest, CallersOnSeveralThreadsShareOnePool) {
  ThreadPool pool(2);
  constexpr size_t kCallers = 4, kLoops = 200, kTasks = 17;
  std::vector<std::thread> callers;
  std::vector<int> failures(kCallers, 0);
  for (size_t c = 0; c < kCallers; ++c) {
    callers.emplace_back([&, c] {
      std::vector<size_t> out(kTasks);
      for (size_t loop = 0; loop < kLoops; ++loop) {
        pool.ParallelFor(kTasks, [&](size_t task, size_t) { out[task] = task * loop + c; });
        for (size_t task = 0; task < kTasks; ++task) failures[c] += out[task] != task * loop + c;
      }
    });
  }
  for (std::thread& caller : callers) caller.join();
  for (size_t c = 0; c < kCallers; ++c) EXPECT_EQ(failures[c], 0) << "caller " << c;
}

// Callers index per-worker scratch with `worker`: no two tasks that run at the same
// time may get the same one, even when several callers loop on one pool at once.
TEST(ThreadPoolTest, TasksRunningAtOnceNeverShareAWorkerIndex) {
  ThreadPool pool(3);
  std::vector<std::atomic<int>> in_use(pool.threads());
  std::atomic<int> shared{0}, out_of_range{0};
  std::vector<std::thread> callers;
  for (int c = 0; c < 3; ++c) {
    callers.emplace_back([&] {
      for (int loop = 0; loop < 100; ++loop) {
        pool.ParallelFor(24, [&](size_t, size_t worker) {
          if (worker >= in_use.size()) {
            out_of_range.fetch_add(1);
            return;
          }
          if (in_use[worker].exchange(1) != 0) shared.fetch_add(1);
          std::this_thread::sleep_for(std::chrono::microseconds(20));
          in_use[worker].store(0);
        });
      }
    });
  }
  for (std::thread& caller : callers) caller.join();
  EXPECT_EQ(out_of_range.load(), 0);
  EXPECT_EQ(shared.load(), 0);
}

// parallel_regions() counts the loops handed to workers, not inline ones.
TEST(ThreadPoolTest, ParallelRegionsCountsOnlyLoopsThatFork) {
  ThreadPool pool(2), serial(1);
  auto nothing = [](size_t, size_t) {};
  pool.ParallelFor(0, nothing);
  pool.ParallelFor(1, nothing);
  serial.ParallelFor(8, nothing);
  EXPECT_EQ(pool.parallel_regions(), 0u);
  EXPECT_EQ(serial.parallel_regions(), 0u);
  pool.ParallelFor(2, nothing);
  pool.ParallelFor(8, [&](size_t, size_t) { pool.ParallelFor(4, nothing); });
  EXPECT_EQ(pool.parallel_regions(), 2u);
}

// With enough tasks that each takes a while, a 2-thread pool runs tasks on both of
// its threads: the pool really is parallel (workers named 0 and 1 both appear).
TEST(ThreadPoolTest, BothThreadsOfATwoThreadPoolTakeTasks) {
  ThreadPool pool(2);
  bool both = false;
  for (int attempt = 0; attempt < 20 && !both; ++attempt) {
    std::vector<size_t> workers(64);
    pool.ParallelFor(workers.size(), [&](size_t task, size_t worker) {
      std::this_thread::sleep_for(std::chrono::microseconds(200));
      workers[task] = worker;
    });
    both = std::set<size_t>(workers.begin(), workers.end()).size() == 2;
  }
  EXPECT_TRUE(both);
}

// A loop is cut into blocks of at most kTasks / threads / 2 tasks, and a block not
// yet started goes to whichever thread is free. One that stalls in a task must hold
// back no more than its block: here worker 1 waits inside its first task (bounded:
// 2 s) until the others have run every task but those of its block, which they can
// only do by taking over the blocks it would have run next. If worker 1 never
// takes a task, the others run everything and the test still holds.
TEST(ThreadPoolTest, OthersFinishTheRangeOfAStalledThread) {
  for (size_t threads : {2, 3}) {
    ThreadPool pool(threads);
    for (int attempt = 0; attempt < 5; ++attempt) {
      constexpr size_t kTasks = 60;
      const size_t others_reach = kTasks - kTasks / threads / 2;
      std::atomic<size_t> done{0};
      std::atomic<bool> stalled{false}, others_finished{true};
      std::vector<std::atomic<int>> runs(kTasks);
      pool.ParallelFor(kTasks, [&](size_t task, size_t worker) {
        if (worker == 1 && !stalled.exchange(true)) {
          const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
          while (done.load() < others_reach && std::chrono::steady_clock::now() < deadline) {
            std::this_thread::yield();
          }
          if (done.load() < others_reach) others_finished = false;
        }
        runs[task].fetch_add(1);
        done.fetch_add(1);
      });
      EXPECT_TRUE(others_finished) << threads << " threads";
      for (size_t i = 0; i < kTasks; ++i) EXPECT_EQ(runs[i].load(), 1) << "task " << i;
    }
  }
}

// oneTBB throws std::runtime_error from the code that first gives an arena work when
// the system refuses it a thread. Under a limit of one process per user (in a forked
// child, as an unprivileged user: root ignores the limit), a pool still runs every
// loop, on fewer threads, and no ParallelFor throws.
TEST(ThreadPoolTest, APoolThatCannotStartThreadsStillRunsEveryLoop) {
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "the sanitizer runtimes start threads of their own";
#else
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  if (pid == 0) {
    if (::geteuid() == 0 && (::setgid(65534) != 0 || ::setuid(65534) != 0)) ::_exit(4);
    const struct rlimit one_process {1, 1};
    if (::setrlimit(RLIMIT_NPROC, &one_process) != 0) ::_exit(5);
    try {
      ThreadPool pool(3);
      for (int loop = 0; loop < 3; ++loop) {
        std::vector<size_t> out(100, 0);
        pool.ParallelFor(out.size(), [&](size_t task, size_t) { out[task] = task + 1; });
        for (size_t i = 0; i < out.size(); ++i) {
          if (out[i] != i + 1) ::_exit(2);
        }
      }
    } catch (...) {
      ::_exit(3);
    }
    ::_exit(0);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "2: a task did not run, 3: ParallelFor threw, 4-5: no limit set";
#endif
}

// Loops with fewer tasks than threads leave some threads without a block; loops
// after them, of every size, still run each task once.
TEST(ThreadPoolTest, LoopsOfChangingSizesEachRunEveryTaskOnce) {
  ThreadPool pool(4);
  for (int round = 0; round < 200; ++round) {
    const size_t tasks = static_cast<size_t>(round * 7 % 13);
    std::vector<std::atomic<int>> runs(tasks);
    pool.ParallelFor(tasks, [&](size_t task, size_t) { runs[task].fetch_add(1); });
    for (size_t i = 0; i < tasks; ++i) ASSERT_EQ(runs[i].load(), 1) << "round " << round;
  }
}

}  // namespace
}  // namespace kvrt::threading
