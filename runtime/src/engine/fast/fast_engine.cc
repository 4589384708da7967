// The fast engine: Highway kernels and a thread pool, in f32 or f64.
//
// A step forwards the rows of all its runs (prefill chunks and decode tokens of
// any slots, mixed) through each block at once: one matrix product per weight
// matrix for all rows, so the weights are read once per step, and every output
// row of a product is the same bits as a matrix-vector product of that row.
// Attention runs in parallel over (query head, block of rows): every row attends
// over its own slot's prefix as AttendPrefix does, whose reduction order depends
// only on that prefix (AttendPrefixRows shares the K/V loads of a block's rows and
// nothing else), so a sequence's logits are the same bits alone or beside others, in any
// slot, with any thread count, and prefilled in one step, in chunks or row by
// row. With EngineOptions::batch_invariant false (opt-in), the rows of a
// prefill run attend together instead, in tiles of queries per head
// (AttendQueryTile): faster, and still independent of the thread count, but a
// prompt's logits then depend on how it was chunked (a decode row keeps
// AttendPrefix). Only the last row of every run is projected to the vocabulary. New K/V
// rows wait in staging buffers until the commit: a failed step writes nothing
// into the cache. With a 16-bit cache (KvType::kF16, kBf16) the staging holds the new
// rows already rounded, so a step's own rows and the committed ones are the same
// values to attention, which reads both as stored (simd::Half, simd::Bf16 segments);
// a q8_0 cache (KvType::kQ8_0) the same, its rows quantized once into staging
// (simd::QuantizeKvRowQ8_0) and read as simd::Q8 segments. Every
// buffer is allocated at bind and bounded by the most rows one step forwards
// (EngineOptions::max_rows_per_step), but for the attention scratch: each worker
// keeps the scores of the prefixes it attends over (so that no key is read twice),
// 4 bytes a position of the capacity per query of a row group, a sliver of what
// the cache itself holds a position.
#include "engine/fast/fast_engine.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "weights/engine_weights.h"
#include "kvrt/simd/compressed_matrix.h"
#include "kvrt/simd/rms_norm.h"
#include "kvrt/simd/prefix_attention.h"
#include "kvrt/simd/query_tile_attention.h"
#include "kvrt/simd/rope.h"
#include "kvrt/simd/silu_mul.h"
#include "kvrt/threading/thread_pool.h"
#include "engine/fast/matrix_product.h"
#include "weights/engine_weights.h"
#include "model/rope.h"
#include "engine/step_errors.h"
#include "kv/kv_element.h"

namespace kvrt::detail {
namespace {

// A stored K/V element as f64 (for an error's value).
double StoredValue(float x) { return x; }
double StoredValue(double x) { return x; }
double StoredValue(simd::Half x) { return simd::F16ToF32(x.bits); }
double StoredValue(simd::Bf16 x) { return simd::Bf16ToF32(x.bits); }

// The first 16-bit element that is ±inf or NaN (exponent all ones), beside the
// f32/f64 ones of step_errors.h.
using detail::FirstNonFinite;
std::optional<size_t> FirstNonFinite(const simd::Half* values, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    if ((values[i].bits & 0x7C00) == 0x7C00) return i;
  }
  return std::nullopt;
}
std::optional<size_t> FirstNonFinite(const simd::Bf16* values, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    if ((values[i].bits & 0x7F80) == 0x7F80) return i;
  }
  return std::nullopt;
}

// T: the arithmetic (f32 or f64); K: the stored K/V element (T, or simd::Half /
// simd::Bf16 / simd::Q8 for a compact cache on the f32 engine).
template <class T, class K = T>
class FastEngine final : public Engine {
 public:
  FastEngine(const DecoderModel& model, const DecoderKvCache& cache,
             std::shared_ptr<const EngineWeights<T>> weights, threading::ThreadPool* pool,
             size_t max_rows_per_step, bool batch_invariant)
      : config_(model.config()),
        batch_invariant_(batch_invariant),
        tied_(model.output_head_is_embedding()),
        batch_(cache.batch_size()),
        capacity_(cache.capacity()),
        stored_hw_(KvRowElements(cache.precision(), cache.kv_type(), model.config().head_width())),
        // Never fewer rows than slots: a decode of every slot is one step.
        max_rows_(std::max(cache.batch_size(),
                           std::min(max_rows_per_step, cache.batch_size() * cache.capacity()))),
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

