// ParseCheckpoint and LoadCheckpoint: every check of spec/checkpoint.md §9, in
// the reference's order (Checkpoint::from_bytes). Nothing is returned until the
// whole file has been accepted, including the canonical re-encoding of step 14.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <new>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

#include "core/checked_math.h"
#include "core/regular_file.h"
#include "formats/llmcp35/checkpoint_errors.h"
#include "formats/llmcp35/checkpoint_validation.h"
#include "formats/llmcp35/components.h"
#include "formats/llmcp35/header.h"
#include "formats/llmcp35/layout.h"
#include "formats/llmcp35/writer.h"
#include "core/result_macros.h"
#include "formats/llmcp35/checkpoint.h"
#include "core/rust_format.h"
#include "core/io_error.h"

namespace kvrt {
namespace {

using llmcp35::Layout;

// Step 8: unique (role, name) pairs, byte_len = product(shape) · width, and
// contiguous spans from H to the end of the file.
Result<void> ValidateDirectory(std::span<const TensorDescriptor> descriptors, uint64_t header_bytes,
                               uint64_t file_bytes) {
  std::set<std::pair<TensorRole, std::string_view>> identities;
  uint64_t next_offset = header_bytes;
  for (const TensorDescriptor& descriptor : descriptors) {
    if (!identities.emplace(descriptor.role, descriptor.name).second) {
      return Fail(Layout("tensor role " + std::string(TensorRoleName(descriptor.role)) +
                         " and name " + RustQuoted(descriptor.name) + " repeat"));
    }
    const std::optional<size_t> elements = CheckedProduct(descriptor.shape);
    const std::optional<size_t> expected =
        elements ? CheckedMul(*elements, llmcp35::DTypeWidth(descriptor.dtype)) : std::nullopt;
    if (!expected) return Fail(llmcp35::SizeOverflow("tensor shape times dtype width"));
    if (descriptor.byte_len != *expected) {
      return Fail(Layout("tensor " + RustQuoted(descriptor.name) + " declares " +
                         std::to_string(descriptor.byte_len) + " bytes, but shape " +
                         llmcp35::ShapeDebug(descriptor.shape) + " and dtype " +
                         std::string(TensorDTypeName(descriptor.dtype)) + " require " +
                         std::to_string(*expected)));
    }
    if (descriptor.offset != next_offset) {
      return Fail(Layout("tensor " + RustQuoted(descriptor.name) + " starts at " +
                         std::to_string(descriptor.offset) + ", expected contiguous offset " +
                         std::to_string(next_offset)));
    }
    if (__builtin_add_overflow(descriptor.offset, descriptor.byte_len, &next_offset)) {
      return Fail(Layout("tensor end offset overflows u64"));
    }
  }
  if (next_offset != file_bytes) {
    return Fail(Layout("tensor spans end at " + std::to_string(next_offset) +
                       ", but file ends at " + std::to_string(file_bytes)));
  }
  return {};
}

// Record boundaries of step 9: T tokenizer records, M parameters, 2S moments.
struct RecordSplit {
  size_t tokenizer_end = 0;
  size_t model_end = 0;
};

Result<RecordSplit> SplitRecords(const llmcp35::VariableHeader& header) {
  RecordSplit split;
  split.tokenizer_end =
      header.tokenizer_kind == llmcp35::kLiteralKindTag ? header.tokenizer_vocabulary : 1;
  const std::optional<size_t> model_end =
      CheckedAdd(split.tokenizer_end, header.model_parameter_count);
  if (!model_end) return Fail(llmcp35::SizeOverflow("model descriptor boundary"));
  const std::optional<size_t> optimizer_records = CheckedMul(header.optimizer_state_count, 2);
  if (!optimizer_records) return Fail(llmcp35::SizeOverflow("optimizer descriptor count"));
  const std::optional<size_t> total = CheckedAdd(*model_end, *optimizer_records);
  if (!total) return Fail(llmcp35::SizeOverflow("optimizer descriptor boundary"));
  if (header.descriptors.size() != *total) {
    return Fail(Layout("descriptor table has " + std::to_string(header.descriptors.size()) +
                       " records, expected " + std::to_string(*total)));
  }
  split.model_end = *model_end;
  return split;
}

// The loader keeps groups and moments in byte order of name (the reference holds
// them in ordered sets), so a file listing them otherwise fails step 14.
void SortByName(OptimizerState& optimizer) {
  std::sort(optimizer.decay_group.begin(), optimizer.decay_group.end());
  std::sort(optimizer.no_decay_group.begin(), optimizer.no_decay_group.end());
  std::stable_sort(
      optimizer.moments.begin(), optimizer.moments.end(),
      [](const OptimizerMoments& a, const OptimizerMoments& b) { return a.name < b.name; });
}

Result<Checkpoint> Parse(std::span<const uint8_t> file) {
  KVRT_ASSIGN_OR_RETURN(const llmcp35::FixedHeader fixed, llmcp35::ReadFixedHeader(file));
  const std::span<const uint8_t> header_region =
      file.subspan(llmcp35::kFixedHeaderBytes, fixed.header_bytes - llmcp35::kFixedHeaderBytes);
  KVRT_ASSIGN_OR_RETURN(llmcp35::VariableHeader header, llmcp35::ReadVariableHeader(header_region));
  KVRT_RETURN_IF_ERROR(ValidateDirectory(header.descriptors, fixed.header_bytes, file.size()));
  KVRT_ASSIGN_OR_RETURN(const RecordSplit split, SplitRecords(header));

  const std::span<const TensorDescriptor> records = header.descriptors;
  Checkpoint checkpoint;
  KVRT_ASSIGN_OR_RETURN(checkpoint.tokenizer,
                        llmcp35::DecodeTokenizer(header.tokenizer_kind, header.tokenizer_vocabulary,
                                                 records.first(split.tokenizer_end), file));
  checkpoint.config = header.config;
  KVRT_ASSIGN_OR_RETURN(
      checkpoint.parameters,
      llmcp35::DecodeModel(
          header.config,
          records.subspan(split.tokenizer_end, split.model_end - split.tokenizer_end), file));
  KVRT_ASSIGN_OR_RETURN(checkpoint.optimizer,
                        llmcp35::DecodeOptimizer(header, records.subspan(split.model_end), file));
  checkpoint.selected_step = header.selected_step;
  checkpoint.sampling_rng_state = header.rng_state;
  KVRT_RETURN_IF_ERROR(llmcp35::ValidateCrossComponents(checkpoint));

  SortByName(checkpoint.optimizer);
  KVRT_ASSIGN_OR_RETURN(llmcp35::EncodedCheckpoint canonical, llmcp35::EncodeValidated(checkpoint));
  if (!std::equal(canonical.bytes.begin(), canonical.bytes.end(), file.begin(), file.end())) {
    return Fail(llmcp35::NonCanonical("decoded state does not reproduce the original bytes"));
  }
  checkpoint.file_bytes = file.size();
  checkpoint.header_bytes = fixed.header_bytes;
  checkpoint.payload_bytes = fixed.payload_bytes;
  checkpoint.checksum = fixed.checksum;
  checkpoint.descriptors = std::move(header.descriptors);
  return checkpoint;
}

}  // namespace

Result<Checkpoint> ParseCheckpoint(std::span<const uint8_t> bytes) {
  // Every reservation is bounded by the file size, and every payload lies inside
  // the file; a failure here means the process is out of memory for a file it
  // already holds. It becomes a typed error, never an exception.
  try {
    return Parse(bytes);
  } catch (const std::bad_alloc&) {
    return Fail(llmcp35::Allocation("decoded checkpoint state"));
  } catch (const std::length_error&) {
    return Fail(llmcp35::Allocation("decoded checkpoint state"));
  }
}

namespace {

// The whole file, or the errno of the failing call.
Result<std::vector<uint8_t>> ReadWholeFile(const std::string& path) {
  // The reference crate's errors: Io{operation: "read"} when the path cannot be
  // opened, and for a directory (its read fails with EISDIR). Anything else that
  // is not a regular file (a FIFO, a device) is NotRegularFile: the crate would
  // block on it or read forever.
  Result<RegularFile> file = OpenRegularFile(path, "an LLMCP35 checkpoint", "read");
  if (!file) {
    struct stat status {};
    if (file.error().code() == ErrorCode::kNotRegularFile && ::stat(path.c_str(), &status) == 0 &&
        S_ISDIR(status.st_mode)) {
      return Fail(IoError("read", path, EISDIR));
    }
    return Fail(std::move(file.error()));
  }
  const int fd = file->Release();
  std::vector<uint8_t> bytes;
  int error = 0;
  if (file->size() > 0) {
    try {
      bytes.reserve(static_cast<size_t>(file->size()));
    } catch (const std::exception&) {
      ::close(fd);
      return Fail(llmcp35::Allocation("checkpoint file bytes"));
    }
  }
  // Read until end of file rather than trusting st_size, which may change.
  uint8_t chunk[1 << 16];
  while (true) {
    const ssize_t got = ::read(fd, chunk, sizeof chunk);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) {
      error = errno;
      break;
    }
    if (got == 0) break;
    try {
      bytes.insert(bytes.end(), chunk, chunk + got);
    } catch (const std::exception&) {
      ::close(fd);
      return Fail(llmcp35::Allocation("checkpoint file bytes"));
    }
  }
  ::close(fd);
  if (error != 0) return Fail(IoError("read", path, error));
  return bytes;
}

}  // namespace

Result<Checkpoint> LoadCheckpoint(const std::string& path) {
  Result<std::vector<uint8_t>> bytes = ReadWholeFile(path);
  if (!bytes) return Fail(std::move(bytes.error()));
  return ParseCheckpoint(*bytes);
}

}  // namespace kvrt
