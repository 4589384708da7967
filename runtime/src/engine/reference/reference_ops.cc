#include "engine/reference/reference_ops.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>

#include "core/checked_math.h"
#include "model/rope.h"
#include "kvrt/simd/dot.h"
#include "kvrt/simd/matmul.h"
#include "kvrt/simd/matvec.h"
#include "kvrt/simd/rms_norm.h"
#include "kvrt/simd/rope.h"
#include "kvrt/simd/scaled_accumulate.h"
#include "kvrt/simd/silu_mul.h"
#include "kvrt/simd/softmax.h"
#include "core/rust_format.h"
#include "engine/step_errors.h"

namespace kvrt::detail {
namespace {

using simd::PackedMatrixView;

PackedMatrixView<double> DenseView(const double* values, const Parameter& weight) {
  return PackedMatrixView<double>::Dense(values, weight.shape()[0], weight.shape()[1]);
}

// Records a stage in the trace. `values` is only evaluated when tracing, so an
// untraced step (every session step) allocates nothing here.
template <class Values>
void Record(ForwardTrace* trace, const std::string& prefix, const char* name,
            std::initializer_list<size_t> shape, Values&& values) {
  if (trace != nullptr) {
    trace->stages.push_back({prefix + name, std::vector<size_t>(shape), values()});
  }
}

// Gathers rows of width heads·hw into the [B, heads, T, hw] head layout.
std::vector<double> HeadLayout(const double* rows, size_t batch, size_t time, size_t heads,
                               size_t hw) {
  std::vector<double> out(batch * heads * time * hw);
  for (size_t b = 0; b < batch; ++b) {
    for (size_t t = 0; t < time; ++t) {
      for (size_t h = 0; h < heads; ++h) {
        const double* source = rows + ((b * time + t) * heads + h) * hw;
        std::copy(source, source + hw, out.data() + ((b * heads + h) * time + t) * hw);
      }
    }
  }
  return out;
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

Result<void> ReferenceRowForward::Run(const RowStep& step,
                                      std::span<const LayerKvRows<double>> layers,
                                      std::span<double> logits, ForwardTrace* trace) {
  const DecoderModel& model = model_;
  const ModelConfig& config = model.config();
  const size_t d = config.model_width, f = config.feed_forward_width, v = config.vocabulary_size;
  const size_t heads = config.heads, kv_heads = config.kv_heads, hw = config.head_width();
  const size_t group = config.query_heads_per_kv_head(), kv_width = config.kv_width();
  const size_t batch = step.batch, rows = step.rows, n = batch * rows;
  const double epsilon = config.rms_epsilon;
  // 1/sqrt(hw) computed once and rounded; scores are multiplied by it, never divided.
  const double scale = 1.0 / std::sqrt(static_cast<double>(hw));
  const bool tracing = trace != nullptr;
  auto row_vector = [&](const Buffer<double>& buffer, size_t width) {
    return std::vector<double>(buffer.data(), buffer.data() + n * width);
  };

  // Embedding: row copies, no scaling.
  auto block_weights = [&](size_t layer, BlockSlot slot) {
    return Weights(BlockParameterIndex(layer, slot));
  };
  auto BlockView = [&](size_t layer, BlockSlot slot) {
    return DenseView(block_weights(layer, slot), model.block(layer, slot));
  };
  const double* table = Weights(0);
  for (size_t i = 0; i < n; ++i) {
    std::copy_n(table + size_t{step.tokens[i]} * d, d, hidden_.data() + i * d);
  }
  Record(trace, "", "embedding", {batch, rows, d}, [&] { return row_vector(hidden_, d); });

  for (size_t layer = 0; layer < config.layers; ++layer) {
    const std::string prefix = tracing ? "blocks." + std::to_string(layer) + "." : std::string();
    const LayerKvRows<double>& kv = layers[layer];

    const double* attention_gain = block_weights(layer, BlockSlot::kAttentionNorm);
    for (size_t i = 0; i < n; ++i) {
      const double inverse = simd::RmsNormScalar(hidden_.data() + i * d, attention_gain, epsilon,
                                                 normed_.data() + i * d, d);
      if (!std::isfinite(inverse)) {
        return Fail(InLayer(Error(ErrorCode::kZeroEnergyRow, {{"row", uint64_t{i}}},
                                  "RMSNorm row " + std::to_string(i) + " has zero energy"),
                            ErrorCode::kAttentionNorm, layer));
      }
    }
    Record(trace, prefix, "attention_norm.output", {batch, rows, d},
           [&] { return row_vector(normed_, d); });

    simd::MatMulScalar(normed_.data(), d, n, BlockView(layer, BlockSlot::kQuery), query_.data(), d);
    simd::MatMulScalar(normed_.data(), d, n, BlockView(layer, BlockSlot::kKey), key_.data(),
                       kv_width);
    simd::MatMulScalar(normed_.data(), d, n, BlockView(layer, BlockSlot::kValue), value_.data(),
                       kv_width);
    for (const auto& [buffer, width] :
         {std::pair{&query_, d}, {&key_, kv_width}, {&value_, kv_width}}) {
      if (auto bad = FirstNonFinite(buffer->data(), n * width)) {
        return Fail(InLayer(
            NonFinite("qkv projection", *bad, (*buffer)[*bad]).Wrap(ErrorCode::kQkvProjection),
            ErrorCode::kIncrementalAttention, layer));
      }
    }
    if (tracing) {
      Record(trace, prefix, "attention.projected_query_heads", {batch, heads, rows, hw},
             [&] { return HeadLayout(query_.data(), batch, rows, heads, hw); });
    }
    // RoPE on queries and keys at their absolute positions; values stay unrotated.
    for (size_t i = 0; i < n; ++i) {
      const size_t position = step.start + i % rows;
      const RopeTable& rope = model.rope();
      const size_t pairs = hw / 2;
      double* cos = rope_.data() + i * 2 * pairs;
      double* sin = cos + pairs;
      rope.Fill(position, cos, sin);
      simd::RopeRotateScalar(query_.data() + i * d, cos, sin, pairs, heads);
      simd::RopeRotateScalar(key_.data() + i * kv_width, cos, sin, pairs, kv_heads);
    }
    if (tracing) {
      Record(trace, prefix, "attention.rotated_query_heads", {batch, heads, rows, hw},
             [&] { return HeadLayout(query_.data(), batch, rows, heads, hw); });
      Record(trace, prefix, "attention.rotated_key_heads", {batch, kv_heads, rows, hw},
             [&] { return HeadLayout(key_.data(), batch, rows, kv_heads, hw); });
    }
    // The new rows become readable to this step's attention (and nobody else's).
    for (size_t b = 0; b < batch; ++b) {
      for (size_t r = 0; r < rows; ++r) {
        const size_t i = b * rows + r;
        for (size_t h = 0; h < kv_heads; ++h) {
          std::copy_n(key_.data() + i * kv_width + h * hw, hw, kv.new_key(b * kv_heads + h, r));
          std::copy_n(value_.data() + i * kv_width + h * hw, hw, kv.new_value(b * kv_heads + h, r));
        }
      }
    }

    std::vector<double> weights_trace;
    const size_t time = step.start + rows;
    if (tracing) weights_trace.assign(batch * heads * rows * time, 0.0);
    for (size_t b = 0; b < batch; ++b) {
      for (size_t r = 0; r < rows; ++r) {
        const size_t i = b * rows + r;
        const size_t visible = step.start + r + 1;  // causal: keys 0..position
        for (size_t h = 0; h < heads; ++h) {
          const double* q = query_.data() + i * d + h * hw;
          const size_t lane = b * kv_heads + h / group;
          double* scores = scores_.data();
          for (size_t p = 0; p < visible; ++p) {
            scores[p] = simd::DotScalar(q, kv.key(lane, p), hw) * scale;
          }
          if (auto bad = FirstNonFinite(scores, visible)) {
            const double score = scores[*bad];
            Error inner =
                score == INFINITY
                    ? Error(ErrorCode::kPositiveInfinityLogit, {},
                            "softmax input contains positive infinity")
                    : Error(ErrorCode::kNonFiniteLogit,
                            {{"index", uint64_t{*bad}}, {"value", score}},
                            "softmax input " + std::to_string(*bad) + " is " + RustDisplay(score));
            return Fail(InLayer(std::move(inner).Wrap(ErrorCode::kProbability),
                                ErrorCode::kIncrementalAttention, layer));
          }
          simd::SoftmaxScalar(scores, scores, visible);
          double* out = mixed_.data() + i * d + h * hw;
          std::fill_n(out, hw, 0.0);
          for (size_t p = 0; p < visible; ++p) {
            simd::ScaledAccumulateScalar(scores[p], kv.value(lane, p), out, hw);
          }
          if (tracing) {
            std::copy_n(scores, visible,
                        weights_trace.data() + ((b * heads + h) * rows + r) * time);
          }
        }
      }
    }
    Record(trace, prefix, "attention.weights", {batch, heads, rows, time},
           [&] { return std::move(weights_trace); });
    Record(trace, prefix, "attention.merged", {batch, rows, d},
           [&] { return row_vector(mixed_, d); });

    simd::MatMulScalar(mixed_.data(), d, n, BlockView(layer, BlockSlot::kOutput), branch_.data(),
                       d);
    if (auto bad = FirstNonFinite(branch_.data(), n * d)) {
      return Fail(InLayer(NonFinite("attention output projection", *bad, branch_[*bad])
                              .Wrap(ErrorCode::kOutputProjection),
                          ErrorCode::kIncrementalAttention, layer));
    }
    Record(trace, prefix, "attention.output", {batch, rows, d},
           [&] { return row_vector(branch_, d); });
    // The candidate rows pass the cache's append validation (spec/kv-cache.md §1.4).
    for (size_t b = 0; b < batch; ++b) {
      for (size_t r = 0; r < rows; ++r) {
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

    for (size_t i = 0; i < n * d; ++i) hidden_[i] = hidden_[i] + branch_[i];
    if (auto bad = FirstNonFinite(hidden_.data(), n * d)) {
      return Fail(InLayer(NonFinite("attention residual", *bad, hidden_[*bad]),
                          ErrorCode::kAttentionResidual, layer));
    }
    Record(trace, prefix, "after_attention", {batch, rows, d},
           [&] { return row_vector(hidden_, d); });

    const double* ffn_gain = block_weights(layer, BlockSlot::kFeedForwardNorm);
    for (size_t i = 0; i < n; ++i) {
      const double inverse =
          simd::RmsNormScalar(hidden_.data() + i * d, ffn_gain, epsilon, normed_.data() + i * d, d);
      if (!std::isfinite(inverse)) {
        return Fail(InLayer(Error(ErrorCode::kZeroEnergyRow, {{"row", uint64_t{i}}},
                                  "RMSNorm row " + std::to_string(i) + " has zero energy"),
                            ErrorCode::kFeedForwardNorm, layer));
      }
    }
    Record(trace, prefix, "ffn_norm.output", {batch, rows, d},
           [&] { return row_vector(normed_, d); });
    simd::MatMulScalar(normed_.data(), d, n, BlockView(layer, BlockSlot::kGate), gate_.data(), f);
    simd::MatMulScalar(normed_.data(), d, n, BlockView(layer, BlockSlot::kUp), up_.data(), f);
    if (tracing) {
      Record(trace, prefix, "ffn.gate_linear", {batch, rows, f},
             [&] { return row_vector(gate_, f); });
      // SiLU alone: (g·σ(g))·1.0 has the bits of g·σ(g).
      std::vector<double> ones(n * f, 1.0), silu(n * f);
      simd::SiluMulScalar(gate_.data(), ones.data(), silu.data(), n * f);
      Record(trace, prefix, "ffn.gate_silu", {batch, rows, f}, [&] { return std::move(silu); });
    }
    simd::SiluMulScalar(gate_.data(), up_.data(), gate_.data(), n * f);
    simd::MatMulScalar(gate_.data(), f, n, BlockView(layer, BlockSlot::kDown), branch_.data(), d);
    if (auto bad = FirstNonFinite(branch_.data(), n * d)) {
      return Fail(
          InLayer(NonFinite("feed-forward", *bad, branch_[*bad]), ErrorCode::kFeedForward, layer));
    }
    Record(trace, prefix, "ffn.output", {batch, rows, d}, [&] { return row_vector(branch_, d); });
    for (size_t i = 0; i < n * d; ++i) hidden_[i] = hidden_[i] + branch_[i];
    if (auto bad = FirstNonFinite(hidden_.data(), n * d)) {
      return Fail(InLayer(NonFinite("feed-forward residual", *bad, hidden_[*bad]),
                          ErrorCode::kFeedForwardResidual, layer));
    }
    Record(trace, prefix, "output", {batch, rows, d}, [&] { return row_vector(hidden_, d); });
  }

  // Final norm and vocabulary projection for the rows whose logits are wanted.
  const size_t final_norm_index = 1 + kParametersPerBlock * config.layers;
  const double* final_gain = Weights(final_norm_index);
  const size_t logit_rows = step.all_logits ? n : batch;
  std::vector<double> inverse_trace;
  for (size_t j = 0; j < logit_rows; ++j) {
    const size_t i = step.all_logits ? j : j * rows + rows - 1;
    const double inverse =
        simd::RmsNormScalar(hidden_.data() + i * d, final_gain, epsilon, normed_.data() + j * d, d);
    if (!std::isfinite(inverse)) {
      return Fail(Error(ErrorCode::kZeroEnergyRow, {{"row", uint64_t{i}}},
                        "RMSNorm row " + std::to_string(i) + " has zero energy")
                      .Wrap(ErrorCode::kFinalNorm));
    }
    if (tracing) inverse_trace.push_back(inverse);
  }
  if (tracing) {
    Record(trace, "", "final_norm.inverse_rms", {batch, rows, 1},
           [&] { return std::move(inverse_trace); });
    Record(trace, "", "final_norm.output", {batch, rows, d},
           [&] { return std::vector<double>(normed_.data(), normed_.data() + logit_rows * d); });
  }
  const Parameter& head = model.output_head();
  const double* head_weights =
      model.output_head_is_embedding() ? Weights(0) : Weights(final_norm_index + 1);
  for (size_t j = 0; j < logit_rows; ++j) {
    const double* z = normed_.data() + j * d;
    double* out = logits.data() + j * v;
    if (model.output_head_is_embedding()) {
      // Tied head: logits[v] = Σ_j z[j]·E[v][j], E read row by row.
      for (size_t token = 0; token < v; ++token) {
        out[token] = simd::DotScalar(z, head_weights + token * d, d);
      }
    } else {
      simd::MatVecScalar(DenseView(head_weights, head), z, out);
    }
  }
  if (auto bad = FirstNonFinite(logits.data(), logit_rows * v)) {
    return Fail(
        NonFinite("vocabulary projection", *bad, logits[*bad])
            .Wrap(ErrorCode::kAutodiff, {{"stage", Identifier{"TiedVocabularyProjection"}}}));
  }
  Record(trace, "", "logits", {batch, logit_rows / batch, v},
         [&] { return std::vector<double>(logits.data(), logits.data() + logit_rows * v); });
  return {};
}

}  // namespace kvrt::detail
