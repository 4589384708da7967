#include "kvrt/threading/thread_pool.h"

#include <tbb/blocked_range.h>
#include <tbb/global_control.h>
#include <tbb/parallel_for.h>
#include <tbb/partitioner.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <cstdlib>
#include <mutex>
#include <thread>

// g++ announces ThreadSanitizer with __SANITIZE_THREAD__, clang through __has_feature.
#if defined(__SANITIZE_THREAD__)
#define KVRT_THREAD_SANITIZER 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define KVRT_THREAD_SANITIZER 1
#endif
#endif
#if defined(KVRT_THREAD_SANITIZER)
#include <sanitizer/tsan_interface.h>
#endif

namespace kvrt::threading {
namespace {

// Debian's libtbb is not built with ThreadSanitizer, so TSan cannot see the
// synchronisation by which the scheduler hands a task to a worker and reports
// its completion; without help every kernel output a worker writes looks like
// a race with the caller that reads it. These two hand-offs are the only
// ordering ParallelFor promises, so they are the only ones we announce: the
// caller's writes happen before every task, and every task happens before
// ParallelFor returns. Tasks stay unordered among themselves, so two tasks
// touching one element are still reported.
class HandOff {
 public:
#if defined(KVRT_THREAD_SANITIZER)
  void Publish() { __tsan_release(&token_); }
  void Receive() { __tsan_acquire(&token_); }
#else
  void Publish() {}
  void Receive() {}
#endif

 private:
  [[maybe_unused]] char token_ = 0;
};

// The caller → task hand-off uses one process-wide token: a task must acquire
// before it reads anything of its caller's, including the closure that tells it
// where a per-call token would be. Callers only release it and tasks only
// acquire it, so tasks of a call stay unordered with each other.
HandOff& CallerToTasks() {
  static HandOff token;
  return token;
}

// TBB caps its workers at hardware_concurrency() - 1 unless told otherwise, and a
// larger arena then prints a multi-line "TBB Warning" on stderr and runs with fewer
// threads than asked. A pool of N threads is a promise of N, so the process-wide
// limit is raised to the largest pool ever made (and never lowered: TBB applies the
// smallest of the active controls, so a replaced control is released only after
// its larger successor exists).
void AllowParallelism(size_t threads) {
  static std::mutex mutex;
  static std::unique_ptr<tbb::global_control> control;
  static size_t allowed = 0;
  const std::lock_guard<std::mutex> lock(mutex);
  if (threads <= std::max(allowed, HardwareThreads())) return;
  auto raised = std::make_unique<tbb::global_control>(tbb::global_control::max_allowed_parallelism, threads);
  control = std::move(raised);
  allowed = threads;
}

}  // namespace

struct ThreadPool::Arena {
  explicit Arena(int threads) : arena(threads) {}
  tbb::task_arena arena;
};

size_t HardwareThreads() {
  const unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : n;
}

size_t DefaultThreads() {
  if (const char* env = std::getenv("KVRT_THREADS"); env != nullptr) {
    char* end = nullptr;
    const unsigned long long count = std::strtoull(env, &end, 10);
    if (end != env && *end == '\0' && count > 0 && count <= 1024) return static_cast<size_t>(count);
  }
  return HardwareThreads();
}

ThreadPool::ThreadPool(size_t threads) : threads_(threads == 0 ? DefaultThreads() : threads) {
  if (threads_ > 1) {
    AllowParallelism(threads_);
    arena_ = std::make_unique<Arena>(static_cast<int>(threads_));
  }
}

ThreadPool::~ThreadPool() = default;

void ThreadPool::ParallelFor(size_t num_tasks, TaskRef task) {
  if (arena_ == nullptr || num_tasks <= 1) {
    for (size_t i = 0; i < num_tasks; ++i) task(i, 0);
    return;
  }
  HandOff finish;
  // simple_partitioner with grain 1: every task index is its own unit of work,
  // so which thread runs it can never change what it computes.
  const auto run_range = [&](const tbb::blocked_range<size_t>& range) {
    CallerToTasks().Receive();
    const int index = tbb::this_task_arena::current_thread_index();
    const size_t worker = index < 0 ? 0 : static_cast<size_t>(index);
    for (size_t i = range.begin(); i != range.end(); ++i) task(i, worker);
    finish.Publish();
  };
  // execute() may hand run_all to a worker when every arena slot is taken (several
  // callers sharing one pool), so it receives the hand-off too.
  const auto run_all = [&] {
    CallerToTasks().Receive();
    tbb::parallel_for(tbb::blocked_range<size_t>(0, num_tasks, 1), run_range, tbb::simple_partitioner());
  };
  // Published after the closures are built: workers read them.
  CallerToTasks().Publish();
  arena_->arena.execute(run_all);
  finish.Receive();
}

}  // namespace kvrt::threading
