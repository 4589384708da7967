// The reference engine: one token row per step on the scalar f64 twins, exactly
// the reference crate's incremental path (spec/kv-cache.md §2.2), so cached logits
// are bit-identical to the complete-prefix pass.
#include <algorithm>
#include <vector>

#include "engine/engine.h"
#include "engine/reference/reference_ops.h"
#include "model/model_internals.h"

namespace kvrt::detail {
namespace {

class ReferenceEngine final : public Engine {
 public:
  ReferenceEngine(ReferenceRowForward forward, Buffer<double> staged_keys,
                  Buffer<double> staged_values, std::vector<LayerKvRows<double>> rows, size_t batch)
      : forward_(std::move(forward)),
        staged_keys_(std::move(staged_keys)),
        staged_values_(std::move(staged_values)),
        rows_(std::move(rows)),
        tokens_(batch) {}

  size_t max_rows_per_step() const override { return 1; }

  Result<void> Prepare(const EngineStep& step, std::span<LayerKvCache> layers,
                       std::span<double> logits) override {
    // Committed rows are read from the cache; the candidate row lives in staging
    // until the commit, so a failed step leaves every stored double untouched.
    for (size_t l = 0; l < layers.size(); ++l) {
      rows_[l].committed_keys = KvStorageAccess::keys<double>(layers[l]);
      rows_[l].committed_values = KvStorageAccess::values<double>(layers[l]);
      rows_[l].start = step.start;
    }
    RowStep row_step;
    row_step.tokens = {step.tokens, step.batch};  // one row per sequence, stride ignored
    row_step.batch = step.batch;
    row_step.rows = 1;
    row_step.start = step.start;
    row_step.all_logits = false;
    if (step.batch > 1 && step.token_stride != 1) {
      // Gather the step's token of every sequence into a contiguous [batch, 1].
      for (size_t b = 0; b < step.batch; ++b) tokens_[b] = step.tokens[b * step.token_stride];
      row_step.tokens = tokens_;
    }
    return forward_.Run(row_step, rows_, logits, nullptr);
  }

  void Commit(const EngineStep& step, std::span<LayerKvCache> layers) override {
    for (size_t l = 0; l < layers.size(); ++l) {
      LayerKvCache& layer = layers[l];
      const size_t hw = layer.head_width();
      for (size_t lane = 0; lane < layer.lanes(); ++lane) {
        const size_t slot = (lane * layer.capacity() + step.start) * hw;
        std::copy_n(rows_[l].new_key(lane, 0), hw, KvStorageAccess::keys<double>(layer) + slot);
        std::copy_n(rows_[l].new_value(lane, 0), hw, KvStorageAccess::values<double>(layer) + slot);
      }
    }
  }

 private:
  ReferenceRowForward forward_;
  Buffer<double> staged_keys_;    // [layers, lanes, 1, hw]
  Buffer<double> staged_values_;  // [layers, lanes, 1, hw]
  std::vector<LayerKvRows<double>> rows_;
  std::vector<uint32_t> tokens_;  // [batch]: sized at bind, reused by every step
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
        ModelInternals::WeightsCache(model).Dequantized(model, weights);
    if (!cached) return Fail(std::move(cached.error()));
    dequantized = std::move(*cached);
  }
  Result<ReferenceRowForward> forward = ReferenceRowForward::Create(
      dequantized ? *dequantized : model, cache.batch_size(), 1);
  if (!forward) return Fail(std::move(forward.error()));
  const size_t lanes = cache.batch_size() * config.kv_heads;
  const size_t per_layer = lanes * config.head_width();
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
    rows[l].new_keys = keys->data() + l * per_layer;
    rows[l].new_values = values->data() + l * per_layer;
    rows[l].new_stride = 1;
    rows[l].head_width = config.head_width();
  }
  auto engine =
      std::make_unique<ReferenceEngine>(std::move(*forward), std::move(*keys), std::move(*values),
                                        std::move(rows), cache.batch_size());
  return std::unique_ptr<Engine>(std::move(engine));
}

}  // namespace kvrt::detail
