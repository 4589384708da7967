// The fast engine: Highway kernels and a thread pool, in f32 or f64.
//
// A step forwards all of its rows through each block at once (matrix–matrix
// products for a prefill, matrix–vector products for a decode), attention runs in
// parallel over (sequence, head) lanes and query tiles, and only the last row of
// every sequence is projected to the vocabulary. New K/V rows of a one-row step
// (decode) wait in staging buffers until the commit; the rows of a multi-row step
// (prefill) are written into the cache slots past the logical length, where no
// committed reader looks, and become visible only when the session commits.
// Every buffer is allocated at bind; a step allocates nothing. The workspace is
// sized by the most rows one step forwards (EngineOptions::max_rows_per_step),
// not by the cache's capacity: the session prefills a longer prompt in chunks.
#include "engine/fast/fast_engine.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <type_traits>
#include <vector>

#include "engine/fast/block_attention.h"
#include "model/packed_weights.h"
#include "kvrt/simd/attention_scores.h"
#include "kvrt/simd/compressed_matrix.h"
#include "kvrt/simd/mix_values.h"
#include "kvrt/simd/rms_norm.h"
#include "kvrt/simd/rope.h"
#include "kvrt/simd/scaled_accumulate.h"
#include "kvrt/simd/silu_mul.h"
#include "kvrt/simd/softmax.h"
#include "kvrt/threading/thread_pool.h"
#include "engine/fast/matrix_product.h"
#include "model/model_internals.h"
#include "model/rope.h"
#include "engine/step_errors.h"

namespace kvrt::detail {
namespace {

template <class T>
class FastEngine final : public Engine {
 public:
  FastEngine(const DecoderModel& model, const DecoderKvCache& cache,
             std::shared_ptr<const EngineWeights<T>> weights, threading::ThreadPool* pool,
             size_t max_rows_per_step)
      : config_(model.config()),
        tied_(model.output_head_is_embedding()),
        batch_(cache.batch_size()),
        capacity_(cache.capacity()),
        max_rows_(std::max<size_t>(1, std::min(max_rows_per_step, cache.capacity()))),
        rope_(&model.rope()),
        weights_(std::move(weights)),
        pool_(pool) {
    for (const BlockWeights<T>& block : weights_->blocks) {
      qkv_.emplace_back(
          std::vector<const PackedWeight<T>*>{&block.query, &block.key, &block.value});
      output_.emplace_back(std::vector<const PackedWeight<T>*>{&block.output});
      gate_up_.emplace_back(std::vector<const PackedWeight<T>*>{&block.gate, &block.up});
      down_.emplace_back(std::vector<const PackedWeight<T>*>{&block.down});
    }
    head_ = MatrixProduct<T>({&weights_->vocabulary_head(tied_)});
  }

  // Allocates the workspace for steps of up to max_rows_ rows per sequence.
  Result<void> AllocateWorkspace() {
    const size_t rows = batch_ * max_rows_;
    const size_t d = config_.model_width, f = config_.feed_forward_width;
    const size_t qkv_width = d + 2 * config_.kv_width();
    const size_t lanes = batch_ * config_.kv_heads, hw = config_.head_width();
    const size_t workers = pool_ == nullptr ? 1 : pool_->threads();
    bool ok = true;
    auto allocate = [&](Buffer<T>& buffer, size_t count) {
      std::optional<Buffer<T>> allocated = ok ? Buffer<T>::Allocate(count) : std::nullopt;
      if (allocated) {
        buffer = std::move(*allocated);
      } else {
        ok = false;
      }
    };
    allocate(hidden_, rows * d);
    allocate(normed_, rows * d);            // also the attention output and the FFN branch
    allocate(qkv_rows_, rows * qkv_width);  // also the attention branch
    allocate(gate_up_rows_, rows * 2 * f);
    allocate(rope_rows_, rows * 2 * (hw / 2));
    allocate(scores_, workers * capacity_);
    allocate(logits_, batch_ * config_.vocabulary_size);
    allocate(staged_keys_, config_.layers * lanes * hw);
    allocate(staged_values_, config_.layers * lanes * hw);
    if (ok)
      ok = static_cast<bool>(
          block_attention_.Allocate(batch_ * config_.kv_heads, capacity_, hw, workers));
    if (!ok) {
      return Fail(ErrorCode::kAllocationFailed,
                  {{"elements", uint64_t{rows * (2 * d + qkv_width + 2 * f)}}},
                  "could not allocate the fast engine's workspace");
    }
    return {};
  }

  size_t max_rows_per_step() const override { return max_rows_; }

