// kvrt tokenize: the token ids a model file's tokenizer gives a text, as the
// model would see them (BOS per the file's add-BOS flag, special-token text such
// as "</s>" encoded as plain text unless --special).
#include <cstdio>
#include <string>
#include <vector>

#include "commands.h"
#include "common.h"
#include "input_file.h"
#include "kvrt/model_file.h"
#include "kvrt/tokenizer.h"
#include "output.h"

namespace kvrt::cli {
namespace {

constexpr FlagSpec kFlags[] = {
    {"model", true, "model file whose tokenizer encodes (LLMCP35, GGUF incl. vocabulary-only files)"},
    {"tokenizer", true, "llama2.c tokenizer.bin (for a llama2.c model.bin, which has none)"},
    {"prompt", true, "the text to encode"},
    {"file", true, "read the text from this file instead (its bytes, unchanged)"},
    {"no-bos", false, "do not add BOS even where the tokenizer adds it"},
    {"special", false,
     "parse the control tokens the text spells (\"<|eot_id|>\", \"<s>\") as those tokens, as llama.cpp's "
     "parse_special does (GGUF vocabularies); default: plain text"},
    {"json", false, "print {\"tokens\":[...]}"},
    {"help", false, "show this help"},
};

// Texts larger than this are refused before they are read.
constexpr uint64_t kMaxTextBytes = uint64_t{256} << 20;

Result<Tokenizer> TokenizerFromFlags(const Flags& flags) {
  if (std::optional<std::string> path = flags.Value("tokenizer")) return LoadLlama2cTokenizer(*path);
  Result<std::string> model = flags.Required("model");
  if (!model) return std::unexpected(model.error());
  return LoadTokenizer(*model);
}

Result<std::string> TextFromFlags(const Flags& flags) {
  if (flags.Has("prompt") == flags.Has("file")) {
    return std::unexpected(InvalidArgument("kvrt tokenize takes exactly one of --prompt and --file"));
  }
  if (std::optional<std::string> prompt = flags.Value("prompt")) return *prompt;
  return ReadInputFile(*flags.Value("file"), "a text file", kMaxTextBytes);
}

}  // namespace

int RunTokenize(std::span<char* const> args) {
  Result<Flags> flags = Flags::Parse(args, kFlags);
  if (!flags) return ReportError(flags.error());
  if (flags->Has("help")) {
    PrintStdout("%s", Usage("kvrt tokenize --model PATH (--prompt TEXT | --file F) [--no-bos] [--special] [--json]",
                            kFlags)
                          .c_str());
    return 0;
  }
  if (!flags->positional().empty()) {
    return ReportError(InvalidArgument("kvrt tokenize takes no positional arguments, got '" +
                                       flags->positional()[0] + "'"));
  }
  Result<std::string> text = TextFromFlags(*flags);
  if (!text) return ReportError(text.error());
  Result<Tokenizer> tokenizer = TokenizerFromFlags(*flags);
  if (!tokenizer) return ReportError(tokenizer.error());
  Result<std::vector<uint32_t>> content = tokenizer->EncodeContent(
      *text, flags->Has("special") ? SpecialTokens::kParse : SpecialTokens::kAsText);
  if (!content) return ReportError(content.error());
  std::vector<uint32_t> ids;
  if (tokenizer->add_bos() && tokenizer->bos_id() && !flags->Has("no-bos")) ids.push_back(*tokenizer->bos_id());
  ids.insert(ids.end(), content->begin(), content->end());
  if (tokenizer->add_eos() && tokenizer->eos_id()) ids.push_back(*tokenizer->eos_id());

  std::string out = flags->Has("json") ? "{\"tokens\":[" : "";
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i > 0) out += flags->Has("json") ? "," : " ";
    out += std::to_string(ids[i]);
  }
  if (flags->Has("json")) out += "]}";
  PrintStdout("%s\n", out.c_str());
  return 0;
}

}  // namespace kvrt::cli
