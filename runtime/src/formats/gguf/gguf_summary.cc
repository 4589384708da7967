// SummarizeGguf: the facts `kvrt inspect` prints about any GGUF file (not only
// llama ones), read from the already validated tables.
#include <new>
#include <string>

#include "formats/gguf/gguf_file.h"
#include "formats/gguf/gguf_llama.h"

namespace kvrt::gguf {
namespace {

std::string StringOr(const GgufFile& file, std::string_view key) {
  const Value* value = file.Find(key);
  return value != nullptr && value->type == ValueType::kString ? std::string(value->string) : std::string();
}

}  // namespace

Result<GgufFileSummary> SummarizeGguf(const GgufFile& file) try {
  GgufFileSummary summary;
  summary.version = file.version();
  summary.architecture = StringOr(file, "general.architecture");
  summary.name = StringOr(file, "general.name");
  summary.tensor_count = file.tensors().size();
  summary.metadata_count = file.metadata().size();
  summary.data_offset = file.data_offset();
  summary.alignment = file.alignment();
  if (!summary.architecture.empty()) {
    const Value* context = file.Find(summary.architecture + ".context_length");
    if (context != nullptr) summary.context_length = context->AsUnsigned();
  }
  summary.tokenizer_model = StringOr(file, "tokenizer.ggml.model");
  summary.tokenizer_pre = StringOr(file, "tokenizer.ggml.pre");
  summary.tensors.reserve(file.tensors().size());
  for (const TensorInfo& tensor : file.tensors()) {
    const std::string type(GgmlTypeName(tensor.type));
    ++summary.tensors_per_type[type];
    FileTensor& summarized = summary.tensors.emplace_back();
    summarized.name = std::string(tensor.name);
    summarized.type = type;
    summarized.shape.assign(tensor.ne.begin(), tensor.ne.begin() + tensor.n_dims);
  }
  return summary;
} catch (const std::bad_alloc&) {
  return Fail(ErrorCode::kAllocationFailed, {}, "could not allocate the summary of " + file.path());
}

}  // namespace kvrt::gguf

namespace kvrt {

Result<GgufFileSummary> SummarizeGgufFile(const std::string& path) {
  Result<gguf::GgufFile> file = gguf::GgufFile::Open(path);
  if (!file) return Fail(std::move(file.error()));
  return gguf::SummarizeGguf(*file);
}

}  // namespace kvrt
