// The arithmetic of one token step, behind the session's state machine.
//
// An engine never decides anything about the cache's logical state: the session
// validates requests, counts work and commits. The engine computes a step's new
// rows on top of the committed rows and says where the new K/V rows went.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

#include "kvrt/engine_options.h"
#include "kvrt/error.h"
#include "kv/decoder_kv_cache.h"
#include "model/decoder_model.h"

namespace kvrt::detail {

// One slot's new rows in a step: tokens[0, count) at positions [start, start +
// count). Rows [0, start) of the slot's lanes are already in the cache storage
// (committed, or placed by an earlier chunk of the same prefill).
struct EngineRun {
  size_t slot = 0;
  size_t start = 0;
  size_t count = 1;
  const uint32_t* tokens = nullptr;
};

// A step: runs over distinct slots, in the order their logits are written. Row
// i of the step is row i − first_row(run) of the run that holds it; runs are
// laid out back to back (Σ count = rows).
struct EngineStep {
  std::span<const EngineRun> runs;
  size_t rows = 0;
};

class Engine {
 public:
  virtual ~Engine() = default;

  // Most rows (over all runs) one Prepare accepts, and most rows of one run. The
  // session splits a longer prompt into steps within these limits (the reference
  // engine: one row per slot, the serial rows of spec/kv-cache.md §3.5; the fast
  // engine: its bounded workspace, never fewer rows than slots).
  virtual size_t max_rows_per_step() const = 0;
  virtual size_t max_rows_per_run() const = 0;

  // Phase 1: forwards every run's rows on top of rows [0, start) of its slot's
  // lanes in every layer. The new K/V rows go to the engine's staging buffers:
  // Prepare writes nothing into the layers' storage and never changes a length.
  // Writes the last row's logits of run r to logits[r·V, (r + 1)·V).
  virtual Result<void> Prepare(const EngineStep& step, std::span<LayerKvCache> layers,
                               std::span<double> logits) = 0;

  // Phase 3: copies the prepared rows into slots [start, start + count) of every
  // run's lanes. Cannot fail.
  virtual void Commit(const EngineStep& step, std::span<LayerKvCache> layers) = 0;
};

// The scalar f64 engine: bit-exact with the reference crate. With a weight format
// other than kAsStored it runs on DequantizedModel(model, weights) (made once
// per format and cached on the model), the oracle of the compressed kernels.
Result<std::unique_ptr<Engine>> CreateReferenceEngine(
    const DecoderModel& model, const DecoderKvCache& cache,
    WeightFormat weights = WeightFormat::kAsStored);

}  // namespace kvrt::detail