  Result<void> Prepare(const EngineStep& step, std::span<LayerKvCache> layers,
                       std::span<double> logits) override {
    const size_t d = config_.model_width, rows = step.rows, n = step.batch * rows;
    Embed(step);
    for (size_t layer = 0; layer < config_.layers; ++layer) {
      const BlockWeights<T>& block = weights_->blocks[layer];
      ForRows(n, [&](size_t i) {
        Norm(hidden_.data() + i * d, block.attention_norm.data(), normed_.data() + i * d);
      });
      const size_t qkv_width = qkv_[layer].width();
      qkv_[layer].Run(pool_, normed_.data(), d, n, qkv_rows_.data(), qkv_width);
      Rotate(step);
      StoreKeyValueRows(step, layer, layers[layer]);
      Attend(step, layer, layers[layer]);  // into normed_
      output_[layer].Run(pool_, normed_.data(), d, n, qkv_rows_.data(), d);
      ForRows(n, [&](size_t i) { AddInto(hidden_.data() + i * d, qkv_rows_.data() + i * d); });
      if (Result<void> finite = CheckNewRows(step, layer, layers[layer]); !finite) return finite;

      ForRows(n, [&](size_t i) {
        Norm(hidden_.data() + i * d, block.ffn_norm.data(), normed_.data() + i * d);
      });
      const size_t f = config_.feed_forward_width;
      gate_up_[layer].Run(pool_, normed_.data(), d, n, gate_up_rows_.data(), 2 * f);
      ForRows(n, [&](size_t i) {
        T* row = gate_up_rows_.data() + i * 2 * f;
        simd::SiluMul(row, row + f, row, f);
      });
      down_[layer].Run(pool_, gate_up_rows_.data(), 2 * f, n, normed_.data(), d);
      ForRows(n, [&](size_t i) { AddInto(hidden_.data() + i * d, normed_.data() + i * d); });
    }
    // Only the last row of every sequence reaches the vocabulary.
    for (size_t b = 0; b < step.batch; ++b) {
      Norm(hidden_.data() + (b * rows + rows - 1) * d, weights_->final_norm.data(),
           normed_.data() + b * d);
    }
    const size_t v = config_.vocabulary_size;
    head_.Run(pool_, normed_.data(), d, step.batch, logits_.data(), v);
    if (auto bad = FirstNonFinite(logits_.data(), step.batch * v)) {
      return Fail(NonFiniteLogits(*bad, static_cast<double>(logits_[*bad])));
    }
    for (size_t i = 0; i < step.batch * v; ++i) logits[i] = static_cast<double>(logits_[i]);
    return {};
  }

  void Commit(const EngineStep& step, std::span<LayerKvCache> layers) override {
    if (step.rows > 1) return;  // already in the cache slots
    const size_t hw = config_.head_width();
    for (size_t l = 0; l < layers.size(); ++l) {
      LayerKvCache& layer = layers[l];
      for (size_t lane = 0; lane < layer.lanes(); ++lane) {
        const size_t slot = (lane * capacity_ + step.start) * hw;
        std::copy_n(StagedKey(l, lane), hw, KvStorageAccess::keys<T>(layer) + slot);
        std::copy_n(StagedValue(l, lane), hw, KvStorageAccess::values<T>(layer) + slot);
      }
    }
  }

 private:
  // Runs body(i) for the rows of a step: on the calling thread for a few rows (a
  // decode), in row tiles on the pool for many (a prefill).
  template <class Body>
  void ForRows(size_t n, Body&& body) {
    constexpr size_t kTile = 32;
    if (pool_ == nullptr || n <= kTile) {
      for (size_t i = 0; i < n; ++i) body(i);
      return;
    }
    pool_->ParallelFor((n + kTile - 1) / kTile, [&](size_t tile, size_t) {
      for (size_t i = tile * kTile; i < std::min(n, (tile + 1) * kTile); ++i) body(i);
    });
  }

  void Norm(const T* x, const T* gain, T* y) const {
    simd::RmsNorm(x, gain, static_cast<T>(config_.rms_epsilon), y, config_.model_width);
  }

  void AddInto(T* y, const T* x) const {
    for (size_t j = 0; j < config_.model_width; ++j) y[j] += x[j];
  }

