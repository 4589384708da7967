// The reference engine: one token row per step on the scalar f64 twins, exactly
// the reference crate's incremental path (spec/kv-cache.md §2.2), so cached logits
// are bit-identical to the complete-prefix pass.
#include <algorithm>
#include <vector>

#include "engine/engine.h"
#include "engine/reference/reference_ops.h"
#include "weights/engine_weights.h"

namespace kvrt::detail {
namespace {

class ReferenceEngine final : public Engine {
 public:
  ReferenceEngine(ReferenceRowForward forward, Buffer<double> staged_keys,
                  Buffer<double> staged_values, std::vector<LayerKvRows<double>> rows,
                  size_t slots, size_t slot_elements, size_t vocabulary)
      : forward_(std::move(forward)),
        staged_keys_(std::move(staged_keys)),
        staged_values_(std::move(staged_values)),
        rows_(std::move(rows)),
        slots_(slots),
        slot_elements_(slot_elements),
        vocabulary_(vocabulary) {}

  size_t max_rows_per_step() const override { return slots_; }
  size_t max_rows_per_run() const override { return 1; }

  Result<void> Prepare(const EngineStep& step, std::span<LayerKvCache> layers,
                       std::span<double> logits) override {
    // One sequence at a time, each exactly the reference's single-sequence token
    // forward: committed rows are read from the slot's lanes of the cache, the
    // candidate row lives in the slot's staging until the commit, so a failed
    // step leaves every stored double untouched.
    const size_t vocabulary = vocabulary_;
    for (size_t r = 0; r < step.runs.size(); ++r) {
      const EngineRun& run = step.runs[r];
      for (size_t l = 0; l < layers.size(); ++l) {
        const KvLane<double> lanes = layers[l].Lane<double>(run.slot, 0);  // the slot's first lane
        rows_[l].committed_keys = lanes.keys;
        rows_[l].committed_values = lanes.values;
        rows_[l].new_keys = StagedKeys(l, run.slot);
        rows_[l].new_values = StagedValues(l, run.slot);
        rows_[l].start = run.start;
      }
      RowStep row_step;
      row_step.tokens = {run.tokens, 1};
      row_step.batch = 1;
      row_step.rows = 1;
      row_step.start = run.start;
      row_step.all_logits = false;
      Result<void> forwarded =
          forward_.Run(row_step, rows_, logits.subspan(r * vocabulary, vocabulary), nullptr);
      if (!forwarded) return forwarded;
    }
    return {};
  }

  void Commit(const EngineStep& step, std::span<LayerKvCache> layers) override {
    for (const EngineRun& run : step.runs) {
      for (size_t l = 0; l < layers.size(); ++l) {
        LayerKvCache& layer = layers[l];
        const size_t hw = layer.head_width();
        for (size_t h = 0; h < layer.heads(); ++h) {
          const KvLane<double> lane = layer.Lane<double>(run.slot, h);
          std::copy_n(StagedKeys(l, run.slot) + h * hw, hw, lane.keys + run.start * hw);
          std::copy_n(StagedValues(l, run.slot) + h * hw, hw, lane.values + run.start * hw);
        }
      }
    }
  }

 private:
  // A slot's candidate rows of layer l: [kv_heads, hw].
  double* StagedKeys(size_t layer, size_t slot) {
    return staged_keys_.data() + (layer * slots_ + slot) * slot_elements_;
  }
  double* StagedValues(size_t layer, size_t slot) {
    return staged_values_.data() + (layer * slots_ + slot) * slot_elements_;
  }

  ReferenceRowForward forward_;
  Buffer<double> staged_keys_;    // [layers, slots, kv_heads, hw]
  Buffer<double> staged_values_;  // [layers, slots, kv_heads, hw]
  std::vector<LayerKvRows<double>> rows_;
  size_t slots_;
  size_t slot_elements_;  // kv_heads·hw
  size_t vocabulary_;
};

}  // namespace

Result<std::unique_ptr<Engine>> CreateReferenceEngine(const DecoderModel& model,
                                                      const DecoderKvCache& cache,
                                                      WeightFormat weights) {
  const ModelConfig& config = model.config();
  // The forward keeps its own handle on the model it runs, so a dequantized model
  // lives as long as the engine, whatever the cache does later.
  std::shared_ptr<const DecoderModel> dequantized;
  if (weights != WeightFormat::kAsStored) {
    Result<std::shared_ptr<const DecoderModel>> cached =
        WeightsCacheOf(model).Dequantized(model, weights);
    if (!cached) return Fail(std::move(cached.error()));
    dequantized = std::move(*cached);
  }
  Result<ReferenceRowForward> forward = ReferenceRowForward::Create(
      dequantized ? *dequantized : model, 1, 1);
  if (!forward) return Fail(std::move(forward.error()));
  forward->set_kv_type(cache.kv_type());
  const size_t slot_elements = config.kv_heads * config.head_width();
  const size_t per_layer = cache.batch_size() * slot_elements;
  std::optional<Buffer<double>> keys = Buffer<double>::Allocate(config.layers * per_layer);
  std::optional<Buffer<double>> values = Buffer<double>::Allocate(config.layers * per_layer);
  if (!keys || !values) {
    return Fail(ErrorCode::kAllocationFailed,
                {{"elements", uint64_t{2 * config.layers * per_layer}}},
                "could not allocate the staging rows of the reference engine");
  }
  std::vector<LayerKvRows<double>> rows(config.layers);
  for (size_t l = 0; l < config.layers; ++l) {
    rows[l].committed_stride = cache.capacity();
    rows[l].new_stride = 1;
    rows[l].head_width = config.head_width();
  }
  auto engine = std::make_unique<ReferenceEngine>(std::move(*forward), std::move(*keys),
                                                  std::move(*values), std::move(rows),
                                                  cache.batch_size(), slot_elements,
                                                  config.vocabulary_size);
  return std::unique_ptr<Engine>(std::move(engine));
}

}  // namespace kvrt::detail