  // Allocates the workspace for steps of up to max_rows_ rows, on huge pages: a
  // prefill's matrix products read and write its rows a row's stride apart
  // (3-16 KiB), a small page each. A decode touches only the first rows, so it
  // backs a huge page per buffer over 2 MiB and per layer of staging (14 pages,
  // 28 MiB, on 110M at 512 rows) where small pages would back a few KiB.
  Result<void> AllocateWorkspace() {
    const size_t rows = max_rows_;
    const size_t d = config_.model_width, f = config_.feed_forward_width;
    const size_t qkv_width = d + 2 * config_.kv_width();
    const size_t hw = config_.head_width();
    const size_t workers = pool_ == nullptr ? 1 : pool_->threads();
    bool ok = true;
    auto allocate = [&](auto& buffer, size_t count) {
      using Owned = std::remove_reference_t<decltype(buffer)>;
      std::optional<Owned> allocated = ok ? Owned::Allocate(count, Pages::kHuge) : std::nullopt;
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
    allocate(attention_scratch_, workers * AttentionScratchPerWorker());
    allocate(logits_, batch_ * config_.vocabulary_size);
    const size_t staged = config_.layers * 2 * config_.kv_heads * rows * stored_hw_;  // StagedHead's layout
    allocate(staged_, staged);
    if constexpr (kQ8) allocate(staged_scales_, staged / simd::kQ8KvBlock);
    allocate(row_run_, rows);
    allocate(row_position_, rows);
    allocate(row_finite_, rows);
    allocate(run_first_row_, batch_);
    allocate(run_task_begin_, batch_ + 1);
    // The opt-in activations: the rows of one product rounded to q8_0 blocks and to
    // bf16 pairs, for the largest K of the products that take each (K ≤ max(D, F)).
    size_t int8_k = head_.int8_rows_k(), bf16_k = head_.bf16_rows_k();
    for (const auto* products : {&qkv_, &output_, &gate_up_, &down_}) {
      for (const MatrixProduct<T>& product : *products) {
        int8_k = std::max(int8_k, product.int8_rows_k());
        bf16_k = std::max(bf16_k, product.bf16_rows_k());
      }
    }
    if (int8_k != 0) {
      allocate(int8_quants_, rows * int8_k);
      allocate(int8_scales_, rows * int8_k / simd::kQuantBlock);
      allocate(int8_sums_, rows * int8_k / simd::kQuantBlock);
      allocate(int8_half_sums_, rows * int8_k / (simd::kQuantBlock / 2));
      rounded_.int8 = {int8_quants_.data(), int8_scales_.data(), int8_sums_.data(),
                       int8_half_sums_.data(), int8_k};
    }
    if (bf16_k != 0) {
      allocate(bf16_pairs_, rows * bf16_k / 2);
      rounded_.bf16 = {bf16_pairs_.data(), bf16_k};
    }
    if (!ok) {
      return Fail(ErrorCode::kAllocationFailed,
                  {{"elements", uint64_t{rows * (2 * d + qkv_width + 2 * f)}}},
                  "could not allocate the fast engine's workspace");
    }
    return {};
  }

  size_t max_rows_per_step() const override { return max_rows_; }
  size_t max_rows_per_run() const override { return std::min(max_rows_, capacity_); }

  Result<void> Prepare(const EngineStep& step, std::span<LayerKvCache> layers,
                       std::span<double> logits) override {
    const size_t d = config_.model_width, n = step.rows, runs = step.runs.size();
    MapRows(step);
    Embed(step);
    for (size_t layer = 0; layer < config_.layers; ++layer) {
      const BlockWeights<T>& block = weights_->blocks[layer];
      ForRows(n, [&](size_t i) {
        Norm(hidden_.data() + i * d, block.attention_norm.data(), normed_.data() + i * d);
      });
      const size_t qkv_width = qkv_[layer].width();
      qkv_[layer].Run(pool_, normed_.data(), d, n, qkv_rows_.data(), qkv_width, &rounded_);
      if (!block.qkv_bias.empty()) {
        ForRows(n, [&](size_t i) { AddBias(qkv_rows_.data() + i * qkv_width, block.qkv_bias); });
      }
      Rotate(step);
      StageKeyValueRows(step, layer);
      Attend(step, layer, layers[layer]);  // into normed_
      output_[layer].Run(pool_, normed_.data(), d, n, qkv_rows_.data(), d, &rounded_);
      ForRows(n, [&](size_t i) { AddInto(hidden_.data() + i * d, qkv_rows_.data() + i * d); });
      if (Result<void> finite = CheckNewRows(step, layer); !finite) return finite;

      ForRows(n, [&](size_t i) {
        Norm(hidden_.data() + i * d, block.ffn_norm.data(), normed_.data() + i * d);
      });
      const size_t f = config_.feed_forward_width;
      gate_up_[layer].Run(pool_, normed_.data(), d, n, gate_up_rows_.data(), 2 * f, &rounded_);
      ForRows(n, [&](size_t i) {
        T* row = gate_up_rows_.data() + i * 2 * f;
        simd::SiluMul(row, row + f, row, f);
      });
      down_[layer].Run(pool_, gate_up_rows_.data(), 2 * f, n, normed_.data(), d, &rounded_);
      ForRows(n, [&](size_t i) { AddInto(hidden_.data() + i * d, normed_.data() + i * d); });
    }
    // Only the last row of every run reaches the vocabulary.
    for (size_t r = 0; r < runs; ++r) {
      const size_t last = run_first_row_[r] + step.runs[r].count - 1;
      Norm(hidden_.data() + last * d, weights_->final_norm.data(), normed_.data() + r * d);
    }
    const size_t v = config_.vocabulary_size;
    head_.Run(pool_, normed_.data(), d, runs, logits_.data(), v, &rounded_);
    if (auto bad = FirstNonFinite(logits_.data(), runs * v)) {
      return Fail(NonFiniteLogits(*bad, static_cast<double>(logits_[*bad])));
    }
    for (size_t i = 0; i < runs * v; ++i) logits[i] = static_cast<double>(logits_[i]);
    return {};
  }

  void Commit(const EngineStep& step, std::span<LayerKvCache> layers) override {
    const size_t hw = stored_hw_, kv_heads = config_.kv_heads;
    // A layer per task: a prefill copies megabytes a layer, a decode a few KiB.
    ForLayers(step.rows, layers.size(), [&](size_t l) {
      size_t i = 0;  // the run's first step row
      for (const EngineRun& run : step.runs) {
        // A run's rows of one head are consecutive in the staging and in the lane.
        const size_t row = run.start * hw, elements = run.count * hw;
        for (size_t h = 0; h < kv_heads; ++h) {
          const KvLane<K> lane = layers[l].template Lane<K>(run.slot, h);
          const K* keys = StagedHead(l, h, i);
          const K* values = StagedHead(l, kv_heads + h, i);
          std::copy_n(keys, elements, lane.keys + row);
          std::copy_n(values, elements, lane.values + row);
          if constexpr (kQ8) {
            constexpr size_t kBlock = simd::kQ8KvBlock;
            std::copy_n(StagedScales(keys), elements / kBlock, lane.key_scales + row / kBlock);
            std::copy_n(StagedScales(values), elements / kBlock, lane.value_scales + row / kBlock);
          }
        }
        i += run.count;
      }
    });
  }

 private:
  // Runs body(i) for the rows of a step: on the calling thread for a few rows (a
  // decode), in row tiles on the pool for many (a prefill). Every row's result is
  // the same either way.
  template <class Body>
  void ForRows(size_t n, Body&& body) {
    if (pool_ == nullptr || n <= kRowsPerTile) {
      for (size_t i = 0; i < n; ++i) body(i);
      return;
    }
    pool_->ParallelFor((n + kRowsPerTile - 1) / kRowsPerTile, [&](size_t tile, size_t) {
      for (size_t i = tile * kRowsPerTile; i < std::min(n, (tile + 1) * kRowsPerTile); ++i) body(i);
    });
  }
  static constexpr size_t kRowsPerTile = 32;

  // Runs body(layer) for every layer: on the pool when the step has as many rows as
  // ForRows would spread, else on the calling thread.
  template <class Body>
  void ForLayers(size_t rows, size_t layers, Body&& body) {
    if (pool_ == nullptr || rows <= kRowsPerTile) {
      for (size_t l = 0; l < layers; ++l) body(l);
      return;
    }
    pool_->ParallelFor(layers, [&](size_t l, size_t) { body(l); });
  }

  void Norm(const T* x, const T* gain, T* y) const {
    simd::RmsNorm(x, gain, static_cast<T>(config_.rms_epsilon), y, config_.model_width);
  }

  // qwen2's q/k/v biases on one fused QKV row, before RoPE.
  static void AddBias(T* row, const Buffer<T>& bias) {
    for (size_t j = 0; j < bias.size(); ++j) row[j] += bias[j];
  }

  void AddInto(T* y, const T* x) const {
    for (size_t j = 0; j < config_.model_width; ++j) y[j] += x[j];
  }

  // Which run and position every step row belongs to (runs are back to back).
  void MapRows(const EngineStep& step) {
    size_t i = 0;
    for (size_t r = 0; r < step.runs.size(); ++r) {
      run_first_row_[r] = i;
      for (size_t j = 0; j < step.runs[r].count; ++j, ++i) {
        row_run_[i] = r;
        row_position_[i] = step.runs[r].start + j;
      }
    }
  }

  uint32_t TokenOfRow(const EngineStep& step, size_t i) const {
    const size_t r = row_run_[i];
    return step.runs[r].tokens[i - run_first_row_[r]];
  }

  // Rows of the token table: column `token` of its transposed panels (compressed
  // or not).
  void Embed(const EngineStep& step) {
    const PackedWeight<T>& embedding = weights_->embedding;
    const simd::PackedMatrixView<T>& table = embedding.view;
    const size_t d = config_.model_width;
    ForRows(step.rows, [&](size_t i) {
      const uint32_t token = TokenOfRow(step, i);
      T* row = hidden_.data() + i * d;
      if constexpr (std::is_same_v<T, float>) {
        if (embedding.is_compressed()) {
          simd::GatherColumn(embedding.compressed.view, token, row);
          return;
        }
      }
      for (size_t k = 0; k < d; ++k) row[k] = table.at(k, token);
    });
  }

  void Rotate(const EngineStep& step) {
    const size_t pairs = config_.head_width() / 2, width = qkv_.front().width();
    ForRows(step.rows, [&](size_t i) {
      const size_t position = row_position_[i];
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

  static constexpr bool kQ8 = std::is_same_v<K, simd::Q8>;

  // Staged row of step row i in layer l for `head` (the kv_heads key heads, then the
  // value heads): stored_hw_ elements. A head's rows follow each other, so that a
  // prefill's attention walks each head's new keys and values as one contiguous run
  // (rows interleaved by step row put a head's consecutive keys 2·kv_width apart, a
  // 4 KiB stride at kv_width 512: every key row a new page to the prefetchers, and
  // in huge pages the same few cache sets).
  K* StagedHead(size_t layer, size_t head, size_t i) {
    return staged_.data() + ((layer * 2 * config_.kv_heads + head) * max_rows_ + i) * stored_hw_;
  }
  // The q8_0 scales of staged quants from `at` (a block's first quant) on.
  simd::Half* StagedScales(const K* at) {
    return staged_scales_.data() + static_cast<size_t>(at - staged_.data()) / simd::kQ8KvBlock;
  }
  // Staged rows as attention reads them: a pointer, or for q8_0 the quants with
  // their scales.
  simd::KvPointer<K> StagedRows(const K* at) {
    if constexpr (kQ8) {
      return {at, staged_.data(), staged_scales_.data()};
    } else {
      return at;
    }
  }

  // The step's rotated keys and values, out of qkv_rows_ (which the output
  // projection overwrites) into the layer's staging, as the cache stores them:
  // rounded to 16 bits or quantized to q8_0 here, once, so that attention and the
  // commit see one value.
  void StageKeyValueRows(const EngineStep& step, size_t layer) {
    const size_t width = qkv_.front().width(), d = config_.model_width;
    const size_t hw = config_.head_width();
    ForRows(step.rows, [&](size_t i) {
      const T* row = qkv_rows_.data() + i * width + d;
      for (size_t h = 0; h < 2 * config_.kv_heads; ++h) {  // the key heads, then the value heads
        const T* head = row + h * hw;
        K* staged = StagedHead(layer, h, i);
        if constexpr (std::is_same_v<K, T>) {
          std::copy_n(head, hw, staged);
        } else if constexpr (kQ8) {
          simd::QuantizeKvRowQ8_0(head, hw, staged, StagedScales(staged));
        } else if constexpr (std::is_same_v<K, simd::Half>) {
          simd::StoreKvRowF16(head, hw, staged);
        } else {
          simd::StoreKvRowBf16(head, hw, staged);
        }
      }
    });
  }

  // Elements of attention scratch one worker uses: the scores of a whole prefix
  // (up to the capacity) per query it attends with at once, and accumulators.
  size_t AttentionScratchPerWorker() const {
    const size_t hw = config_.head_width();
    return batch_invariant_ ? simd::PrefixAttentionRowsScratch(hw, capacity_)
                            : std::max(simd::PrefixAttentionScratch(hw, capacity_),
                                       simd::QueryTileAttentionScratch(hw));
  }

  // The prefix rows of run r see in head group kv_head: the slot's committed rows
  // from the cache, then the run's first `own_rows` staged rows (both attention
  // paths read the same two segments).
  struct RunPrefix {
    simd::PrefixSegment<K> committed;
    simd::PrefixSegment<K> fresh;
  };
  RunPrefix PrefixOf(const EngineRun& run, size_t first_row, size_t kv_head, size_t own_rows,
                     size_t layer, LayerKvCache& cache) {
    const K* keys = StagedHead(layer, kv_head, first_row);
    const K* values = StagedHead(layer, config_.kv_heads + kv_head, first_row);
    return {Committed(cache.template Lane<K>(run.slot, kv_head), run.start),
            {StagedRows(keys), StagedRows(values), stored_hw_, own_rows}};
  }

  // The first `count` committed rows of a lane as attention reads them.
  simd::PrefixSegment<K> Committed(const KvLane<K>& lane, size_t count) const {
    if constexpr (kQ8) {
      return {{lane.keys, lane.keys, lane.key_scales}, {lane.values, lane.values, lane.value_scales}, stored_hw_,
              count};
    } else {
      return {lane.keys, lane.values, stored_hw_, count};
    }
  }

  // Causal attention of every new row; head outputs go to normed_ ([n, D]). Row
  // i of run r at position p reads its slot's rows [0, start) from the cache and
  // the run's own rows [start, p] from staging.
  //
  // One task per (run, query head, block of consecutive rows of the run): a fixed
  // partition of the step, so the result does not depend on the thread count.
  // Within a run the tasks go head by head, so consecutive tasks share one head's
  // K/V rows (256 KiB for a 512-token prefill of 110M), which stay in L2.
  //   batch-invariant: blocks of kPrefixAttentionBlockRows rows, AttendPrefixRows:
  //       every row is AttendPrefix over its own p + 1 rows, bit for bit (groups of
  //       four rows share the loads of the K/V rows they all see, and the groups of a
  //       block walk the prefix together, a tile of it in cache for all of them);
  //   batch-variant:   blocks of kQueryTileRows rows, AttendQueryTile (a one-row
  //       run, a decode, attends with AttendPrefix).
  void Attend(const EngineStep& step, size_t layer, LayerKvCache& cache) {
    const size_t hw = config_.head_width(), heads = config_.heads,
                 group = config_.query_heads_per_kv_head();
    const size_t width = qkv_.front().width(), d = config_.model_width;
    const T scale = static_cast<T>(1.0 / std::sqrt(static_cast<double>(hw)));
    const size_t scratch_size = AttentionScratchPerWorker();
    const size_t block_rows = batch_invariant_ ? simd::kPrefixAttentionBlockRows : simd::kQueryTileRows;
    // Tasks of run r: [run_task_begin_[r], run_task_begin_[r + 1]), heads × its row blocks.
    size_t tasks = 0;
    for (size_t r = 0; r < step.runs.size(); ++r) {
      run_task_begin_[r] = tasks;
      tasks += heads * ((step.runs[r].count + block_rows - 1) / block_rows);
    }
    run_task_begin_[step.runs.size()] = tasks;
    auto task = [&](size_t index, size_t worker) {
      const size_t r = static_cast<size_t>(
          std::upper_bound(run_task_begin_.data(), run_task_begin_.data() + step.runs.size() + 1, index) -
          run_task_begin_.data() - 1);
      const EngineRun& run = step.runs[r];
      const size_t local = index - run_task_begin_[r], blocks = (run.count + block_rows - 1) / block_rows;
      const size_t h = local / blocks, begin = (local % blocks) * block_rows;
      const size_t rows = std::min(block_rows, run.count - begin), first_row = run_first_row_[r];
      const RunPrefix prefix = PrefixOf(run, first_row, h / group, begin + rows, layer, cache);
      const size_t i = first_row + begin;  // the block's first step row
      T* scratch = attention_scratch_.data() + worker * scratch_size;
      const T* q = qkv_rows_.data() + i * width + h * hw;
      T* out = normed_.data() + i * d + h * hw;
      // The batch-variant kernels read rows of T only (EngineOptions::Validate
      // keeps an f16 cache batch-invariant).
      if constexpr (std::is_same_v<K, T>) {
        if (!batch_invariant_) {
          if (run.count == 1) {
            simd::AttendPrefix(q, prefix.committed, prefix.fresh, hw, scale, scratch, out);
          } else {
            simd::AttendQueryTile(q, width, rows, prefix.committed, prefix.fresh, hw, scale, scratch, out, d);
          }
          return;
        }
      }
      simd::AttendPrefixRows(q, width, rows, prefix.committed, prefix.fresh, hw, scale, scratch, out, d);
    };
    threading::ParallelFor(pool_, tasks, task);
  }

  // The new K/V rows pass the cache's append validation (spec/kv-cache.md §1.4).
  // The rows are tested in parallel (a prefill stages megabytes a layer); the first
  // failing row, in step order, is then searched as one serial pass would, so the
  // error names the same element for any thread count.
  Result<void> CheckNewRows(const EngineStep& step, size_t layer) {
    const size_t hw = config_.head_width(), kv_heads = config_.kv_heads;
    ForRows(step.rows, [&](size_t i) {
      bool finite = true;
      for (size_t h = 0; h < 2 * kv_heads && finite; ++h) {
        finite = !FirstNonFiniteStaged(StagedHead(layer, h, i), stored_hw_).has_value();
      }
      row_finite_[i] = finite;
    });
    const size_t first = static_cast<size_t>(
        std::find(row_finite_.data(), row_finite_.data() + step.rows, uint8_t{0}) - row_finite_.data());
    for (size_t i = first; i < step.rows; ++i) {
      for (const bool is_key : {true, false}) {
        for (size_t h = 0; h < kv_heads; ++h) {
          const K* row = StagedHead(layer, is_key ? h : kv_heads + h, i);
          if (auto bad = FirstNonFiniteStaged(row, stored_hw_)) {
            // The index within the slot's rows, as a single sequence reports it.
            return Fail(NonFiniteCandidateRow(is_key, h * hw + bad->first, bad->second, layer));
          }
        }
      }
    }
    return {};
  }

  // The first non-finite value among `count` staged elements from `at`, and that
  // value; for q8_0, the first element of the first block whose scale is not finite.
  std::optional<std::pair<size_t, double>> FirstNonFiniteStaged(const K* at, size_t count) {
    if constexpr (kQ8) {
      const simd::Half* scales = StagedScales(at);
      for (size_t b = 0; b < count / simd::kQ8KvBlock; ++b) {
        if ((scales[b].bits & 0x7C00) == 0x7C00) {
          const size_t i = b * simd::kQ8KvBlock;
          return std::pair{i, static_cast<double>(StagedRows(at + i).value())};
        }
      }
      return std::nullopt;
    } else {
      if (auto bad = FirstNonFinite(at, count)) return std::pair{*bad, StoredValue(at[*bad])};
      return std::nullopt;
    }
  }

  const ModelConfig config_;
  const bool batch_invariant_;  // EngineOptions::batch_invariant
  const bool tied_;
  const size_t batch_;        // slots
  const size_t capacity_;
  const size_t stored_hw_;        // elements of a stored K/V row (whole q8_0 blocks of quants)
  const size_t max_rows_;     // rows of the largest step
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
  Buffer<T> attention_scratch_;  // [workers, AttentionScratchPerWorker()]
  Buffer<T> logits_;        // [slots, V]
  Buffer<K> staged_;        // [layers, 2·kv_heads, rows, stored_hw_]: the step's new rows, as stored
  Buffer<simd::Half> staged_scales_;  // q8_0: one per simd::kQ8KvBlock of staged_
  Buffer<size_t> row_run_;       // [rows]: the run of every step row
  Buffer<size_t> row_position_;  // [rows]
  Buffer<uint8_t> row_finite_;   // [rows]: CheckNewRows' verdict on every step row
  Buffer<size_t> run_first_row_;  // [slots]: first step row of every run
  Buffer<size_t> run_task_begin_;  // [slots + 1]: first attention task of every run
  Buffer<int8_t> int8_quants_;     // [rows, K]: int8 activations only
  Buffer<float> int8_scales_;      // [rows, K/32]
  Buffer<int32_t> int8_sums_;      // [rows, K/32]
  Buffer<int32_t> int8_half_sums_; // [rows, K/16]
  Buffer<uint32_t> bf16_pairs_;    // [rows, K/2]: bf16 activations only
  RoundedActivations rounded_;     // views of the buffers above (k: the largest K of each)
};

template <class T, class K = T>
Result<std::unique_ptr<Engine>> Create(const DecoderModel& model, const DecoderKvCache& cache,
                                       const EngineOptions& options) {
  Result<std::shared_ptr<const EngineWeights<T>>> weights =
      WeightsCacheOf(model).template Get<T>(model, options.weights,
                                            {options.int8_activations, options.bf16_activations});
  if (!weights) return Fail(std::move(weights.error()));
  auto engine = std::make_unique<FastEngine<T, K>>(model, cache, std::move(*weights), options.pool,
                                                   options.max_rows_per_step, options.batch_invariant);
  if (Result<void> allocated = engine->AllocateWorkspace(); !allocated) {
    return Fail(std::move(allocated.error()));
  }
  return std::unique_ptr<Engine>(std::move(engine));
}

}  // namespace

Result<std::unique_ptr<Engine>> CreateFastEngine(const DecoderModel& model,
                                                 const DecoderKvCache& cache,
                                                 const EngineOptions& options) {
  if (IsCompactKvType(cache.kv_type())) {
    // EngineOptions::Validate has refused the other combinations; a cache made
    // by hand still gets an error, never an engine that misreads it.
    const std::string name(KvTypeName(cache.kv_type()));
    if (options.precision != Precision::kF32 || cache.precision() != Precision::kF32 || !options.batch_invariant) {
      return Fail(ErrorCode::kUnsupportedBackend, {{"", name}},
                  "an " + name + " KV cache runs on the batch-invariant fast f32 engine");
    }
    switch (cache.kv_type()) {
      case KvType::kF16: return Create<float, simd::Half>(model, cache, options);
      case KvType::kBf16: return Create<float, simd::Bf16>(model, cache, options);
      default: return Create<float, simd::Q8>(model, cache, options);
    }
  }
  return options.precision == Precision::kF32 ? Create<float>(model, cache, options)
                                              : Create<double>(model, cache, options);
}

}  // namespace kvrt::detail
