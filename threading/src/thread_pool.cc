// The pool: a job slot, an epoch the workers watch, and a check-in count.
//
// A decode step of the 15M model forks 31 parallel loops of 1–10 µs of work each,
// and the serial code between two of them takes a few µs. A fork that wakes
// sleeping threads (a futex call to start, tens of µs until they run) would cost
// as much as the work, so a worker that finished a job keeps watching the epoch
// for a short spin window (kSpinWindow) before it sleeps: inside a step, a fork is
// a store the workers see within a cache-line transfer, and a join is the caller
// watching a counter. Spinning is bounded, so an idle pool sleeps (std::atomic::
// wait, a futex) and costs its host process nothing.
//
// One job at a time (callers take turns on a mutex):
//   open    the caller writes the job (task, count), then makes the epoch odd; the
//           odd epoch is the job's tag. Workers asleep are woken only if some are.
//   run     the task indices are cut into one contiguous range per thread (the
//           caller is thread 0), each with a claim word on its own cache line. Every
//           thread that checked in claims runs from its own range, then steals runs
//           from the others' until none is left. Which thread runs a task never
//           changes what the task computes, so the results are the same for any
//           thread count.
//   close   the caller makes the epoch even once every index is claimed, then
//           waits until the workers that checked in have checked out.
// A worker checks in by raising `active`, then reads the epoch again: only if the
// job is still open does it touch the job. Both sides use sequentially consistent
// operations, so either the caller's close sees the worker's check-in (and waits
// for it), or the worker sees the close (and leaves the job alone). After the
// close returns, no worker reads the job, so the caller's task may go out of scope.
//
// The happens-before edges are the ones ParallelFor promises and no more: the
// caller's writes happen before every task (epoch release → acquire), every task
// happens before ParallelFor returns (check-out release → the caller's acquire).
// Task indices are claimed with relaxed compare-exchanges, so two tasks of one call stay
// unordered and ThreadSanitizer still reports a task writing another's output.
//
// Why a range per thread: with one shared counter every claim moved its cache line
// between the cores, and a 27-task loop takes a dozen claims. Here a claim word holds
// (job tag, next index), so it needs no reset between jobs (a word with another tag
// stands for its range's first index), and a thread's claims stay in its own cache
// until it steals at the end of the job. A thread also reads a contiguous part of
// the data a loop streams, which the hardware prefetchers follow better. Both make a
// loop cheaper and two-thread decode faster (figures in
// docs/performance/design_measurements.md).
#include "kvrt/threading/thread_pool.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <mutex>
#include <new>
#include <system_error>
#include <thread>
#include <vector>

namespace kvrt::threading {
namespace {

// How long a thread with nothing to do watches for more before it sleeps: longer
// than the serial gaps inside a decode step, short enough that a pool left idle by
// its host stops using a core at once.
constexpr std::chrono::microseconds kSpinWindow{50};

// A claim takes 1/kClaimShare of what is left of a range (at least one task): few
// claims while much is left, single tasks at the end, where they balance the threads.
constexpr size_t kClaimShare = 2;

// A claim word: the job's tag (its odd epoch) above the range's next index.
constexpr uint64_t ClaimWord(uint32_t job, size_t next) { return uint64_t{job} << 32 | next; }

inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

// Polls `ready` for up to kSpinWindow; true as soon as it holds. A pool with more
// threads than the machine has cores also yields while it polls: the thread it
// waits for may be one that a spinning thread keeps off its core.
template <class Ready>
bool SpinUntil(bool oversubscribed, Ready&& ready) {
  const auto deadline = std::chrono::steady_clock::now() + kSpinWindow;
  for (unsigned polls = 1;; ++polls) {
    if (ready()) return true;
    if (oversubscribed) {
      std::this_thread::yield();
    } else {
      CpuRelax();
    }
    if (polls % 16 == 0 && std::chrono::steady_clock::now() > deadline) return false;
  }
}

// The pool whose task this thread is running (a worker's own pool, or the pool a
// caller is inside ParallelFor of) and the worker index it runs under: a nested
// ParallelFor on that pool runs inline under the same index.
thread_local const void* current_pool = nullptr;
thread_local size_t current_worker = 0;

}  // namespace

struct ThreadPool::Workers {
  explicit Workers(size_t workers)
      : oversubscribed(workers + 1 > HardwareThreads()), claims(workers + 1) {
    threads.reserve(workers);
    try {
      for (size_t w = 1; w <= workers; ++w) threads.emplace_back([this, w] { Loop(w); });
    } catch (const std::system_error&) {
      // Fewer threads than asked (a process limit): the tasks and their results are
      // the same, they only run on fewer threads.
    }
    // Read by the workers only inside a job, after the epoch that opened it.
    ranges = threads.size() + 1;
  }

