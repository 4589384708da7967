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
#include "kvrt/kv_cache.h"
#include "kvrt/model.h"

namespace kvrt::detail {

// Typed access to a layer's storage for engines (the public API only reads it).
struct KvStorageAccess {
  template <class T>
  static T* keys(LayerKvCache& layer) {
    return reinterpret_cast<T*>(layer.keys_.data());
  }
  template <class T>
  static T* values(LayerKvCache& layer) {
    return reinterpret_cast<T*>(layer.values_.data());
  }
};

struct EngineStep {
  const uint32_t* tokens = nullptr;  // token of row r of sequence b: tokens[b·token_stride + r]
  size_t token_stride = 0;
  size_t batch = 1;
  size_t rows = 1;   // new rows per sequence
  size_t start = 0;  // committed rows = position of the first new row
};

class Engine {
 public:
  virtual ~Engine() = default;

  // Most rows per sequence one Prepare accepts; the session splits longer prompts
  // into steps of at most this many rows (the reference engine: 1, the serial
  // rows of spec/kv-cache.md §3.5).
  virtual size_t max_rows_per_step() const = 0;

  // Phase 1: forwards the step's rows of every sequence on top of rows [0, start)
  // of every layer. The new K/V rows of a one-row step go to the engine's staging
  // buffers; those of a multi-row step into the layers' storage past `start`, where
  // no committed reader looks. Writes the last new row's logits of every sequence
  // to `logits` ([batch, V]). Never changes a layer's logical length.
  virtual Result<void> Prepare(const EngineStep& step, std::span<LayerKvCache> layers,
                               std::span<double> logits) = 0;

  // Phase 3: makes the prepared rows physical at slots [start, start + rows)
  // (copies staged rows; multi-row steps are already in place). Cannot fail.
  virtual void Commit(const EngineStep& step, std::span<LayerKvCache> layers) = 0;
};

// The scalar f64 engine: bit-exact with the reference crate. With a weight format
// other than kAsStored it runs on DecoderModel::Dequantized(weights) (made once
// per format and cached on the model), the oracle of the compressed kernels.
Result<std::unique_ptr<Engine>> CreateReferenceEngine(
    const DecoderModel& model, const DecoderKvCache& cache,
    WeightFormat weights = WeightFormat::kAsStored);

}  // namespace kvrt::detail
