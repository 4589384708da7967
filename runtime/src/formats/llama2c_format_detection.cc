// Telling an LLMCP35 checkpoint from a llama2.c model.bin by content.
#include <array>

#include "formats/llama2c_file_io.h"
#include "formats/llama2c_header.h"
#include "formats/llmcp35_layout.h"
#include "kvrt/llama2c.h"

namespace kvrt {

Result<ModelFileFormat> DetectModelFileFormat(const std::string& path) {
  Result<llama2c::InputFile> file = llama2c::InputFile::Open(path);
  if (!file) return Fail(std::move(file.error()));
  // The LLMCP35 magic decides. Without it, a file is a llama2.c model when its
  // first 28 bytes are a valid llama2.c header (which has no magic). A file that
  // is neither is damaged; its name picks whose diagnosis the user sees: a
  // ".bin" gets the llama2.c reader's (InconsistentHeader, ...), anything else
  // the LLMCP35 reader's (InvalidMagic, Truncated, ...), as for a damaged .ckpt.
  std::array<uint8_t, llmcp35::kMagic.size()> prefix{};
  if (file->size() >= prefix.size() && file->Read(prefix, "magic") && prefix == llmcp35::kMagic) {
    return ModelFileFormat::kLlmcp35;
  }
  Result<llama2c::InputFile> reopened = llama2c::InputFile::Open(path);
  if (!reopened) return Fail(std::move(reopened.error()));
  std::array<uint8_t, kLlama2cHeaderBytes> header{};
  const bool valid_header = reopened->size() >= header.size() && reopened->Read(header, "header") &&
                            Llama2cConfig(llama2c::DecodeHeader(header));
  if (valid_header || path.ends_with(".bin")) return ModelFileFormat::kLlama2c;
  return ModelFileFormat::kLlmcp35;
}

std::string_view ModelFileFormatName(ModelFileFormat format) {
  return format == ModelFileFormat::kLlmcp35 ? "llmcp35" : "llama2c";
}

}  // namespace kvrt
