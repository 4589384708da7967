#include "session/engine_threads.h"

#include <new>
#include <string>
#include <system_error>

namespace kvrt {

Result<EngineThreads> ResolveEngineThreads(EngineOptions options) try {
  EngineThreads resolved;
  if (options.threads > EngineOptions::kMaxThreads) {
    return Fail(ErrorCode::kInvalidArgument, {},
                "at most " + std::to_string(EngineOptions::kMaxThreads) + " threads, got " +
                    std::to_string(options.threads));
  }
  if (options.backend == Backend::kFast && options.pool == nullptr) {
    const size_t threads = options.threads == 0 ? threading::DefaultThreads() : options.threads;
    if (threads > 1) {
      resolved.owned_pool = std::make_unique<threading::ThreadPool>(threads);
      options.pool = resolved.owned_pool.get();
    }
  }
  resolved.options = options;
  return resolved;
} catch (const std::bad_alloc&) {
  return Fail(ErrorCode::kAllocationFailed, {}, "could not allocate the engine's thread pool");
} catch (const std::system_error& error) {
  return Fail(ErrorCode::kAllocationFailed, {},
              std::string("could not start the engine's threads: ") + error.what());
}

}  // namespace kvrt
