#include "formats/llmcp35/components.h"

#include <string>
#include <utility>

#include "formats/llmcp35/adamw_validation.h"
#include "formats/byte_order.h"
#include "formats/llmcp35/checkpoint_errors.h"
#include "formats/llmcp35/checkpoint_validation.h"
#include "formats/llmcp35/layout.h"
#include "core/result_macros.h"
#include "core/rust_format.h"

namespace kvrt::llmcp35 {
namespace {

// The payload span of a descriptor. The directory checks already proved it lies
// inside the file; the bounds check keeps this function safe on its own.
Result<std::span<const uint8_t>> Payload(const TensorDescriptor& descriptor,
                                         std::span<const uint8_t> file) {
  if (descriptor.offset > file.size() || descriptor.byte_len > file.size() - descriptor.offset) {
    return Fail(Truncated("tensor payload"));
  }
  return file.subspan(descriptor.offset, descriptor.byte_len);
}

Result<std::vector<double>> DecodeF64(const TensorDescriptor& descriptor,
                                      std::span<const uint8_t> file) {
  KVRT_ASSIGN_OR_RETURN(const std::span<const uint8_t> bytes, Payload(descriptor, file));
  if (bytes.size() % sizeof(double) != 0) {
    return Fail(Layout("f64 tensor payload is not a multiple of eight bytes"));
  }
  std::vector<double> values(bytes.size() / sizeof(double));
  for (size_t i = 0; i < values.size(); ++i) values[i] = LoadF64(bytes.data() + 8 * i);
  return values;
}

std::string RoleDType(const TensorDescriptor& descriptor) {
  return std::string(TensorRoleName(descriptor.role)) + "/" +
         std::string(TensorDTypeName(descriptor.dtype));
}

// The reference's require_descriptor: role, dtype and name must all match.
Result<void> RequireDescriptor(const TensorDescriptor& descriptor, TensorRole role,
                               TensorDType dtype, const std::string& name) {
  if (descriptor.role == role && descriptor.dtype == dtype && descriptor.name == name) return {};
  return Fail(Layout("descriptor " + RustQuoted(descriptor.name) + " is " + RoleDType(descriptor) +
                     ", expected " + std::string(TensorRoleName(role)) + "/" +
                     std::string(TensorDTypeName(dtype)) + " named " + RustQuoted(name)));
}

std::vector<size_t> SizeShape(const TensorDescriptor& descriptor) {
  return std::vector<size_t>(descriptor.shape.begin(), descriptor.shape.end());
}

Result<Tokenizer> DecodeLiteral(std::span<const TensorDescriptor> descriptors,
                                std::span<const uint8_t> file) {
  std::vector<std::string> pieces;
  pieces.reserve(descriptors.size());
  for (size_t id = 0; id < descriptors.size(); ++id) {
    const TensorDescriptor& descriptor = descriptors[id];
    KVRT_RETURN_IF_ERROR(RequireDescriptor(descriptor, TensorRole::kLiteralToken, TensorDType::kU8,
                                           std::to_string(id)));
    if (descriptor.shape.size() != 1 || descriptor.shape[0] == 0) {
      return Fail(
          Layout("literal token " + std::to_string(id) + " needs one positive byte dimension"));
    }
    KVRT_ASSIGN_OR_RETURN(const std::span<const uint8_t> bytes, Payload(descriptor, file));
    pieces.emplace_back(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  }
  // Already the checkpoint's Tokenizer("...") variant.
  return Tokenizer::Literal(std::move(pieces));
}

Result<Tokenizer> DecodeBpe(const TensorDescriptor& descriptor, std::span<const uint8_t> file) {
  KVRT_RETURN_IF_ERROR(
      RequireDescriptor(descriptor, TensorRole::kBpePairs, TensorDType::kU32, kBpePairsName));
  if (descriptor.shape.size() != 2 || descriptor.shape[1] != 2) {
    return Fail(Layout("BPE pair tensor shape " + ShapeDebug(descriptor.shape) +
                       " is not [merge_count, 2]"));
  }
  KVRT_ASSIGN_OR_RETURN(const std::span<const uint8_t> bytes, Payload(descriptor, file));
  std::vector<std::pair<uint32_t, uint32_t>> pairs(bytes.size() / 8);
  for (size_t r = 0; r < pairs.size(); ++r) {
    pairs[r] = {LoadLittleEndian<uint32_t>(bytes.data() + 8 * r),
                LoadLittleEndian<uint32_t>(bytes.data() + 8 * r + 4)};
  }
  Result<Tokenizer> tokenizer = Tokenizer::ByteBpe(std::move(pairs));
  if (!tokenizer && tokenizer.error().code() != ErrorCode::kAllocation) {
    return Fail(std::move(tokenizer.error()).Wrap(ErrorCode::kBpe));
  }
  return tokenizer;
}

}  // namespace

Result<Tokenizer> DecodeTokenizer(uint8_t kind, size_t vocabulary,
                                  std::span<const TensorDescriptor> descriptors,
                                  std::span<const uint8_t> file) {
  Result<Tokenizer> tokenizer = kind == kLiteralKindTag ? DecodeLiteral(descriptors, file)
                                                        : DecodeBpe(descriptors.front(), file);
  if (!tokenizer) return tokenizer;
  if (tokenizer->vocabulary_size() != vocabulary) {
    return Fail(VocabularyMismatch(tokenizer->vocabulary_size(), vocabulary));
  }
  return tokenizer;
}

Result<std::vector<NamedTensor>> DecodeModel(const ModelConfig& config,
                                             std::span<const TensorDescriptor> descriptors,
                                             std::span<const uint8_t> file) {
  if (descriptors.empty()) return Fail(Layout("decoder parameter table is empty"));
  std::vector<NamedTensor> tensors;
  tensors.reserve(descriptors.size());
  for (const TensorDescriptor& descriptor : descriptors) {
    if (descriptor.role != TensorRole::kModelParameter || descriptor.dtype != TensorDType::kF64) {
      // The reference checks each earlier record's name and values before it
      // reaches this one. ValidateModelTensors runs those per-tensor checks
      // first, so an Initialization error from it belongs to an earlier record;
      // any other error comes from its later whole-list stage and is not ours.
      Result<void> earlier = ValidateModelTensors(config, tensors);
      if (!earlier && earlier.error().code() == ErrorCode::kInitialization) {
        return Fail(std::move(earlier.error()));
      }
      return Fail(Layout("decoder parameter " + RustQuoted(descriptor.name) + " has role " +
                         std::string(TensorRoleName(descriptor.role)) + " and dtype " +
                         std::string(TensorDTypeName(descriptor.dtype))));
    }
    KVRT_ASSIGN_OR_RETURN(std::vector<double> values, DecodeF64(descriptor, file));
    tensors.push_back(NamedTensor{descriptor.name, SizeShape(descriptor), std::move(values)});
  }
  KVRT_RETURN_IF_ERROR(ValidateModelTensors(config, tensors));
  return tensors;
}

Result<OptimizerState> DecodeOptimizer(const VariableHeader& header,
                                       std::span<const TensorDescriptor> descriptors,
                                       std::span<const uint8_t> file) {
  if (descriptors.size() % 2 != 0) {
    return Fail(Layout("optimizer descriptor count is not a pair count"));
  }
  OptimizerState state;
  state.config = header.adamw;
  state.has_groups = header.has_groups;
  state.decay_group = header.decay_group;
  state.no_decay_group = header.no_decay_group;
  state.step = header.optimizer_step;
  state.beta1_power = header.beta1_power;
  state.beta2_power = header.beta2_power;
  state.moments.reserve(descriptors.size() / 2);
  for (size_t i = 0; i < descriptors.size(); i += 2) {
    const TensorDescriptor& first = descriptors[i];
    const TensorDescriptor& second = descriptors[i + 1];
    KVRT_RETURN_IF_ERROR(
        RequireDescriptor(first, TensorRole::kOptimizerFirstMoment, TensorDType::kF64, first.name));
    KVRT_RETURN_IF_ERROR(RequireDescriptor(second, TensorRole::kOptimizerSecondMoment,
                                           TensorDType::kF64, first.name));
    if (first.shape != second.shape) {
      return Fail(Layout("optimizer moment shapes for " + RustQuoted(first.name) + " differ: " +
                         ShapeDebug(first.shape) + " and " + ShapeDebug(second.shape)));
    }
    OptimizerMoments moments;
    moments.name = first.name;
    moments.shape = SizeShape(first);
    KVRT_ASSIGN_OR_RETURN(moments.first, DecodeF64(first, file));
    KVRT_ASSIGN_OR_RETURN(moments.second, DecodeF64(second, file));
    KVRT_RETURN_IF_ERROR(ValidateMomentValues(moments));
    state.moments.push_back(std::move(moments));
  }
  KVRT_RETURN_IF_ERROR(ValidateAdamWState(state));
  return state;
}

}  // namespace kvrt::llmcp35
