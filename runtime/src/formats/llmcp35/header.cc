#include "formats/llmcp35/header.h"

#include <algorithm>
#include <string>
#include <utility>

#include "formats/llmcp35/adamw_validation.h"
#include "formats/llmcp35/byte_cursor.h"
#include "formats/byte_order.h"
#include "formats/llmcp35/checkpoint_errors.h"
#include "formats/llmcp35/layout.h"
#include "core/result_macros.h"

namespace kvrt::llmcp35 {
namespace {

// One directory record (§5.1). The shape reservation is capped by the dimensions
// the remaining header bytes could hold.
Result<TensorDescriptor> ReadDescriptor(ByteCursor& cursor) {
  TensorDescriptor descriptor;
  KVRT_ASSIGN_OR_RETURN(const uint8_t role_tag, cursor.U8("tensor role"));
  const std::optional<TensorRole> role = RoleFromTag(role_tag);
  if (!role) return Fail(UnknownTensorRole(role_tag));
  descriptor.role = *role;
  KVRT_ASSIGN_OR_RETURN(descriptor.name, cursor.String("tensor name"));
  if (descriptor.name.empty()) return Fail(Layout("a decoded tensor name is empty"));
  KVRT_ASSIGN_OR_RETURN(const uint8_t dtype_tag, cursor.U8("tensor dtype"));
  const std::optional<TensorDType> dtype = DTypeFromTag(dtype_tag);
  if (!dtype) return Fail(UnknownDType(dtype_tag));
  descriptor.dtype = *dtype;
  KVRT_ASSIGN_OR_RETURN(const size_t rank, cursor.Count("tensor rank"));
  descriptor.shape.reserve(std::min(rank, cursor.remaining() / kDimensionBytes));
  for (size_t i = 0; i < rank; ++i) {
    KVRT_ASSIGN_OR_RETURN(const size_t dimension, cursor.Size("tensor dimension"));
    descriptor.shape.push_back(dimension);
  }
  KVRT_ASSIGN_OR_RETURN(descriptor.offset, cursor.U64("tensor offset"));
  KVRT_ASSIGN_OR_RETURN(descriptor.byte_len, cursor.U64("tensor byte length"));
  return descriptor;
}

}  // namespace

Result<FixedHeader> ReadFixedHeader(std::span<const uint8_t> file) {
  if (file.size() < kFixedHeaderBytes) return Fail(Truncated("fixed header"));
  if (!std::equal(kMagic.begin(), kMagic.end(), file.begin())) return Fail(InvalidMagic());
  const auto version = LoadLittleEndian<uint16_t>(file.data() + kVersionOffset);
  if (version != kSchemaVersion) return Fail(UnsupportedVersion(version));
  const auto marker = LoadLittleEndian<uint32_t>(file.data() + kEndianOffset);
  if (marker != kEndianMarker) return Fail(UnsupportedEndianness(marker));

  FixedHeader fixed;
  fixed.header_bytes = LoadLittleEndian<uint64_t>(file.data() + kHeaderBytesOffset);
  fixed.payload_bytes = LoadLittleEndian<uint64_t>(file.data() + kPayloadBytesOffset);
  fixed.checksum = LoadLittleEndian<uint64_t>(file.data() + kChecksumOffset);
  // One check catches truncation, trailing bytes and a wrong H or P.
  uint64_t declared_total = 0;
  const bool overflows =
      __builtin_add_overflow(fixed.header_bytes, fixed.payload_bytes, &declared_total);
  if (fixed.header_bytes < kFixedHeaderBytes || overflows || declared_total != file.size()) {
    return Fail(FileExtent(fixed.header_bytes, fixed.payload_bytes, file.size()));
  }
  const uint64_t computed = CheckpointChecksum(file);
  if (computed != fixed.checksum) return Fail(ChecksumMismatch(fixed.checksum, computed));
  return fixed;
}

Result<VariableHeader> ReadVariableHeader(std::span<const uint8_t> header) {
  ByteCursor cursor(header);
  VariableHeader out;

  KVRT_ASSIGN_OR_RETURN(const uint16_t layout, cursor.U16("tokenizer layout version"));
  if (layout != kTokenizerLayoutVersion) return Fail(UnsupportedTokenizerLayout(layout));
  KVRT_ASSIGN_OR_RETURN(const uint16_t rng, cursor.U16("sampling RNG algorithm version"));
  if (rng != kRngAlgorithmVersion) return Fail(UnsupportedRngAlgorithm(rng));
  KVRT_ASSIGN_OR_RETURN(out.selected_step, cursor.U64("selected step"));
  KVRT_ASSIGN_OR_RETURN(out.rng_state, cursor.U64("sampling RNG state"));
  KVRT_ASSIGN_OR_RETURN(out.tokenizer_kind, cursor.U8("tokenizer kind"));
  if (out.tokenizer_kind != kLiteralKindTag && out.tokenizer_kind != kByteBpeKindTag) {
    return Fail(UnknownTokenizerKind(out.tokenizer_kind));
  }
  KVRT_ASSIGN_OR_RETURN(out.tokenizer_vocabulary, cursor.Size("tokenizer vocabulary"));

  // The eight DecoderModelConfig::new arguments; validated later with the model.
  KVRT_ASSIGN_OR_RETURN(const size_t vocabulary, cursor.Size("decoder vocabulary"));
  KVRT_ASSIGN_OR_RETURN(const size_t width, cursor.Size("decoder width"));
  KVRT_ASSIGN_OR_RETURN(const size_t heads, cursor.Size("decoder heads"));
  KVRT_ASSIGN_OR_RETURN(const size_t feed_forward, cursor.Size("decoder feed-forward width"));
  KVRT_ASSIGN_OR_RETURN(const size_t layers, cursor.Size("decoder layers"));
  KVRT_ASSIGN_OR_RETURN(const size_t positions, cursor.Size("decoder positions"));
  KVRT_ASSIGN_OR_RETURN(const double rope_base, cursor.F64("RoPE base"));
  KVRT_ASSIGN_OR_RETURN(const double rms_epsilon, cursor.F64("RMS epsilon"));
  out.config = ModelConfig::Create(vocabulary, width, heads, feed_forward, layers, positions,
                                   rope_base, rms_epsilon);

  // The AdamW config is validated as soon as it is complete.
  KVRT_ASSIGN_OR_RETURN(out.adamw.learning_rate, cursor.F64("optimizer learning rate"));
  KVRT_ASSIGN_OR_RETURN(out.adamw.beta1, cursor.F64("optimizer beta1"));
  KVRT_ASSIGN_OR_RETURN(out.adamw.beta2, cursor.F64("optimizer beta2"));
  KVRT_ASSIGN_OR_RETURN(out.adamw.epsilon, cursor.F64("optimizer epsilon"));
  KVRT_ASSIGN_OR_RETURN(out.adamw.weight_decay, cursor.F64("optimizer weight decay"));
  KVRT_RETURN_IF_ERROR(ValidateAdamWConfig(out.adamw));

  KVRT_ASSIGN_OR_RETURN(const uint8_t groups_flag, cursor.U8("optimizer groups flag"));
  if (groups_flag == kGroupsFlag) {
    // Both lists are read before either is validated, as in the reference.
    out.has_groups = true;
    KVRT_ASSIGN_OR_RETURN(out.decay_group, cursor.Names("decay parameter-group names"));
    KVRT_ASSIGN_OR_RETURN(out.no_decay_group, cursor.Names("no-decay parameter-group names"));
    KVRT_RETURN_IF_ERROR(ValidateParameterGroups(out.decay_group, out.no_decay_group));
  } else if (groups_flag != kNoGroupsFlag) {
    return Fail(NonCanonical("optimizer groups flag " + std::to_string(groups_flag) +
                             " is neither zero nor one"));
  }

  KVRT_ASSIGN_OR_RETURN(out.optimizer_step, cursor.U64("optimizer step"));
  KVRT_ASSIGN_OR_RETURN(out.beta1_power, cursor.F64("optimizer beta1 power"));
  KVRT_ASSIGN_OR_RETURN(out.beta2_power, cursor.F64("optimizer beta2 power"));
  KVRT_ASSIGN_OR_RETURN(out.model_parameter_count, cursor.Count("model parameter tensor count"));
  KVRT_ASSIGN_OR_RETURN(out.optimizer_state_count, cursor.Count("optimizer state tensor count"));
  KVRT_ASSIGN_OR_RETURN(const size_t descriptor_count, cursor.Count("tensor descriptor count"));

  // Up to 2^32 - 1 descriptors may be declared; reserve only what the remaining
  // header bytes could hold, and let the reads report the truncation.
  out.descriptors.reserve(std::min(descriptor_count, cursor.remaining() / kMinDescriptorBytes));
  for (size_t i = 0; i < descriptor_count; ++i) {
    KVRT_ASSIGN_OR_RETURN(TensorDescriptor descriptor, ReadDescriptor(cursor));
    out.descriptors.push_back(std::move(descriptor));
  }
  if (!cursor.empty()) {
    return Fail(NonCanonical(std::to_string(cursor.remaining()) + " unparsed header bytes remain"));
  }
  return out;
}

}  // namespace kvrt::llmcp35
