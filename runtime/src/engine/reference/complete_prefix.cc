#include "model/parameter_access.h"
#include "engine/reference/complete_prefix.h"

#include <string>

#include "core/checked_math.h"
#include "engine/reference/reference_ops.h"

namespace kvrt {

const ForwardTrace::Stage* ForwardTrace::Find(std::string_view name) const {
  for (const Stage& stage : stages) {
    if (stage.name == name) return &stage;
  }
  return nullptr;
}

Result<void> ValidateForwardInput(const ModelConfig& config, std::span<const uint32_t> token_ids,
                                  std::span<const size_t> shape) {
  if (shape.size() != 2) {
    return Fail(ErrorCode::kTokenRank, {{"rank", uint64_t{shape.size()}}},
                "decoder token IDs must have shape [batch, tokens], got rank " +
                    std::to_string(shape.size()));
  }
  const size_t batch = shape[0], time = shape[1];
  if (batch == 0) return Fail(ErrorCode::kEmptyBatch, {}, "decoder batch must be nonempty");
  if (time == 0) return Fail(ErrorCode::kEmptyTokens, {}, "decoder sequence must be nonempty");
  if (time > config.max_positions) {
    return Fail(ErrorCode::kContextLengthExceeded,
                {{"tokens", uint64_t{time}}, {"max_positions", uint64_t{config.max_positions}}},
                "decoder sequence length " + std::to_string(time) + " exceeds context capacity " +
                    std::to_string(config.max_positions));
  }
  const std::optional<size_t> count = CheckedMul(batch, time);
  if (!count || *count != token_ids.size()) {
    return Fail(ErrorCode::kTokenCountMismatch,
                {{"expected", uint64_t{count.value_or(0)}}, {"actual", uint64_t{token_ids.size()}}},
                "decoder token shape requires " + std::to_string(count.value_or(0)) + " IDs, got " +
                    std::to_string(token_ids.size()));
  }
  for (size_t i = 0; i < token_ids.size(); ++i) {
    if (token_ids[i] >= config.vocabulary_size) {
      return Fail(Error(ErrorCode::kTokenIdOutOfBounds,
                        {{"position", uint64_t{i}},
                         {"id", uint64_t{token_ids[i]}},
                         {"vocabulary_size", uint64_t{config.vocabulary_size}}},
                        "token embedding: token ID " + std::to_string(token_ids[i]) +
                            " at flat position " + std::to_string(i) +
                            " is out of bounds for vocabulary size " +
                            std::to_string(config.vocabulary_size))
                      .Wrap(ErrorCode::kEmbedding));
    }
  }
  return {};
}

Result<std::vector<double>> ForwardCompletePrefix(const DecoderModel& model,
                                                  std::span<const uint32_t> token_ids,
                                                  std::span<const size_t> shape,
                                                  ForwardTrace* trace) {
  const ModelConfig& config = model.config();
  if (Result<void> valid = ValidateForwardInput(config, token_ids, shape); !valid) {
    return Fail(std::move(valid.error()));
  }
  const size_t batch = shape[0], time = shape[1];
  SharedBorrows reading(model.parameters());
  Result<detail::ReferenceRowForward> forward =
      detail::ReferenceRowForward::Create(model, batch, time);
  if (!forward) return Fail(std::move(forward.error()));
  // The complete prefix keeps no K/V: every layer writes its rows into the same
  // scratch, which the next layer overwrites.
  const size_t lanes = batch * config.kv_heads;
  std::vector<double> keys(lanes * time * config.head_width());
  std::vector<double> values(keys.size());
  detail::LayerKvRows<double> scratch;
  scratch.new_keys = keys.data();
  scratch.new_values = values.data();
  scratch.new_stride = time;
  scratch.start = 0;
  scratch.head_width = config.head_width();
  const std::vector<detail::LayerKvRows<double>> layers(config.layers, scratch);

  std::vector<double> logits(batch * time * config.vocabulary_size);
  detail::RowStep step;
  step.tokens = token_ids;
  step.batch = batch;
  step.rows = time;
  step.start = 0;
  step.all_logits = true;
  if (auto ran = forward->Run(step, layers, logits, trace); !ran)
    return Fail(std::move(ran.error()));
  return logits;
}

Result<std::vector<double>> LastLogitsCompletePrefix(const DecoderModel& model,
                                                     std::span<const uint32_t> tokens) {
  const size_t shape[2] = {1, tokens.size()};
  Result<std::vector<double>> all = ForwardCompletePrefix(model, tokens, shape);
  if (!all) return all;
  const size_t v = model.config().vocabulary_size;
  return std::vector<double>(all->end() - static_cast<std::ptrdiff_t>(v), all->end());
}

}  // namespace kvrt