  ~Workers() {
    stop.store(true, std::memory_order_relaxed);
    epoch.fetch_add(2, std::memory_order_seq_cst);  // still even: no job, only a change
    epoch.notify_all();
    for (std::thread& thread : threads) thread.join();
  }

  bool empty() const { return threads.empty(); }

  // The caller's side of one job; `mutex` is held.
  // `count` < 2^32 (ThreadPool::ParallelFor cuts larger loops).
  void Run(size_t count, const TaskRef& job) {
    task = &job;
    num_tasks = count;
    const uint32_t open = epoch.load(std::memory_order_relaxed) + 1;
    // An empty range (fewer tasks than threads) is never claimed from, so its word
    // could keep a tag for 2^31 jobs, until the epoch wraps around to it: mark it
    // used up in this job.
    if (count < ranges) {
      for (size_t r = 0; r < ranges; ++r) {
        if (RangeBegin(r) == RangeEnd(r))
          claims[r].word.store(ClaimWord(open, RangeEnd(r)), std::memory_order_relaxed);
      }
    }
    epoch.store(open, std::memory_order_seq_cst);
    if (sleepers.load(std::memory_order_seq_cst) != 0) epoch.notify_all();

    const void* outer_pool = current_pool;
    const size_t outer_worker = current_worker;
    current_pool = this;
    current_worker = 0;
    try {
      RunTasks(0, open);
    } catch (...) {  // tasks must not throw; if one does, the pool still closes the job
      current_pool = outer_pool;
      current_worker = outer_worker;
      for (size_t r = 0; r < ranges; ++r) {  // the rest of the tasks are dropped
        claims[r].word.store(ClaimWord(open, RangeEnd(r)), std::memory_order_relaxed);
      }
      Close(open);
      throw;
    }
    current_pool = outer_pool;
    current_worker = outer_worker;
    Close(open);
  }

  // Ends job `open`: no worker checks in after this, and the ones in have left.
  void Close(uint32_t open) {
    epoch.store(open + 1, std::memory_order_seq_cst);
    if (!SpinUntil(oversubscribed, [&] { return active.load(std::memory_order_acquire) == 0; })) {
      caller_waiting.store(true, std::memory_order_seq_cst);
      for (uint32_t left; (left = active.load(std::memory_order_seq_cst)) != 0;) {
        active.wait(left, std::memory_order_seq_cst);
      }
      caller_waiting.store(false, std::memory_order_relaxed);
    }
  }

  // Range r of the current job's task indices.
  size_t RangeBegin(size_t r) const { return r * num_tasks / ranges; }
  size_t RangeEnd(size_t r) const { return (r + 1) * num_tasks / ranges; }

  // Claims the next run of range r in job `job` as [*begin, *end); false once the
  // range is used up.
  bool Claim(size_t r, uint32_t job, size_t* begin, size_t* end) {
    const size_t last = RangeEnd(r);
    uint64_t word = claims[r].word.load(std::memory_order_relaxed);
    for (;;) {
      const size_t at = word >> 32 == job ? static_cast<uint32_t>(word) : RangeBegin(r);
      if (at >= last) return false;
      const size_t run = std::max<size_t>(1, (last - at) / kClaimShare);
      if (claims[r].word.compare_exchange_weak(word, ClaimWord(job, at + run),
                                               std::memory_order_relaxed)) {
        *begin = at;
        *end = at + run;
        return true;
      }
    }
  }

