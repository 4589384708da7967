// The fast engine (Highway kernels, thread pool, f32 or f64) behind a session.
#pragma once

#include <memory>

#include "engine/engine.h"
#include "kvrt/engine_options.h"

namespace kvrt::detail {

// Packs (or reuses) the model's weights for options.precision and allocates the
// workspace for steps of up to cache.capacity() rows of cache.batch_size()
// sequences. Runs its parallel loops on options.pool (serially without one).
Result<std::unique_ptr<Engine>> CreateFastEngine(const DecoderModel& model, const DecoderKvCache& cache,
                                                 const EngineOptions& options);

}  // namespace kvrt::detail
