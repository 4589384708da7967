// SummarizeCheckpointFile (kvrt/model_file.h): what an LLMCP35 checkpoint holds
// besides its model, for `kvrt inspect`.
#include <new>
#include <string>

#include "formats/llmcp35/checkpoint.h"
#include "kvrt/model_file.h"

namespace kvrt {

Result<CheckpointFileSummary> SummarizeCheckpointFile(const std::string& path) try {
  Result<Checkpoint> checkpoint = LoadCheckpoint(path);
  if (!checkpoint) return Fail(std::move(checkpoint.error()));
  const Checkpoint& c = *checkpoint;
  CheckpointFileSummary summary;
  summary.file_bytes = c.file_bytes;
  summary.header_bytes = c.header_bytes;
  summary.payload_bytes = c.payload_bytes;
  summary.checksum = c.checksum;
  summary.config = c.config;
  summary.parameter_tensors = c.parameters.size();
  for (const NamedTensor& tensor : c.parameters) summary.parameter_scalars += tensor.values.size();
  summary.tokenizer = c.tokenizer;
  summary.selected_step = c.selected_step;
  summary.sampling_rng_state = c.sampling_rng_state;
  const OptimizerState& o = c.optimizer;
  summary.optimizer = {o.config.learning_rate, o.config.beta1, o.config.beta2, o.config.epsilon,
                       o.config.weight_decay, o.step, o.has_groups, o.moments.size()};
  summary.tensors.reserve(c.descriptors.size());
  for (const TensorDescriptor& d : c.descriptors) {
    FileTensor& tensor = summary.tensors.emplace_back();
    tensor.name = d.name;
    tensor.type = std::string(TensorDTypeName(d.dtype));
    tensor.shape = d.shape;
    tensor.role = std::string(TensorRoleName(d.role));
    tensor.offset = d.offset;
    tensor.bytes = d.byte_len;
  }
  return summary;
} catch (const std::bad_alloc&) {
  return Fail(ErrorCode::kAllocationFailed, {}, "could not allocate the summary of " + path);
}

}  // namespace kvrt
