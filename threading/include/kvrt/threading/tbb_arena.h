// For embedders that run oneTBB themselves: a kvrt pool on a tbb::task_arena of
// theirs, so kvrt's parallel loops run on the host's workers and add no threads.
//
// This is the one installed header that includes TBB; thread_pool.h stays free of
// it, so a program that does not use TBB itself never compiles TBB's headers
// (it still links libtbb, which kvrt's pool runs on).
#pragma once

#include <memory>

#include <oneapi/tbb/task_arena.h>

#include "kvrt/threading/thread_pool.h"

namespace kvrt::threading {

// A pool whose loops run in `arena` (initialized here if it is not yet). threads() is
// arena.max_concurrency(), and a task's worker index is its thread's slot in the
// arena. The arena must outlive the pool. Throws std::bad_alloc when out of memory.
std::unique_ptr<ThreadPool> PoolOnArena(tbb::task_arena& arena);

}  // namespace kvrt::threading
