#include "engine/reference/reference_ops.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "core/checked_math.h"
#include "core/rust_format.h"
#include "engine/step_errors.h"
#include "kvrt/simd/compressed_matrix.h"
#include "kvrt/simd/dot.h"
#include "kvrt/simd/matmul.h"
#include "kvrt/simd/matvec.h"
#include "kvrt/simd/prefix_attention.h"
#include "kvrt/simd/rms_norm.h"
#include "kvrt/simd/rope.h"
#include "kvrt/simd/scaled_accumulate.h"
#include "kvrt/simd/silu_mul.h"
#include "kvrt/simd/softmax.h"
#include "model/rope.h"

namespace kvrt::detail {

struct BlockNorm {
  BlockSlot gain;
  ErrorCode stage;
  const char* trace_name;
};

struct ResidualAdd {
  const char* activation;  // the stage of NonFiniteActivation
  ErrorCode stage;
  const char* trace_name;
};

namespace {

using simd::PackedMatrixView;

constexpr BlockNorm kAttentionNorm{BlockSlot::kAttentionNorm, ErrorCode::kAttentionNorm,
                                   "attention_norm.output"};
constexpr BlockNorm kFeedForwardNorm{BlockSlot::kFeedForwardNorm, ErrorCode::kFeedForwardNorm,
                                     "ffn_norm.output"};
constexpr ResidualAdd kAttentionResidual{"attention residual", ErrorCode::kAttentionResidual,
                                         "after_attention"};
constexpr ResidualAdd kFeedForwardResidual{"feed-forward residual", ErrorCode::kFeedForwardResidual,
                                           "output"};

PackedMatrixView<double> DenseView(const double* values, const Parameter& weight) {
  return PackedMatrixView<double>::Dense(values, weight.shape()[0], weight.shape()[1]);
}

size_t RowCount(const RowStep& step) { return step.batch * step.rows; }

// All rows with all_logits, else the last row of each sequence.
size_t LogitRowCount(const RowStep& step) { return step.all_logits ? RowCount(step) : step.batch; }

Error ZeroEnergyRow(size_t row) {
  return Error(ErrorCode::kZeroEnergyRow, {{"row", uint64_t{row}}},
               "RMSNorm row " + std::to_string(row) + " has zero energy");
}

// The softmax's refusal of a non-finite attention score.
Error NonFiniteScore(size_t index, double score) {
  if (score == INFINITY) {
    return Error(ErrorCode::kPositiveInfinityLogit, {}, "softmax input contains positive infinity");
  }
  return Error(ErrorCode::kNonFiniteLogit, {{"index", uint64_t{index}}, {"value", score}},
               "softmax input " + std::to_string(index) + " is " + RustDisplay(score));
}

// The candidate rows pass the cache's append validation (spec/kv-cache.md §1.4):
// sequence by sequence, row by row, keys before values, lane by lane.
Result<void> CheckNewRows(const RowStep& step, const LayerKvRows<double>& kv,
                          const ModelConfig& config, size_t layer) {
  const size_t kv_heads = config.kv_heads, hw = config.head_width();
  for (size_t b = 0; b < step.batch; ++b) {
    for (size_t r = 0; r < step.rows; ++r) {
      for (const bool is_key : {true, false}) {
        for (size_t h = 0; h < kv_heads; ++h) {
          const size_t lane = b * kv_heads + h;
          const double* row = is_key ? kv.new_key(lane, r) : kv.new_value(lane, r);
          if (auto bad = FirstNonFinite(row, hw)) {
            return Fail(NonFiniteCandidateRow(is_key, lane * hw + *bad, row[*bad], layer));
          }
        }
      }
    }
  }
  return {};
}

// SiLU alone, for the trace: (g·σ(g))·1.0 has the bits of g·σ(g).
std::vector<double> SiluAlone(const double* gate, size_t count) {
  std::vector<double> ones(count, 1.0), silu(count);
  simd::SiluMulScalar(gate, ones.data(), silu.data(), count);
  return silu;
}

}  // namespace

Result<ReferenceRowForward> ReferenceRowForward::Create(const DecoderModel& model, size_t batch,
                                                        size_t max_rows) {
  const ModelConfig& config = model.config();
  const std::optional<size_t> rows = CheckedMul(batch, max_rows);
  ReferenceRowForward forward(model);
  forward.batch_ = batch;
  forward.max_rows_ = max_rows;
  bool ok = rows.has_value();
  auto allocate = [&](Buffer<double>& buffer, size_t width) {
    if (!ok) return;
    const std::optional<size_t> count = CheckedMul(*rows, width);
    std::optional<Buffer<double>> allocated =
        count ? Buffer<double>::Allocate(*count) : std::nullopt;
    if (allocated) {
      buffer = std::move(*allocated);
    } else {
      ok = false;
    }
  };
  allocate(forward.hidden_, config.model_width);
  allocate(forward.normed_, config.model_width);
  allocate(forward.query_, config.model_width);
  allocate(forward.key_, config.kv_width());
  allocate(forward.value_, config.kv_width());
  allocate(forward.mixed_, config.model_width);
  allocate(forward.branch_, config.model_width);
  allocate(forward.gate_, config.feed_forward_width);
  allocate(forward.up_, config.feed_forward_width);
  allocate(forward.rope_, 2 * (config.head_width() / 2));
  for (const ParameterPtr& parameter : model.parameters()) {
    if (!ok) break;
    if (parameter->is_dense()) {
      forward.weights_.push_back(parameter->values().data());
      continue;
    }
    std::optional<Buffer<double>> copy = Buffer<double>::Allocate(parameter->element_count());
    if (!copy) {
      ok = false;
      break;
    }
    parameter->ReadValues(copy->span());
    forward.weights_.push_back(copy->data());
    forward.converted_.push_back(std::move(*copy));
  }
  if (ok) {
    std::optional<Buffer<double>> scores = Buffer<double>::Allocate(config.max_positions);
    if (scores) {
      forward.scores_ = std::move(*scores);
    } else {
      ok = false;
    }
  }
  if (!ok) {
    return Fail(ErrorCode::kAllocationFailed, {{"elements", uint64_t{rows.value_or(0)}}},
                "could not allocate the reference forward workspace");
  }
  return forward;
}

PackedMatrixView<double> ReferenceRowForward::BlockMatrix(size_t layer, BlockSlot slot) const {
  return DenseView(BlockWeights(layer, slot), model_.block(layer, slot));
}

Result<void> ReferenceRowForward::Run(const RowStep& step,
                                      std::span<const LayerKvRows<double>> layers,
                                      std::span<double> logits, ForwardTrace* trace) {
  TraceSink sink(trace);
  Embed(step, sink);
  for (size_t layer = 0; layer < model_.config().layers; ++layer) {
    sink.EnterBlock(layer);
    if (Result<void> block = RunBlock(step, layer, layers[layer], sink); !block) return block;
  }
  sink.LeaveBlocks();
  if (Result<void> normed = NormFinalRows(step, sink); !normed) return normed;
  return ProjectVocabulary(step, logits, sink);
}

// Embedding: row copies, no scaling.
void ReferenceRowForward::Embed(const RowStep& step, TraceSink& trace) {
  const size_t d = model_.config().model_width;
  const double* table = Weights(0);
  for (size_t i = 0; i < RowCount(step); ++i) {
    std::copy_n(table + size_t{step.tokens[i]} * d, d, hidden_.data() + i * d);
  }
  trace.Rows("embedding", step.batch, step.rows, d, hidden_.data());
}

// A pre-norm block: attention over the committed and new rows, then the SwiGLU
// feed-forward, each added to the residual stream. Layer `layer`'s new K/V rows
// are written to `kv` before attention reads them.
Result<void> ReferenceRowForward::RunBlock(const RowStep& step, size_t layer,
                                           const LayerKvRows<double>& kv, TraceSink& trace) {
  if (Result<void> normed = NormRows(step, layer, kAttentionNorm, trace); !normed) return normed;
  if (Result<void> projected = ProjectQkv(step, layer, trace); !projected) return projected;
  RotateQueriesAndKeys(step, trace);
  WriteNewRows(step, kv);
  if (Result<void> attended = Attend(step, layer, kv, trace); !attended) return attended;
  if (Result<void> output = ProjectAttentionOutput(step, layer, trace); !output) return output;
  if (Result<void> rows = CheckNewRows(step, kv, model_.config(), layer); !rows) return rows;
  if (Result<void> added = AddBranch(step, layer, kAttentionResidual, trace); !added) return added;
  if (Result<void> normed = NormRows(step, layer, kFeedForwardNorm, trace); !normed) return normed;
  if (Result<void> ffn = FeedForward(step, layer, trace); !ffn) return ffn;
  return AddBranch(step, layer, kFeedForwardResidual, trace);
}

// RMSNorm of every residual row into normed_.
Result<void> ReferenceRowForward::NormRows(const RowStep& step, size_t layer, const BlockNorm& norm,
                                           TraceSink& trace) {
  const ModelConfig& config = model_.config();
  const size_t d = config.model_width;
  const double* gain = BlockWeights(layer, norm.gain);
  for (size_t i = 0; i < RowCount(step); ++i) {
    const double inverse = simd::RmsNormScalar(hidden_.data() + i * d, gain, config.rms_epsilon,
                                               normed_.data() + i * d, d);
    if (!std::isfinite(inverse)) return Fail(InLayer(ZeroEnergyRow(i), norm.stage, layer));
  }
  trace.Rows(norm.trace_name, step.batch, step.rows, d, normed_.data());
  return {};
}

Result<void> ReferenceRowForward::ProjectQkv(const RowStep& step, size_t layer, TraceSink& trace) {
  const ModelConfig& config = model_.config();
  const size_t d = config.model_width, kv_width = config.kv_width(), n = RowCount(step);
  simd::MatMulScalar(normed_.data(), d, n, BlockMatrix(layer, BlockSlot::kQuery), query_.data(), d);
  simd::MatMulScalar(normed_.data(), d, n, BlockMatrix(layer, BlockSlot::kKey), key_.data(),
                     kv_width);
  simd::MatMulScalar(normed_.data(), d, n, BlockMatrix(layer, BlockSlot::kValue), value_.data(),
                     kv_width);
  if (config.attention_bias) {
    // qwen2: q = x·Wq + bq (and k, v), one f64 addition per element, before RoPE.
    for (const auto& [buffer, slot, width] :
         {std::tuple{&query_, BlockSlot::kQuery, d}, {&key_, BlockSlot::kKey, kv_width},
          {&value_, BlockSlot::kValue, kv_width}}) {
      const double* bias = Weights(AttentionBiasIndex(config, layer, slot));
      for (size_t i = 0; i < n; ++i) {
        double* row = buffer->data() + i * width;
        for (size_t j = 0; j < width; ++j) row[j] = row[j] + bias[j];
      }
    }
  }
  for (const auto& [buffer, width] :
       {std::pair{&query_, d}, {&key_, kv_width}, {&value_, kv_width}}) {
    if (auto bad = FirstNonFinite(buffer->data(), n * width)) {
      return Fail(InLayer(
          NonFinite("qkv projection", *bad, (*buffer)[*bad]).Wrap(ErrorCode::kQkvProjection),
          ErrorCode::kIncrementalAttention, layer));
    }
  }
  trace.Heads("attention.projected_query_heads", step.batch, step.rows, config.heads,
              config.head_width(), query_.data());
  return {};
}

// RoPE on queries and keys at their absolute positions; values stay unrotated.
void ReferenceRowForward::RotateQueriesAndKeys(const RowStep& step, TraceSink& trace) {
  const ModelConfig& config = model_.config();
  const size_t d = config.model_width, kv_width = config.kv_width(), hw = config.head_width();
  const size_t pairs = hw / 2;
  const RopeTable& rope = model_.rope();
  for (size_t i = 0; i < RowCount(step); ++i) {
    const size_t position = step.start + i % step.rows;
    double* cos = rope_.data() + i * 2 * pairs;
    double* sin = cos + pairs;
    rope.Fill(position, cos, sin);
    simd::RopeRotateScalar(query_.data() + i * d, cos, sin, pairs, config.heads);
    simd::RopeRotateScalar(key_.data() + i * kv_width, cos, sin, pairs, config.kv_heads);
  }
  trace.Heads("attention.rotated_query_heads", step.batch, step.rows, config.heads, hw,
              query_.data());
  trace.Heads("attention.rotated_key_heads", step.batch, step.rows, config.kv_heads, hw,
              key_.data());
}

// The new rows become readable to this step's attention (and nobody else's), as
// the cache stores them.
void ReferenceRowForward::WriteNewRows(const RowStep& step, const LayerKvRows<double>& kv) const {
  const ModelConfig& config = model_.config();
  const size_t kv_heads = config.kv_heads, kv_width = config.kv_width(), hw = config.head_width();
  const auto store = [&](const double* from, double* to) {
    if (kv_type_ == KvType::kF16) {
      for (size_t j = 0; j < hw; ++j) to[j] = simd::RoundToF16(from[j]);
    } else if (kv_type_ == KvType::kBf16) {
      for (size_t j = 0; j < hw; ++j) to[j] = simd::RoundToBf16(from[j]);
    } else if (kv_type_ == KvType::kQ8_0) {
      simd::RoundKvRowToQ8_0(from, hw, to);
    } else {
      std::copy_n(from, hw, to);
    }
  };
  for (size_t b = 0; b < step.batch; ++b) {
    for (size_t r = 0; r < step.rows; ++r) {
      const size_t i = b * step.rows + r;
      for (size_t h = 0; h < kv_heads; ++h) {
        store(key_.data() + i * kv_width + h * hw, kv.new_key(b * kv_heads + h, r));
        store(value_.data() + i * kv_width + h * hw, kv.new_value(b * kv_heads + h, r));
      }
    }
  }
}

// Causal attention of every query head of every new row into mixed_: row r sees
// keys 0..start + r; query head h reads kv head h / group.
Result<void> ReferenceRowForward::Attend(const RowStep& step, size_t layer,
                                         const LayerKvRows<double>& kv, TraceSink& trace) {
  const ModelConfig& config = model_.config();
  const size_t d = config.model_width, heads = config.heads, kv_heads = config.kv_heads;
  const size_t hw = config.head_width(), group = config.query_heads_per_kv_head();
  const size_t batch = step.batch, rows = step.rows, time = step.start + rows;
  // 1/sqrt(hw) computed once and rounded; scores are multiplied by it, never divided.
  const double scale = 1.0 / std::sqrt(static_cast<double>(hw));
  trace.Open("attention.weights", {batch, heads, rows, time}, batch * heads * rows * time);
  for (size_t b = 0; b < batch; ++b) {
    for (size_t r = 0; r < rows; ++r) {
      const size_t i = b * rows + r;
      const size_t visible = step.start + r + 1;
      for (size_t h = 0; h < heads; ++h) {
        const size_t offset = i * d + h * hw;
        const size_t lane = b * kv_heads + h / group;
        if (Result<void> attended = AttendHead(query_.data() + offset, kv, lane, visible, scale,
                                               mixed_.data() + offset, layer);
            !attended) {
          return attended;
        }
        trace.Fill(((b * heads + h) * rows + r) * time, scores_.data(), visible);
      }
    }
  }
  trace.Close();
  trace.Rows("attention.merged", batch, rows, d, mixed_.data());
  return {};
}

// One query head over the first `visible` rows of `lane`: scaled dot-product
// scores, their softmax (the weights stay in scores_) and the weighted sum of the
// value rows into `out`.
Result<void> ReferenceRowForward::AttendHead(const double* query, const LayerKvRows<double>& kv,
                                             size_t lane, size_t visible, double scale, double* out,
                                             size_t layer) {
  const size_t hw = model_.config().head_width();
  double* scores = scores_.data();
  for (size_t p = 0; p < visible; ++p) {
    scores[p] = simd::DotScalar(query, kv.key(lane, p), hw) * scale;
  }
  if (auto bad = FirstNonFinite(scores, visible)) {
    return Fail(InLayer(NonFiniteScore(*bad, scores[*bad]).Wrap(ErrorCode::kProbability),
                        ErrorCode::kIncrementalAttention, layer));
  }
  simd::SoftmaxScalar(scores, scores, visible);
  std::fill_n(out, hw, 0.0);
  for (size_t p = 0; p < visible; ++p) {
    simd::ScaledAccumulateScalar(scores[p], kv.value(lane, p), out, hw);
  }
  return {};
}

Result<void> ReferenceRowForward::ProjectAttentionOutput(const RowStep& step, size_t layer,
                                                         TraceSink& trace) {
  const size_t d = model_.config().model_width, n = RowCount(step);
  simd::MatMulScalar(mixed_.data(), d, n, BlockMatrix(layer, BlockSlot::kOutput), branch_.data(),
                     d);
  if (auto bad = FirstNonFinite(branch_.data(), n * d)) {
    return Fail(InLayer(NonFinite("attention output projection", *bad, branch_[*bad])
                            .Wrap(ErrorCode::kOutputProjection),
                        ErrorCode::kIncrementalAttention, layer));
  }
  trace.Rows("attention.output", step.batch, step.rows, d, branch_.data());
  return {};
}

// The residual update hidden += branch.
Result<void> ReferenceRowForward::AddBranch(const RowStep& step, size_t layer,
                                            const ResidualAdd& residual, TraceSink& trace) {
  const size_t d = model_.config().model_width, n = RowCount(step);
  for (size_t i = 0; i < n * d; ++i) hidden_[i] = hidden_[i] + branch_[i];
  if (auto bad = FirstNonFinite(hidden_.data(), n * d)) {
    return Fail(
        InLayer(NonFinite(residual.activation, *bad, hidden_[*bad]), residual.stage, layer));
  }
  trace.Rows(residual.trace_name, step.batch, step.rows, d, hidden_.data());
  return {};
}

// SwiGLU on the normed rows into branch_: down(silu(gate·x) ⊙ up·x).
Result<void> ReferenceRowForward::FeedForward(const RowStep& step, size_t layer, TraceSink& trace) {
  const ModelConfig& config = model_.config();
  const size_t d = config.model_width, f = config.feed_forward_width, n = RowCount(step);
  simd::MatMulScalar(normed_.data(), d, n, BlockMatrix(layer, BlockSlot::kGate), gate_.data(), f);
  simd::MatMulScalar(normed_.data(), d, n, BlockMatrix(layer, BlockSlot::kUp), up_.data(), f);
  trace.Rows("ffn.gate_linear", step.batch, step.rows, f, gate_.data());
  trace.Record("ffn.gate_silu", {step.batch, step.rows, f},
               [&] { return SiluAlone(gate_.data(), n * f); });
  simd::SiluMulScalar(gate_.data(), up_.data(), gate_.data(), n * f);
  simd::MatMulScalar(gate_.data(), f, n, BlockMatrix(layer, BlockSlot::kDown), branch_.data(), d);
  if (auto bad = FirstNonFinite(branch_.data(), n * d)) {
    return Fail(
        InLayer(NonFinite("feed-forward", *bad, branch_[*bad]), ErrorCode::kFeedForward, layer));
  }
  trace.Rows("ffn.output", step.batch, step.rows, d, branch_.data());
  return {};
}

// The final RMSNorm of the rows whose logits are wanted, packed into normed_.
Result<void> ReferenceRowForward::NormFinalRows(const RowStep& step, TraceSink& trace) {
  const ModelConfig& config = model_.config();
  const size_t d = config.model_width, rows = step.rows, logit_rows = LogitRowCount(step);
  const double* gain = Weights(FinalNormIndex());
  trace.Open("final_norm.inverse_rms", {step.batch, rows, 1}, logit_rows);
  for (size_t j = 0; j < logit_rows; ++j) {
    const size_t i = step.all_logits ? j : j * rows + rows - 1;
    const double inverse = simd::RmsNormScalar(hidden_.data() + i * d, gain, config.rms_epsilon,
                                               normed_.data() + j * d, d);
    if (!std::isfinite(inverse)) return Fail(ZeroEnergyRow(i).Wrap(ErrorCode::kFinalNorm));
    trace.Fill(j, &inverse, 1);
  }
  trace.Close();
  trace.Record("final_norm.output", {step.batch, rows, d}, [&] {
    return std::vector<double>(normed_.data(), normed_.data() + logit_rows * d);
  });
  return {};
}

// Logits of the normed rows: a tied head reads the embedding table row by row
// (logits[v] = Σ_j z[j]·E[v][j]), an untied one is the output matrix.
Result<void> ReferenceRowForward::ProjectVocabulary(const RowStep& step, std::span<double> logits,
                                                    TraceSink& trace) {
  const ModelConfig& config = model_.config();
  const size_t d = config.model_width, v = config.vocabulary_size;
  const size_t logit_rows = LogitRowCount(step);
  const bool tied = model_.output_head_is_embedding();
  const double* head_weights = tied ? Weights(0) : Weights(FinalNormIndex() + 1);
  for (size_t j = 0; j < logit_rows; ++j) {
    const double* z = normed_.data() + j * d;
    double* out = logits.data() + j * v;
    if (tied) {
      for (size_t token = 0; token < v; ++token) {
        out[token] = simd::DotScalar(z, head_weights + token * d, d);
      }
    } else {
      simd::MatVecScalar(DenseView(head_weights, model_.output_head()), z, out);
    }
  }
  if (auto bad = FirstNonFinite(logits.data(), logit_rows * v)) {
    return Fail(NonFiniteLogits(*bad, logits[*bad]));
  }
  trace.Record("logits", {step.batch, logit_rows / step.batch, v},
               [&] { return std::vector<double>(logits.data(), logits.data() + logit_rows * v); });
  return {};
}

}  // namespace kvrt::detail
