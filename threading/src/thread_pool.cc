// The pool: a tbb::task_arena (owned, or the host's) and one parallel_for per loop.
//
// A decode step of the 15M model forks 31 parallel loops of 1–10 µs of work each,
// with a few µs of serial code between two of them, so the fork and join must cost
// a fraction of a µs, not the tens of µs of waking sleeping threads. oneTBB's
// workers keep looking for work for a while after a loop ends before they sleep, so
// inside a step a fork is a task the waiting workers pick up at once.
//
// Each loop is cut into contiguous blocks of task indices, two per thread of the
// arena (simple_partitioner halving the range down to a grain of n / (2 threads)):
// few task objects, and each thread reads a contiguous part of the data a loop
// streams, which the hardware prefetchers follow. A block not yet started is run by
// whichever thread of the arena is free first (the caller included), so a thread
// that stalls (descheduled on a shared machine) holds back at most the one block
// it is in, half its share; one block per thread (static_partitioner) was cheaper by
// about 0.1 µs a loop but let one stalled thread hold back its whole share
// (ThreadPoolTest.OthersFinishTheRangeOfAStalledThread). Which thread runs a task
// never changes what it computes.
//
// A task's worker index is its thread's slot in the arena
// (tbb::this_task_arena::current_thread_index): below the arena's concurrency and
// unique among the threads in it at any moment. It stays unique among the tasks
// that run at once as long as no thread runs a task while another is suspended on
// its stack, which two rules ensure:
//   - a ParallelFor from inside a task of the same pool runs inline, under the
//     task's own worker index, and
//   - every loop runs in this_task_arena::isolate, so a thread waiting for its loop
//     to finish (the caller, or a task that loops on another pool in the same
//     arena) only picks up that loop's tasks, never another loop's or the host's.
#include "kvrt/threading/thread_pool.h"

#include <oneapi/tbb/global_control.h>
#include <oneapi/tbb/parallel_for.h>
#include <oneapi/tbb/partitioner.h>
#include <oneapi/tbb/task_arena.h>

#include <algorithm>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <new>
#include <optional>
#include <thread>

#include "kvrt/threading/tbb_arena.h"

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

// Debian's libtbb is not built with ThreadSanitizer, so TSan cannot see how the
// scheduler hands a task to a worker and reports it done: without help, every output
// a worker writes would look like a race with the caller that reads it. These two
// hand-offs are the only ordering ParallelFor promises, so they are the only ones
// announced: the caller's writes happen before every task, and every task happens
// before ParallelFor returns. Tasks stay unordered among themselves, so two tasks
// writing one element are still reported (tests/threading/tsan_probe_test.cc).
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

// A loop's task indices [begin, end) as a TBB range that halves down to `grain` tasks
// (as blocked_range with simple_partitioner does). TBB keeps ranges inside its task
// objects: a split builds the new half on one thread and another may take it over,
// and a task object one thread is done with is recycled by another. Both hand-offs
// happen in libtbb, so the range announces them to TSan itself (RangeHandOff, at
// the range's own address): a split and the end of a range's life release it,
// and its construction and every read (TBB's empty, is_divisible and split, then
// the block's bounds) acquire it first.
class RangeHandOff {
 public:
  RangeHandOff() { Receive(); }
  RangeHandOff(const RangeHandOff&) { Receive(); }
  RangeHandOff& operator=(const RangeHandOff&) = delete;
  ~RangeHandOff() { Publish(); }
#if defined(KVRT_THREAD_SANITIZER)
  void Publish() const { __tsan_release(const_cast<RangeHandOff*>(this)); }
  void Receive() const { __tsan_acquire(const_cast<RangeHandOff*>(this)); }
#else
  void Publish() const {}
  void Receive() const {}
#endif
};

class TaskBlocks : private RangeHandOff {
 public:
  TaskBlocks(size_t begin, size_t end, size_t grain) : begin_(begin), end_(end), grain_(grain) {}
  TaskBlocks(TaskBlocks& whole, tbb::split) : begin_(whole.Middle()), end_(whole.end_), grain_(whole.grain_) {
    whole.end_ = begin_;
    whole.Publish();
    Publish();
  }
  bool empty() const {
    Receive();
    return begin_ == end_;
  }
  bool is_divisible() const {
    Receive();
    return end_ - begin_ > grain_;
  }
  size_t begin() const {
    Receive();
    return begin_;
  }
  size_t end() const {
    Receive();
    return end_;
  }

 private:
  size_t Middle() const {
    Receive();
    return begin_ + (end_ - begin_) / 2;
  }

  size_t begin_, end_, grain_;
};

// The caller → task hand-off uses one process-wide token: a task must acquire before
// it reads anything of its caller's, the closure that would name a per-call token
// included. Callers only release it and tasks only acquire it, so the tasks of one
// loop stay unordered with each other.
HandOff& CallerToTasks() {
  static HandOff token;
  return token;
}

