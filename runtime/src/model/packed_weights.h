// A model's weights in the fast engine's layout and precision, packed once and
// shared by every session that binds the model with that precision.
//
// Matrices are column panels (simd/packed_matrix.h) of x·W: query, key, value,
// output, gate, up, down per block, and the vocabulary head [D, V] (for a tied
// head the token table transposed, which also serves the embedding lookup as
// column gathers). Parameters already kept in f32 panels are aliased, not copied.
// Gains and the RoPE tables are converted to T.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "kvrt/buffer.h"
#include "kvrt/error.h"
#include "kvrt/model.h"
#include "kvrt/simd/packed_matrix.h"

namespace kvrt::detail {

template <class T>
struct PackedWeight {
  simd::PackedMatrixView<T> view;
  Buffer<T> owned;      // the panels, unless aliased
  ParameterPtr source;  // keeps an aliased parameter's panels alive
};

template <class T>
struct BlockWeights {
  Buffer<T> attention_norm;  // [D]
  Buffer<T> ffn_norm;        // [D]
  PackedWeight<T> query, key, value, output, gate, up, down;
};

template <class T>
struct EngineWeights {
  std::vector<BlockWeights<T>> blocks;
  Buffer<T> final_norm;        // [D]
  PackedWeight<T> embedding;   // the token table transposed: [D, V] panels
  PackedWeight<T> head;        // untied heads only; a tied head is `embedding`
  Buffer<T> rope_cos;          // [rope.tabulated(), hw/2]; later positions per step
  Buffer<T> rope_sin;          // [rope.tabulated(), hw/2]
  std::vector<uint64_t> revisions;  // of every parameter when packed

  const PackedWeight<T>& vocabulary_head(bool tied) const { return tied ? embedding : head; }
};

// Packed weights per precision, cached on a model (shared by copies of its handle)
// and repacked when a parameter's revision moved since the last packing.
class EngineWeightsCache {
 public:
  template <class T>
  Result<std::shared_ptr<const EngineWeights<T>>> Get(const DecoderModel& model);

 private:
  std::mutex mutex_;
  std::shared_ptr<const EngineWeights<float>> f32_;
  std::shared_ptr<const EngineWeights<double>> f64_;
};

// Packs every weight of `model` for precision T. The caller holds shared borrows
// of the parameters (values must not change while they are read).
template <class T>
Result<std::shared_ptr<const EngineWeights<T>>> PackEngineWeights(const DecoderModel& model);

}  // namespace kvrt::detail
