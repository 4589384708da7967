// kvrt's thread pool: a oneTBB task arena that runs the engines' parallel loops.
//
// Callers cut their work into tasks computed from the problem size, never from the
// thread count; every task runs exactly once and writes only its own outputs. The
// serial driver (1 thread) runs the same tasks in order, so a computation built on
// ParallelFor gives bit-identical results for every thread count and every arena.
//
// A pool either owns an arena of its own (the constructor) or runs in an arena of
// the host's (OnCurrentArena here; PoolOnArena in tbb_arena.h for a
// tbb::task_arena the embedder holds), so that an embedder already running oneTBB
// gets kvrt's loops on its own workers, with no second set of threads competing
// for the cores. No TBB header is visible here: nothing that includes this header
// depends on TBB (tbb_arena.h is the one header that names TBB types).
//
// A decode step of a small model is a few dozen short parallel loops, so what one
// ParallelFor costs beyond its tasks matters (thread_pool.cc says how it is kept
// small).
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
  // An arena of `threads` threads of its own (the calling thread is one of them);
  // 0 means DefaultThreads().
  explicit ThreadPool(size_t threads = 0);
  // A pool in the arena the calling thread runs in now: inside a task of the host's
  // tbb::task_arena, that arena; elsewhere oneTBB's default arena of the process.
  // It adds no threads; threads() is that arena's concurrency.
  static std::unique_ptr<ThreadPool> OnCurrentArena();
  // No ParallelFor may be running.
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  size_t threads() const { return threads_; }

  // Runs task(i, worker) for every i in [0, num_tasks). `worker` < threads() names the
  // executing thread, and no two tasks running at once have the same one, so it can
  // index per-thread scratch. Returns after all tasks ran. Callers on several threads
  // may share a pool; a task that calls ParallelFor on the pool running it runs that
  // inner loop itself, under its own worker index. Tasks must not throw.
  void ParallelFor(size_t num_tasks, TaskRef task);

  template <class Fn>
  void ParallelFor(size_t num_tasks, Fn&& fn) {
    ParallelFor(num_tasks, TaskRef(fn));
  }

  // How many ParallelFor calls handed tasks to the arena since construction (a loop
  // of one task, a one-thread pool and a nested loop run inline and are not
  // counted): the benchmarks report parallel regions per token with it.
  uint64_t parallel_regions() const { return parallel_regions_.load(std::memory_order_relaxed); }

  // The arena behind a pool: defined in thread_pool.cc, which alone makes one.
  struct Arena;
  explicit ThreadPool(std::unique_ptr<Arena> arena);

 private:
  size_t threads_;
  std::atomic<uint64_t> parallel_regions_{0};
  std::unique_ptr<Arena> arena_;  // null: every loop runs on the calling thread
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