  // Rows of the token table: column `token` of its transposed panels (compressed
  // or not).
  void Embed(const EngineStep& step) {
    const PackedWeight<T>& embedding = weights_->embedding;
    const simd::PackedMatrixView<T>& table = embedding.view;
    const size_t d = config_.model_width;
    for (size_t b = 0; b < step.batch; ++b) {
      for (size_t r = 0; r < step.rows; ++r) {
        const uint32_t token = step.tokens[b * step.token_stride + r];
        T* row = hidden_.data() + (b * step.rows + r) * d;
        if constexpr (std::is_same_v<T, float>) {
          if (embedding.is_compressed()) {
            simd::GatherColumn(embedding.compressed.view, token, row);
            continue;
          }
        }
        for (size_t k = 0; k < d; ++k) row[k] = table.at(k, token);
      }
    }
  }

  void Rotate(const EngineStep& step) {
    const size_t pairs = config_.head_width() / 2, width = qkv_.front().width();
    ForRows(step.batch * step.rows, [&](size_t i) {
      const size_t position = step.start + i % step.rows;
      const T* cos = weights_->rope_cos.data() + position * pairs;
      const T* sin = weights_->rope_sin.data() + position * pairs;
      if (position >= rope_->tabulated()) {
        // Past the precomputed positions: the same values, computed for this row.
        T* row_cos = rope_rows_.data() + i * 2 * pairs;
        T* row_sin = row_cos + pairs;
        for (size_t k = 0; k < pairs; ++k) {
          double c = 0.0, s = 0.0;
          rope_->At(position, k, &c, &s);
          row_cos[k] = static_cast<T>(c);
          row_sin[k] = static_cast<T>(s);
        }
        cos = row_cos;
        sin = row_sin;
      }
      T* row = qkv_rows_.data() + i * width;
      simd::RopeRotate(row, cos, sin, pairs, config_.heads);
      simd::RopeRotate(row + config_.model_width, cos, sin, pairs, config_.kv_heads);
    });
  }

  T* StagedKey(size_t layer, size_t lane) {
    return staged_keys_.data() + (layer * batch_ * config_.kv_heads + lane) * config_.head_width();
  }
  T* StagedValue(size_t layer, size_t lane) {
    return staged_values_.data() +
           (layer * batch_ * config_.kv_heads + lane) * config_.head_width();
  }

  // Where row r of `lane` goes: staging for a one-row step, else the cache slot.
  T* NewKey(const EngineStep& step, size_t layer, LayerKvCache& cache, size_t lane, size_t r) {
    if (step.rows == 1) return StagedKey(layer, lane);
    return KvStorageAccess::keys<T>(cache) +
           (lane * capacity_ + step.start + r) * config_.head_width();
  }
  T* NewValue(const EngineStep& step, size_t layer, LayerKvCache& cache, size_t lane, size_t r) {
    if (step.rows == 1) return StagedValue(layer, lane);
    return KvStorageAccess::values<T>(cache) +
           (lane * capacity_ + step.start + r) * config_.head_width();
  }

  void StoreKeyValueRows(const EngineStep& step, size_t layer, LayerKvCache& cache) {
    const size_t hw = config_.head_width(), kv_heads = config_.kv_heads,
                 width = qkv_.front().width();
    const size_t d = config_.model_width, kv_width = config_.kv_width();
    for (size_t b = 0; b < step.batch; ++b) {
      for (size_t r = 0; r < step.rows; ++r) {
        const T* row = qkv_rows_.data() + (b * step.rows + r) * width;
        for (size_t h = 0; h < kv_heads; ++h) {
          std::copy_n(row + d + h * hw, hw, NewKey(step, layer, cache, b * kv_heads + h, r));
          std::copy_n(row + d + kv_width + h * hw, hw,
                      NewValue(step, layer, cache, b * kv_heads + h, r));
        }
      }
    }
  }

