// The threads a fast engine runs on. Engines read only EngineOptions::pool; the
// APIs (C++ and C) turn EngineOptions::threads into a pool of the session's own
// here, once, when a session or a generation starts.
#pragma once

#include <memory>

#include "kvrt/engine_options.h"
#include "kvrt/error.h"
#include "kvrt/threading/thread_pool.h"

namespace kvrt {

struct EngineThreads {
  EngineOptions options;  // `pool` set when the engine runs on more than the calling thread
  std::unique_ptr<threading::ThreadPool> owned_pool;  // when no shared pool was given
};

// options.pool when given; else, for the fast backend, a new pool of
// options.threads threads (0: threading::DefaultThreads()), or none for one
// thread. The reference engine runs on the calling thread. InvalidArgument past
// EngineOptions::kMaxThreads; AllocationFailed when the threads cannot start.
Result<EngineThreads> ResolveEngineThreads(EngineOptions options);

}  // namespace kvrt