// oneTBB caps its workers at HardwareThreads() - 1 unless told otherwise, and a
// larger arena then runs with fewer threads than asked. A pool made for N threads
// promises N (a test of 4 threads on 2 cores must run 4), so the process-wide limit
// is raised to the largest such pool (never lowered: TBB applies the smallest of the
// active controls, so a replaced control is released only after its larger
// successor exists). Pools on the host's arenas never change it.
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

// Blocks a loop is cut into per thread of its arena (see the top of this file).
constexpr size_t kBlocksPerThread = 2;

// The arena of the pool whose task this thread is running, and the worker index it
// runs under: a ParallelFor on that pool from inside the task runs inline.
thread_local const void* current_arena = nullptr;
thread_local size_t current_worker = 0;

}  // namespace

struct ThreadPool::Arena {
  // An arena of its own, of `threads` slots (one of them for the calling thread).
  explicit Arena(int threads) : owned(std::in_place, threads), arena(&*owned) { StartWorkers(); }
  // The arena the calling thread runs in now, or TBB's default one.
  explicit Arena(tbb::task_arena::attach attach) : owned(std::in_place, attach), arena(&*owned) {
    StartWorkers();
  }
  // The host's arena, which outlives the pool.
  explicit Arena(tbb::task_arena& host) : arena(&host) { StartWorkers(); }

  // oneTBB starts worker threads when an arena first has work, and throws
  // std::runtime_error from whatever spawned that work when the system refuses a
  // thread (a process or thread limit); it does not try again after such a failure.
  // So the pool offers the arena its first work here, where a refused thread only
  // means fewer threads for the same tasks, and never inside a ParallelFor, which
  // must not fail.
  // The work is empty blocks of the loops' own range type, so that under TSan the
  // task objects TBB recycles into the first loops held only ranges that announce
  // their hand-offs.
  void StartWorkers() {
    arena->initialize();
    try {
      arena->execute([] {
        const auto blocks = static_cast<size_t>(2 * tbb::this_task_arena::max_concurrency());
        tbb::parallel_for(TaskBlocks(0, blocks, 1), [](const TaskBlocks& block) { static_cast<void>(block.begin()); },
                          tbb::simple_partitioner());
      });
    } catch (const std::exception&) {
      // Fewer workers than slots: the tasks and their results stay the same.
    }
  }

  std::optional<tbb::task_arena> owned;
  tbb::task_arena* arena;
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
  if (threads_ <= 1) return;
  try {
    AllowParallelism(threads_);
    arena_ = std::make_unique<Arena>(static_cast<int>(threads_));
  } catch (const std::bad_alloc&) {
    // No arena: every ParallelFor runs its tasks in order on the caller, with the
    // same results.
    arena_.reset();
  }
}

ThreadPool::ThreadPool(std::unique_ptr<Arena> arena)
    : threads_(static_cast<size_t>(std::max(1, arena->arena->max_concurrency()))), arena_(std::move(arena)) {}

std::unique_ptr<ThreadPool> ThreadPool::OnCurrentArena() {
  return std::make_unique<ThreadPool>(std::make_unique<Arena>(tbb::task_arena::attach{}));
}

std::unique_ptr<ThreadPool> PoolOnArena(tbb::task_arena& arena) {
  return std::make_unique<ThreadPool>(std::make_unique<ThreadPool::Arena>(arena));
}

ThreadPool::~ThreadPool() = default;

void ThreadPool::ParallelFor(size_t num_tasks, TaskRef task) {
  const bool nested = arena_ != nullptr && current_arena == arena_.get();
  if (arena_ == nullptr || threads_ <= 1 || num_tasks <= 1 || nested) {
    const size_t worker = nested ? current_worker : 0;
    for (size_t i = 0; i < num_tasks; ++i) task(i, worker);
    return;
  }
  parallel_regions_.fetch_add(1, std::memory_order_relaxed);
  // Two blocks per thread: simple_partitioner halves the range until a block holds
  // at most `grain` tasks.
  const size_t grain = std::max<size_t>(1, num_tasks / (kBlocksPerThread * threads_));
  HandOff finish;
  const void* const self = arena_.get();
  const auto run_block = [&](const TaskBlocks& block) {
    CallerToTasks().Receive();
    const void* const outer_arena = current_arena;
    const size_t outer_worker = current_worker;
    current_arena = self;
    current_worker = static_cast<size_t>(std::max(0, tbb::this_task_arena::current_thread_index()));
    for (size_t i = block.begin(); i != block.end(); ++i) task(i, current_worker);
    current_arena = outer_arena;
    current_worker = outer_worker;
    finish.Publish();
  };
  // execute() may hand run_all to a worker of the arena when every slot for callers
  // is taken (several callers on one pool), so it receives the hand-off too.
  const auto run_all = [&] {
    CallerToTasks().Receive();
    tbb::this_task_arena::isolate([&] {
      tbb::parallel_for(TaskBlocks(0, num_tasks, grain), run_block, tbb::simple_partitioner());
    });
  };
  // Published after the closures are built: the tasks read them.
  CallerToTasks().Publish();
  arena_->arena->execute(run_all);
  finish.Receive();
}

}  // namespace kvrt::threading
