// kvrt's thread pool: threads() − 1 workers of its own plus the calling thread.
//
// Callers cut their work into tasks computed from the problem size, never from the
// thread count; every task runs exactly once and writes only its own outputs. The
// serial driver (1 thread) runs the same tasks in order, so a computation built on
// ParallelFor gives bit-identical results for every thread count.
//
// A decode step of a small model is a few dozen short parallel loops, so what one
// ParallelFor costs beyond its tasks matters (thread_pool.cc says how it is kept
// to a few cache-line transfers). Nothing outside threading/ sees how.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

namespace kvrt::threading {

// A non-owning reference to a callable `void(size_t task, size_t worker)`.
class TaskRef {
 public:
  template <class Fn>
  TaskRef(Fn& fn)  // NOLINT(google-explicit-constructor): a view, like std::function_ref
      : object_(&fn), call_([](void* object, size_t task, size_t worker) {
          (*static_cast<Fn*>(object))(task, worker);
        }) {}
  void operator()(size_t task, size_t worker) const { call_(object_, task, worker); }

 private:
  void* object_;
  void (*call_)(void*, size_t, size_t);
};

class ThreadPool {
 public:
  // `threads` = 0 means DefaultThreads().
  explicit ThreadPool(size_t threads = 0);
  // Joins the workers; no ParallelFor may be running.
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  size_t threads() const { return threads_; }

  // Runs task(i, worker) for every i in [0, num_tasks). `worker` < threads() names the
  // executing thread, for indexing per-thread scratch. Returns after all tasks ran.
  // Callers on several threads take turns; a task that calls ParallelFor on the pool
  // running it runs that inner loop itself, with its own worker index. Tasks must
  // not throw.
  void ParallelFor(size_t num_tasks, TaskRef task);

  template <class Fn>
  void ParallelFor(size_t num_tasks, Fn&& fn) {
    ParallelFor(num_tasks, TaskRef(fn));
  }

  // How many ParallelFor calls handed tasks to the workers since construction (a
  // loop of one task, a one-thread pool and a nested loop run inline and are not
  // counted): the benchmarks report parallel regions per token with it.
  uint64_t parallel_regions() const { return parallel_regions_.load(std::memory_order_relaxed); }

 private:
  struct Workers;
  size_t threads_;
  std::atomic<uint64_t> parallel_regions_{0};
  std::unique_ptr<Workers> workers_;
};

// Runs fn(i, 0) for every i on the calling thread when no pool is given, else
// pool->ParallelFor: engines take an optional pool and call this one door.
template <class Fn>
void ParallelFor(ThreadPool* pool, size_t num_tasks, Fn&& fn) {
  if (pool == nullptr) {
    for (size_t i = 0; i < num_tasks; ++i) fn(i, size_t{0});
  } else {
    pool->ParallelFor(num_tasks, fn);
  }
}

// Hardware concurrency as the pool sees it (at least 1).
size_t HardwareThreads();

// The thread count a pool gets when none is given: $KVRT_THREADS when it holds a
// positive count, else HardwareThreads().
size_t DefaultThreads();

}  // namespace kvrt::threading
