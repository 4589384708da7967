// The only door to oneTBB: a pool that owns one tbb::task_arena.
//
// Callers cut their work into tasks computed from the problem size, never from the
// thread count; every task runs exactly once and writes only its own outputs. The
// serial driver (1 thread) runs the same tasks in order, so a computation built on
// ParallelFor gives bit-identical results for every thread count.
//
// No TBB header is visible here, so nothing outside threading/ depends on TBB.
#pragma once

#include <cstddef>
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
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  size_t threads() const { return threads_; }

  // Runs task(i, worker) for every i in [0, num_tasks). `worker` < threads() names the
  // executing thread, for indexing per-thread scratch. Returns after all tasks ran.
  void ParallelFor(size_t num_tasks, TaskRef task);

  template <class Fn>
  void ParallelFor(size_t num_tasks, Fn&& fn) {
    ParallelFor(num_tasks, TaskRef(fn));
  }

 private:
  struct Arena;
  size_t threads_;
  std::unique_ptr<Arena> arena_;
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
