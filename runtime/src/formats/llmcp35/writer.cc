#include "formats/llmcp35/writer.h"

#include <algorithm>
#include <limits>
#include <new>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

#include "core/checked_math.h"
#include "formats/byte_order.h"
#include "formats/llmcp35/checkpoint_errors.h"
#include "formats/llmcp35/checkpoint_validation.h"
#include "formats/llmcp35/layout.h"
#include "core/result_macros.h"

namespace kvrt::llmcp35 {
namespace {

// One directory record and where its payload comes from.
struct PlannedRecord {
  TensorDescriptor descriptor;
  const std::string* bytes = nullptr;                                 // literal piece
  const std::vector<std::pair<uint32_t, uint32_t>>* pairs = nullptr;  // BPE pairs
  const std::vector<double>* values = nullptr;                        // f64 tensor
};

Result<uint32_t> ToU32(size_t value, std::string_view context) {
  if (value > std::numeric_limits<uint32_t>::max()) return Fail(SizeOverflow(context));
  return static_cast<uint32_t>(value);
}

Result<size_t> Add(size_t a, size_t b, std::string_view context) {
  const std::optional<size_t> sum = CheckedAdd(a, b);
  if (!sum) return Fail(SizeOverflow(context));
  return *sum;
}

PlannedRecord F64Record(TensorRole role, const std::string& name, const std::vector<size_t>& shape,
                        const std::vector<double>& values) {
  PlannedRecord record;
  record.descriptor.role = role;
  record.descriptor.name = name;
  record.descriptor.dtype = TensorDType::kF64;
  record.descriptor.shape.assign(shape.begin(), shape.end());
  // ValidateCheckpointState has checked values.size() == product(shape) and that
  // the byte count fits.
  record.descriptor.byte_len = values.size() * sizeof(double);
  record.values = &values;
  return record;
}

// The records in file order (§5.3): tokenizer, model parameters in model order,
// then moment pairs in byte order of name.
Result<std::vector<PlannedRecord>> PlanRecords(const Checkpoint& checkpoint) {
  std::vector<PlannedRecord> records;
  const Tokenizer& tokenizer = checkpoint.tokenizer;
  if (tokenizer.kind() == TokenizerKind::kLiteral) {
    for (size_t id = 0; id < tokenizer.pieces().size(); ++id) {
      PlannedRecord record;
      record.descriptor.role = TensorRole::kLiteralToken;
      record.descriptor.name = std::to_string(id);
      record.descriptor.dtype = TensorDType::kU8;
      record.descriptor.shape = {tokenizer.pieces()[id].size()};
      record.descriptor.byte_len = tokenizer.pieces()[id].size();
      record.bytes = &tokenizer.pieces()[id];
      records.push_back(std::move(record));
    }
  } else {
    const size_t merge_count = tokenizer.merges().size();
    const std::optional<size_t> byte_len = CheckedMul(merge_count, 2 * sizeof(uint32_t));
    if (!byte_len) return Fail(SizeOverflow("BPE pair payload"));
    PlannedRecord record;
    record.descriptor.role = TensorRole::kBpePairs;
    record.descriptor.name = kBpePairsName;
    record.descriptor.dtype = TensorDType::kU32;
    record.descriptor.shape = {merge_count, 2};
    record.descriptor.byte_len = *byte_len;
    record.pairs = &tokenizer.merges();
    records.push_back(std::move(record));
  }
  for (const NamedTensor& parameter : checkpoint.parameters) {
    records.push_back(
        F64Record(TensorRole::kModelParameter, parameter.name, parameter.shape, parameter.values));
  }
  std::vector<const OptimizerMoments*> moments;
  for (const OptimizerMoments& entry : checkpoint.optimizer.moments) moments.push_back(&entry);
  std::sort(moments.begin(), moments.end(),
            [](const OptimizerMoments* a, const OptimizerMoments* b) { return a->name < b->name; });
  for (const OptimizerMoments* entry : moments) {
    records.push_back(
        F64Record(TensorRole::kOptimizerFirstMoment, entry->name, entry->shape, entry->first));
    records.push_back(
        F64Record(TensorRole::kOptimizerSecondMoment, entry->name, entry->shape, entry->second));
  }
  return records;
}

std::vector<std::string> Sorted(std::vector<std::string> names) {
  std::sort(names.begin(), names.end());
  return names;
}

// H = 208 + G + Σ (26 + name length + 8·rank), overflow-checked (§4).
Result<size_t> HeaderSize(const std::vector<std::string>& decay,
                          const std::vector<std::string>& no_decay, bool has_groups,
                          const std::vector<PlannedRecord>& records) {
  size_t size = kFixedMetadataBytes;
  if (has_groups) {
    KVRT_ASSIGN_OR_RETURN(size, Add(size, 2 * kMinStringBytes, "header length"));
    for (const std::vector<std::string>* group : {&decay, &no_decay}) {
      for (const std::string& name : *group) {
        KVRT_ASSIGN_OR_RETURN(size, Add(size, kMinStringBytes, "header length"));
        KVRT_ASSIGN_OR_RETURN(size, Add(size, name.size(), "header length"));
      }
    }
  }
  for (const PlannedRecord& record : records) {
    const std::optional<size_t> shape_bytes =
        CheckedMul(record.descriptor.shape.size(), kDimensionBytes);
    if (!shape_bytes) return Fail(SizeOverflow("header length"));
    KVRT_ASSIGN_OR_RETURN(size, Add(size, kDescriptorFixedBytes, "header length"));
    KVRT_ASSIGN_OR_RETURN(size, Add(size, record.descriptor.name.size(), "header length"));
    KVRT_ASSIGN_OR_RETURN(size, Add(size, *shape_bytes, "header length"));
  }
  return size;
}

Result<void> AppendString(std::vector<uint8_t>& out, const std::string& text) {
  KVRT_ASSIGN_OR_RETURN(const uint32_t length, ToU32(text.size(), "UTF-8 string length"));
  AppendLittleEndian(out, length);
  out.insert(out.end(), text.begin(), text.end());
  return {};
}

Result<void> AppendNames(std::vector<uint8_t>& out, const std::vector<std::string>& names) {
  KVRT_ASSIGN_OR_RETURN(const uint32_t count, ToU32(names.size(), "parameter-group name count"));
  AppendLittleEndian(out, count);
  for (const std::string& name : names) KVRT_RETURN_IF_ERROR(AppendString(out, name));
  return {};
}

// Everything from offset 38 up to H (§4, §5.1).
Result<void> AppendMetadata(std::vector<uint8_t>& out, const Checkpoint& checkpoint,
                            const std::vector<std::string>& decay,
                            const std::vector<std::string>& no_decay,
                            const std::vector<PlannedRecord>& records) {
  const ModelConfig& config = checkpoint.config;
  const OptimizerState& optimizer = checkpoint.optimizer;
  AppendLittleEndian(out, kTokenizerLayoutVersion);
  AppendLittleEndian(out, kRngAlgorithmVersion);
  AppendLittleEndian(out, checkpoint.selected_step);
  AppendLittleEndian(out, checkpoint.sampling_rng_state);
  out.push_back(checkpoint.tokenizer.kind() == TokenizerKind::kLiteral ? kLiteralKindTag
                                                                       : kByteBpeKindTag);
  AppendLittleEndian(out, uint64_t{checkpoint.tokenizer.vocabulary_size()});
  for (const size_t value : {config.vocabulary_size, config.model_width, config.heads,
                             config.feed_forward_width, config.layers, config.max_positions}) {
    AppendLittleEndian(out, uint64_t{value});
  }
  AppendF64(out, config.rope_base);
  AppendF64(out, config.rms_epsilon);
  for (const double value :
       {optimizer.config.learning_rate, optimizer.config.beta1, optimizer.config.beta2,
        optimizer.config.epsilon, optimizer.config.weight_decay}) {
    AppendF64(out, value);
  }
  out.push_back(optimizer.has_groups ? kGroupsFlag : kNoGroupsFlag);
  if (optimizer.has_groups) {
    KVRT_RETURN_IF_ERROR(AppendNames(out, decay));
    KVRT_RETURN_IF_ERROR(AppendNames(out, no_decay));
  }
  AppendLittleEndian(out, optimizer.step);
  AppendF64(out, optimizer.beta1_power);
  AppendF64(out, optimizer.beta2_power);
  KVRT_ASSIGN_OR_RETURN(const uint32_t model_count,
                        ToU32(checkpoint.parameters.size(), "model parameter tensor count"));
  KVRT_ASSIGN_OR_RETURN(const uint32_t optimizer_count,
                        ToU32(optimizer.moments.size(), "optimizer state tensor count"));
  KVRT_ASSIGN_OR_RETURN(const uint32_t record_count,
                        ToU32(records.size(), "tensor descriptor count"));
  AppendLittleEndian(out, model_count);
  AppendLittleEndian(out, optimizer_count);
  AppendLittleEndian(out, record_count);
  for (const PlannedRecord& record : records) {
    const TensorDescriptor& descriptor = record.descriptor;
    out.push_back(static_cast<uint8_t>(descriptor.role));
    KVRT_RETURN_IF_ERROR(AppendString(out, descriptor.name));
    out.push_back(static_cast<uint8_t>(descriptor.dtype));
    KVRT_ASSIGN_OR_RETURN(const uint32_t rank, ToU32(descriptor.shape.size(), "tensor rank"));
    AppendLittleEndian(out, rank);
    for (const uint64_t dimension : descriptor.shape) AppendLittleEndian(out, dimension);
    AppendLittleEndian(out, descriptor.offset);
    AppendLittleEndian(out, descriptor.byte_len);
  }
  return {};
}

void AppendPayload(std::vector<uint8_t>& out, const PlannedRecord& record) {
  if (record.bytes != nullptr) {
    out.insert(out.end(), record.bytes->begin(), record.bytes->end());
  } else if (record.pairs != nullptr) {
    for (const auto& [left, right] : *record.pairs) {
      AppendLittleEndian(out, left);
      AppendLittleEndian(out, right);
    }
  } else {
    for (const double value : *record.values) AppendF64(out, value);
  }
}

Result<EncodedCheckpoint> Encode(const Checkpoint& checkpoint) {
  KVRT_ASSIGN_OR_RETURN(std::vector<PlannedRecord> records, PlanRecords(checkpoint));
  const OptimizerState& optimizer = checkpoint.optimizer;
  const std::vector<std::string> decay = Sorted(optimizer.decay_group);
  const std::vector<std::string> no_decay = Sorted(optimizer.no_decay_group);

  KVRT_ASSIGN_OR_RETURN(const size_t header_bytes,
                        HeaderSize(decay, no_decay, optimizer.has_groups, records));
  size_t next_offset = header_bytes;
  size_t payload_bytes = 0;
  for (PlannedRecord& record : records) {
    record.descriptor.offset = next_offset;
    KVRT_ASSIGN_OR_RETURN(next_offset,
                          Add(next_offset, record.descriptor.byte_len, "tensor end offset"));
    KVRT_ASSIGN_OR_RETURN(payload_bytes,
                          Add(payload_bytes, record.descriptor.byte_len, "payload length"));
  }
  KVRT_ASSIGN_OR_RETURN(const size_t total_bytes,
                        Add(header_bytes, payload_bytes, "complete file length"));

  EncodedCheckpoint encoded;
  try {
    encoded.bytes.reserve(total_bytes);
  } catch (const std::bad_alloc&) {
    return Fail(Allocation("complete checkpoint file"));
  } catch (const std::length_error&) {
    return Fail(Allocation("complete checkpoint file"));
  }
  std::vector<uint8_t>& out = encoded.bytes;
  out.insert(out.end(), kMagic.begin(), kMagic.end());
  AppendLittleEndian(out, kSchemaVersion);
  AppendLittleEndian(out, kEndianMarker);
  AppendLittleEndian(out, uint64_t{header_bytes});
  AppendLittleEndian(out, uint64_t{payload_bytes});
  AppendLittleEndian(out, uint64_t{0});  // checksum, stored last
  KVRT_RETURN_IF_ERROR(AppendMetadata(out, checkpoint, decay, no_decay, records));
  if (out.size() != header_bytes) return Fail(Layout("two-pass header length changed"));
  for (const PlannedRecord& record : records) AppendPayload(out, record);
  if (out.size() != total_bytes) return Fail(Layout("encoded file length changed after layout"));

  encoded.checksum = CheckpointChecksum(out);
  for (size_t i = 0; i < kChecksumWidth; ++i) {
    out[kChecksumOffset + i] = static_cast<uint8_t>(encoded.checksum >> (8 * i));
  }
  encoded.header_bytes = header_bytes;
  encoded.payload_bytes = payload_bytes;
  encoded.descriptors.reserve(records.size());
  for (PlannedRecord& record : records) encoded.descriptors.push_back(std::move(record.descriptor));
  return encoded;
}

}  // namespace

Result<EncodedCheckpoint> EncodeValidated(const Checkpoint& checkpoint) {
  // Every size is derived from memory that already exists, so exhaustion here is
  // a real out-of-memory condition; it still must not escape as an exception.
  try {
    return Encode(checkpoint);
  } catch (const std::bad_alloc&) {
    return Fail(Allocation("checkpoint encoding"));
  }
}

Result<EncodedCheckpoint> EncodeCanonical(const Checkpoint& checkpoint) {
  // LLMCP35 v1 stores neither a key/value head count, an output matrix, a RoPE
  // scale nor a llama2.c vocabulary: such a model or tokenizer would be written
  // wrongly.
  const TokenizerKind kind = checkpoint.tokenizer.kind();
  if (kind != TokenizerKind::kLiteral && kind != TokenizerKind::kByteBpe) {
    return Fail(Layout("LLMCP35 stores literal-u32 and byte-bpe tokenizers, not " +
                       std::string(checkpoint.tokenizer.kind_name())));
  }
  if (checkpoint.config.kv_heads != checkpoint.config.heads || !checkpoint.config.tied_output ||
      checkpoint.config.rope_freq_scale != 1.0) {
    return Fail(Layout("LLMCP35 stores models with kv_heads == heads, a tied output head and no RoPE scaling"));
  }
  try {
    KVRT_RETURN_IF_ERROR(ValidateCheckpointState(checkpoint));
  } catch (const std::bad_alloc&) {
    return Fail(Allocation("checkpoint validation"));
  }
  return EncodeValidated(checkpoint);
}

}  // namespace kvrt::llmcp35

namespace kvrt {

Result<std::vector<uint8_t>> EncodeCheckpoint(const Checkpoint& checkpoint) {
  Result<llmcp35::EncodedCheckpoint> encoded = llmcp35::EncodeCanonical(checkpoint);
  if (!encoded) return Fail(std::move(encoded.error()));
  return std::move(encoded->bytes);
}

}  // namespace kvrt
