// Under ThreadSanitizer, the pool's synchronisation (thread_pool.cc) must
// order the caller with its tasks without ordering the tasks among themselves:
// a real race between two tasks is still reported. Skipped in other builds.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "kvrt/threading/thread_pool.h"

#if defined(__SANITIZE_THREAD__)
#define KVRT_TEST_UNDER_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define KVRT_TEST_UNDER_TSAN 1
#endif
#endif

namespace {

struct Outcome {
  double element = 0;             // element 1 after every loop
  bool both_threads_ran = false;  // worker 1 ran a task in some loop
};

// Every task writes its own element, and with `racy` also element 0. A task takes
// a few µs: trivial tasks would all be done by the caller before the worker
// joins in, and two tasks on one thread are never a race.
Outcome RunTasks(bool racy) {
  kvrt::threading::ThreadPool pool(2);
  std::vector<double> out(64, 0.0);
  std::vector<char> on_worker(out.size(), 0);
  Outcome outcome;
  for (int repeat = 0; repeat < 50; ++repeat) {
    pool.ParallelFor(out.size(), [&](size_t i, size_t worker) {
      std::this_thread::sleep_for(std::chrono::microseconds(5));
      out[i] += 1.0;
      on_worker[i] = worker == 1;
      if (racy && i != 0) out[0] += 1.0;
    });
    for (char w : on_worker) outcome.both_threads_ran |= w != 0;
  }
  outcome.element = out[1];
  return outcome;
}

TEST(ThreadSanitizerProbeTest, TasksWritingOneElementAreReportedAsARace) {
#if defined(KVRT_TEST_UNDER_TSAN)
  // The child re-executes this binary and reads TSAN_OPTIONS at start-up: keep
  // the suite's options (the suppressions file) and stop with exit code 66 at
  // the first report, which must name this file's racy write.
  const char* inherited = std::getenv("TSAN_OPTIONS");
  const std::string options = std::string(inherited ? inherited : "") + ":halt_on_error=1:exitcode=66";
  setenv("TSAN_OPTIONS", options.c_str(), 1);
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        RunTasks(/*racy=*/true);
        std::exit(0);
      },
      testing::ExitedWithCode(66), "data race(.|\n)*tsan_probe_test.cc");
  if (inherited != nullptr) {
    setenv("TSAN_OPTIONS", inherited, 1);
  } else {
    unsetenv("TSAN_OPTIONS");
  }
#else
  GTEST_SKIP() << "only meaningful under ThreadSanitizer";
#endif
}

TEST(ThreadSanitizerProbeTest, TasksWritingTheirOwnElementsAreClean) {
  const Outcome outcome = RunTasks(/*racy=*/false);
  EXPECT_EQ(outcome.element, 50.0);
  EXPECT_TRUE(outcome.both_threads_ran) << "the probe needs tasks on both threads";
}

}  // namespace