  // Causal attention of every new row; head outputs go to normed_ ([n, D]).
  void Attend(const EngineStep& step, size_t layer, LayerKvCache& cache) {
    if (step.rows > 1) {  // a prefill: matrix products over query tiles
      typename BlockAttention<T>::Step block;
      block.batch = step.batch;
      block.heads = config_.heads;
      block.kv_heads = config_.kv_heads;
      block.head_width = config_.head_width();
      block.start = step.start;
      block.rows = step.rows;
      block.queries = qkv_rows_.data();
      block.query_stride = qkv_.front().width();
      block.keys = KvStorageAccess::keys<T>(cache);
      block.values = KvStorageAccess::values<T>(cache);
      block.outputs = normed_.data();
      block.output_stride = config_.model_width;
      block_attention_.Run(pool_, block);
      return;
    }
    // A decode: one new row per sequence, its key and value still in staging.
    const size_t hw = config_.head_width(), heads = config_.heads,
                 group = config_.query_heads_per_kv_head();
    const size_t width = qkv_.front().width(), d = config_.model_width;
    const size_t lanes = step.batch * heads, visible = step.start + 1;
    const T scale = static_cast<T>(1.0 / std::sqrt(static_cast<double>(hw)));
    const T* keys = KvStorageAccess::keys<T>(cache);
    const T* values = KvStorageAccess::values<T>(cache);
    auto task = [&](size_t lane, size_t worker) {
      const size_t b = lane / heads, h = lane % heads, kv_lane = b * config_.kv_heads + h / group;
      const T* q = qkv_rows_.data() + b * width + h * hw;
      T* out = normed_.data() + b * d + h * hw;
      T* scores = scores_.data() + worker * capacity_;
      // Committed rows from the cache, the new row from staging.
      simd::AttentionScores(q, keys + kv_lane * capacity_ * hw, hw, step.start, hw, scale, scores);
      simd::AttentionScores(q, StagedKey(layer, kv_lane), hw, 1, hw, scale, scores + step.start);
      simd::Softmax(scores, scores, visible);
      simd::MixValues(scores, values + kv_lane * capacity_ * hw, hw, step.start, hw, out);
      simd::ScaledAccumulate(scores[step.start], StagedValue(layer, kv_lane), out, hw);
    };
    threading::ParallelFor(pool_, lanes, task);
  }

  // The new K/V rows pass the cache's append validation (spec/kv-cache.md §1.4).
  Result<void> CheckNewRows(const EngineStep& step, size_t layer, LayerKvCache& cache) {
    const size_t hw = config_.head_width(), kv_heads = config_.kv_heads;
    for (size_t b = 0; b < step.batch; ++b) {
      for (size_t r = 0; r < step.rows; ++r) {
        for (const bool is_key : {true, false}) {
          for (size_t h = 0; h < kv_heads; ++h) {
            const size_t lane = b * kv_heads + h;
            const T* row = is_key ? NewKey(step, layer, cache, lane, r)
                                  : NewValue(step, layer, cache, lane, r);
            if (auto bad = FirstNonFinite(row, hw)) {
              return Fail(NonFiniteCandidateRow(is_key, lane * hw + *bad,
                                                static_cast<double>(row[*bad]), layer));
            }
          }
        }
      }
    }
    return {};
  }

  const ModelConfig config_;
  const bool tied_;
  const size_t batch_;
  const size_t capacity_;
  const size_t max_rows_;     // rows per sequence of the largest step
  const RopeTable* rope_;     // the model's (the session keeps the model alive)
  std::shared_ptr<const EngineWeights<T>> weights_;
  threading::ThreadPool* pool_;
  std::vector<MatrixProduct<T>> qkv_, output_, gate_up_, down_;
  MatrixProduct<T> head_;
  Buffer<T> hidden_;        // [rows, D] residual stream
  Buffer<T> normed_;        // [rows, D] norm output, then head outputs, then the FFN branch
  Buffer<T> qkv_rows_;      // [rows, D + 2·kv_width], then the attention branch
  Buffer<T> gate_up_rows_;  // [rows, 2F]
  Buffer<T> rope_rows_;     // [rows, hw]: cos then sin of positions past the table
  Buffer<T> scores_;        // [workers, capacity]
  Buffer<T> logits_;        // [batch, V]
  BlockAttention<T> block_attention_;
  Buffer<T> staged_keys_;  // [layers, batch·kv_heads, hw]
  Buffer<T> staged_values_;
};

template <class T>
Result<std::unique_ptr<Engine>> Create(const DecoderModel& model, const DecoderKvCache& cache,
                                       const EngineOptions& options) {
  Result<std::shared_ptr<const EngineWeights<T>>> weights =
      ModelInternals::WeightsCache(model).template Get<T>(model, options.weights);
  if (!weights) return Fail(std::move(weights.error()));
  auto engine = std::make_unique<FastEngine<T>>(model, cache, std::move(*weights), options.pool,
                                                options.max_rows_per_step);
  if (Result<void> allocated = engine->AllocateWorkspace(); !allocated) {
    return Fail(std::move(allocated.error()));
  }
  return std::unique_ptr<Engine>(std::move(engine));
}

}  // namespace

Result<std::unique_ptr<Engine>> CreateFastEngine(const DecoderModel& model,
                                                 const DecoderKvCache& cache,
                                                 const EngineOptions& options) {
  return options.precision == Precision::kF32 ? Create<float>(model, cache, options)
                                              : Create<double>(model, cache, options);
}

}  // namespace kvrt::detail
