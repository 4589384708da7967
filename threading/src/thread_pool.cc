#include "kvrt/threading/thread_pool.h"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/partitioner.h>
#include <tbb/task_arena.h>

#include <cstdlib>
#include <thread>

namespace kvrt::threading {

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
  if (threads_ > 1) arena_ = std::make_unique<Arena>(static_cast<int>(threads_));
}

ThreadPool::~ThreadPool() = default;

void ThreadPool::ParallelFor(size_t num_tasks, TaskRef task) {
  if (arena_ == nullptr || num_tasks <= 1) {
    for (size_t i = 0; i < num_tasks; ++i) task(i, 0);
    return;
  }
  arena_->arena.execute([&] {
    // simple_partitioner with grain 1: every task index is its own unit of work,
    // so which thread runs it can never change what it computes.
    tbb::parallel_for(
        tbb::blocked_range<size_t>(0, num_tasks, 1),
        [&](const tbb::blocked_range<size_t>& range) {
          const int index = tbb::this_task_arena::current_thread_index();
          const size_t worker = index < 0 ? 0 : static_cast<size_t>(index);
          for (size_t i = range.begin(); i != range.end(); ++i) task(i, worker);
        },
        tbb::simple_partitioner());
  });
}

}  // namespace kvrt::threading
