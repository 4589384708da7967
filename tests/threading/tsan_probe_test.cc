// Under ThreadSanitizer, the pool's synchronisation (thread_pool.cc) must
// order the caller with its tasks without ordering the tasks among themselves:
// a real race between two tasks is still reported. Skipped in other builds.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
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

// Every task writes its own element, and with `racy` also element 0.
double RunTasks(bool racy) {
  kvrt::threading::ThreadPool pool(2);
  std::vector<double> out(64, 0.0);
  for (int repeat = 0; repeat < 50; ++repeat) {
    pool.ParallelFor(out.size(), [&](size_t i, size_t) {
      out[i] += 1.0;
      if (racy && i != 0) out[0] += 1.0;
    });
  }
  return out[1];
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
  EXPECT_EQ(RunTasks(/*racy=*/false), 50.0);
}

}  // namespace