  // Runs claimed tasks of job `job` until none is left: this thread's own range
  // first (a worker that failed to start leaves its range to the others), then the
  // others' in turn.
  void RunTasks(size_t worker, uint32_t job) {
    for (size_t k = 0; k < ranges; ++k) {
      const size_t r = (worker + k) % ranges;
      size_t begin = 0, end = 0;
      while (Claim(r, job, &begin, &end)) {
        for (size_t i = begin; i < end; ++i) (*task)(i, worker);
      }
    }
  }

  void Loop(size_t worker) {
    current_pool = this;
    current_worker = worker;
    // The epoch as the constructor left it, not as this thread first reads it: a
    // thread that starts late must still see every change since, the stop included.
    uint32_t seen = 0;
    for (;;) {
      uint32_t now = seen;
      if (!SpinUntil(oversubscribed,
                     [&] { return (now = epoch.load(std::memory_order_acquire)) != seen; })) {
        sleepers.fetch_add(1, std::memory_order_seq_cst);
        while ((now = epoch.load(std::memory_order_seq_cst)) == seen) {
          epoch.wait(seen, std::memory_order_seq_cst);
        }
        sleepers.fetch_sub(1, std::memory_order_relaxed);
      }
      seen = now;
      if (stop.load(std::memory_order_relaxed)) return;
      if (now % 2 == 0) continue;  // a job came and went
      active.fetch_add(1, std::memory_order_seq_cst);
      if (epoch.load(std::memory_order_seq_cst) == now) RunTasks(worker, now);
      if (active.fetch_sub(1, std::memory_order_seq_cst) == 1 &&
          caller_waiting.load(std::memory_order_seq_cst)) {
        active.notify_all();
      }
    }
  }

  const bool oversubscribed;  // more threads than cores
  std::mutex mutex;           // one caller at a time
  std::vector<std::thread> threads;

  // The job and the epoch, written by the caller, read by the workers.
  alignas(64) const TaskRef* task = nullptr;
  size_t num_tasks = 0;
  std::atomic<uint32_t> epoch{0};  // odd while a job is open
  std::atomic<uint32_t> sleepers{0};
  std::atomic<bool> stop{false};
  size_t ranges = 1;  // threads that started, the caller included: one range each
  // One claim word per range, each on its own cache line.
  struct alignas(64) ClaimSlot {
    std::atomic<uint64_t> word{0};
  };
  std::vector<ClaimSlot> claims;
  // Workers checked in to the current job, and whether the caller sleeps on it.
  alignas(64) std::atomic<uint32_t> active{0};
  std::atomic<bool> caller_waiting{false};
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
    workers_ = std::make_unique<Workers>(threads_ - 1);
  } catch (const std::bad_alloc&) {
    // No workers: every ParallelFor runs its tasks in order on the caller.
  }
}

ThreadPool::~ThreadPool() = default;

void ThreadPool::ParallelFor(size_t num_tasks, TaskRef task) {
  const bool nested = workers_ != nullptr && current_pool == workers_.get();
  if (workers_ == nullptr || workers_->empty() || num_tasks <= 1 || nested) {
    const size_t worker = nested ? current_worker : 0;
    for (size_t i = 0; i < num_tasks; ++i) task(i, worker);
    return;
  }
  const std::lock_guard<std::mutex> lock(workers_->mutex);
  parallel_regions_.fetch_add(1, std::memory_order_relaxed);
  // A claim word holds a task index in 32 bits: a larger loop runs as loops of 2^31.
  constexpr size_t kMaxJob = size_t{1} << 31;
  for (size_t first = 0; first < num_tasks; first += kMaxJob) {
    const size_t count = std::min(kMaxJob, num_tasks - first);
    if (first == 0 && count == num_tasks) {
      workers_->Run(count, task);
    } else {
      auto shifted = [&task, first](size_t i, size_t worker) { task(first + i, worker); };
      workers_->Run(count, TaskRef(shifted));
    }
  }
}

}  // namespace kvrt::threading
