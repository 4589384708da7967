// Small pieces of the checkpoint API shared by the reader and the writer: enum
// names, the file checksum and the model rebuild.
#include "formats/llmcp35/checkpoint.h"

#include <algorithm>

#include "formats/llmcp35/layout.h"

namespace kvrt {

std::string_view TensorRoleName(TensorRole role) {
  switch (role) {
    case TensorRole::kLiteralToken:
      return "LiteralToken";
    case TensorRole::kBpePairs:
      return "BpePairs";
    case TensorRole::kModelParameter:
      return "ModelParameter";
    case TensorRole::kOptimizerFirstMoment:
      return "OptimizerFirstMoment";
    case TensorRole::kOptimizerSecondMoment:
      return "OptimizerSecondMoment";
  }
  return "Unknown";
}

std::string_view TensorDTypeName(TensorDType dtype) {
  switch (dtype) {
    case TensorDType::kU8:
      return "u8";
    case TensorDType::kU32:
      return "u32";
    case TensorDType::kF64:
      return "f64";
  }
  return "unknown";
}

uint64_t CheckpointChecksum(std::span<const uint8_t> bytes) {
  uint64_t hash = llmcp35::kFnvOffsetBasis;
  auto mix = [&hash](uint8_t byte) { hash = (hash ^ byte) * llmcp35::kFnvPrime; };
  // The checksum field keeps its position in the stream but counts as zeros.
  const size_t field_begin = std::min(bytes.size(), llmcp35::kChecksumOffset);
  const size_t field_end =
      std::min(bytes.size(), llmcp35::kChecksumOffset + llmcp35::kChecksumWidth);
  for (size_t i = 0; i < field_begin; ++i) mix(bytes[i]);
  for (size_t i = field_begin; i < field_end; ++i) mix(0);
  for (size_t i = field_end; i < bytes.size(); ++i) mix(bytes[i]);
  return hash;
}

Result<DecoderModel> Checkpoint::BuildModel() const {
  return DecoderModel::FromTensors(config, parameters);
}

}  // namespace kvrt
