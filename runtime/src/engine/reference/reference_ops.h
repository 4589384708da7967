// The scalar f64 forward of new token rows on top of committed K/V rows.
//
// One body serves both reference paths: the complete-prefix pass is a step of T
// rows from position 0 into scratch K/V, and a cached token forward is a step of
// one row on top of the cache. All arithmetic is the simd scalar twins in the
// order of spec/model.md, so both paths are bit-exact with the reference crate.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "engine/reference/complete_prefix.h"
#include "engine/reference/kv_rows.h"
#include "engine/reference/trace_sink.h"
#include "core/buffer.h"
#include "kvrt/engine_options.h"
#include "kvrt/error.h"
#include "model/decoder_model.h"
#include "kvrt/simd/packed_matrix.h"

namespace kvrt::detail {

struct RowStep {
  std::span<const uint32_t> tokens;  // [batch, rows], ids already validated (< V)
  size_t batch = 1;
  size_t rows = 1;
  size_t start = 0;         // position of the first new row
  bool all_logits = false;  // logits for every row; otherwise the last row per sequence
};

// How one of a block's two RMSNorms and one of its two residual adds are named in
// errors and in the trace (defined in reference_ops.cc).
struct BlockNorm;
struct ResidualAdd;

class ReferenceRowForward {
 public:
  // Workspace for up to `max_rows` new rows of `batch` sequences, allocated once.
  static Result<ReferenceRowForward> Create(const DecoderModel& model, size_t batch,
                                            size_t max_rows);

  // Runs one step. `layers[l]` says where layer l reads committed rows and writes
  // the new ones. Writes [batch, rows, V] logits (all_logits) or [batch, V].
  // Errors name the failing stage in the terms of spec/kv-cache.md §3.7.
  // The caller holds shared borrows of the model's parameters.
  Result<void> Run(const RowStep& step, std::span<const LayerKvRows<double>> layers,
                   std::span<double> logits, ForwardTrace* trace);

  // The element type of the cache the new rows go to: with KvType::kF16 (kBf16)
  // every new K/V row is rounded to f16 (bf16) by simd::RoundToF16 (RoundToBf16) as
  // it is written, before attention reads it (the oracle of the fast 16-bit path);
  // with KvType::kQ8_0 by simd::RoundKvRowToQ8_0 (the oracle of the q8_0 path).
  void set_kv_type(KvType type) { kv_type_ = type; }

 private:
  explicit ReferenceRowForward(const DecoderModel& model) : model_(model) {}

  // The steps of Run, in the order of spec/model.md. Each works on the step's
  // batch·rows rows of the workspace, reports its stages to `trace` and fails with
  // the error of spec/kv-cache.md §3.7 for its stage.
  void Embed(const RowStep& step, TraceSink& trace);
  Result<void> RunBlock(const RowStep& step, size_t layer, const LayerKvRows<double>& kv,
                        TraceSink& trace);
  Result<void> NormRows(const RowStep& step, size_t layer, const BlockNorm& norm, TraceSink& trace);
  Result<void> ProjectQkv(const RowStep& step, size_t layer, TraceSink& trace);
  void RotateQueriesAndKeys(const RowStep& step, TraceSink& trace);
  void WriteNewRows(const RowStep& step, const LayerKvRows<double>& kv) const;
  Result<void> Attend(const RowStep& step, size_t layer, const LayerKvRows<double>& kv,
                      TraceSink& trace);
  Result<void> AttendHead(const double* query, const LayerKvRows<double>& kv, size_t lane,
                          size_t visible, double scale, double* out, size_t layer);
  Result<void> ProjectAttentionOutput(const RowStep& step, size_t layer, TraceSink& trace);
  Result<void> AddBranch(const RowStep& step, size_t layer, const ResidualAdd& residual,
                         TraceSink& trace);
  Result<void> FeedForward(const RowStep& step, size_t layer, TraceSink& trace);
  Result<void> NormFinalRows(const RowStep& step, TraceSink& trace);
  Result<void> ProjectVocabulary(const RowStep& step, std::span<double> logits, TraceSink& trace);

  // Row-major f64 values of parameter `index`: the parameter's own storage, or a
  // copy made at Create for parameters kept in f32 panels.
  const double* Weights(size_t index) const { return weights_[index]; }
  const double* BlockWeights(size_t layer, BlockSlot slot) const {
    return Weights(BlockParameterIndex(layer, slot));
  }
  simd::PackedMatrixView<double> BlockMatrix(size_t layer, BlockSlot slot) const;
  size_t FinalNormIndex() const { return 1 + kParametersPerBlock * model_.config().layers; }

  // Its own handle on the model (sharing the parameter nodes): a session's engine
  // must not depend on the lifetime of the caller's handle.
  DecoderModel model_;
  std::vector<const double*> weights_;
  std::vector<Buffer<double>> converted_;  // dense copies of panel-layout parameters
  KvType kv_type_ = KvType::kEngine;       // how WriteNewRows stores the new rows
  size_t batch_ = 0;
  size_t max_rows_ = 0;
  Buffer<double> hidden_;  // [batch·rows, D] residual stream
  Buffer<double> normed_;  // [batch·rows, D]
  Buffer<double> query_;   // [batch·rows, D]
  Buffer<double> key_;     // [batch·rows, kv_width]
  Buffer<double> value_;   // [batch·rows, kv_width]
  Buffer<double> mixed_;   // [batch·rows, D] merged head outputs
  Buffer<double> branch_;  // [batch·rows, D] attention or FFN branch output
  Buffer<double> gate_;    // [batch·rows, F]
  Buffer<double> up_;      // [batch·rows, F]
  Buffer<double> rope_;    // [batch·rows, hw] each row's RoPE cos, then sin
  Buffer<double> scores_;  // [max_positions] one query's scores, then weights
};

}  // namespace kvrt::detail
