#include "tokenizer/vocabulary_for_test.h"

#include <cstdlib>
#include <map>
#include <memory>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "formats/gguf/gguf_file.h"
#include "formats/gguf/gguf_tokenizer.h"
#include "test_support.h"
#include "tokenizer/tokenizer_impl.h"

namespace kvrt::testing {

std::optional<VocabularyData> LoadVocabularyForTest(const std::string& gguf_path) {
  // The GGUF reader the runtime uses (formats/gguf), so the tests read exactly
  // what `kvrt tokenize` reads.
  Result<gguf::GgufFile> file = gguf::GgufFile::Open(gguf_path);
  if (!file) return std::nullopt;
  Result<std::optional<VocabularyData>> data = gguf::ReadVocabulary(*file);
  if (!data || !*data) return std::nullopt;
  return std::move(**data);
}

const Tokenizer* SharedTokenizer(const std::string& gguf_path) {
  static std::map<std::string, std::unique_ptr<Tokenizer>> built;
  auto [entry, inserted] = built.try_emplace(gguf_path);
  if (inserted) {
    std::optional<VocabularyData> data = LoadVocabularyForTest(gguf_path);
    if (!data) return nullptr;
    Result<Tokenizer> tokenizer = TokenizerFromVocabulary(std::move(*data));
    if (tokenizer) entry->second = std::make_unique<Tokenizer>(std::move(*tokenizer));
  }
  return entry->second.get();
}

std::vector<TokenizationCase> ReadTokenizationCases(const std::string& gguf_path) {
  constexpr std::string_view kSeparator = "\n__ggml_vocab_test__\n";
  const std::string inputs = ReadText(gguf_path + ".inp");
  std::vector<TokenizationCase> cases;
  for (size_t begin = 0; begin < inputs.size();) {
    const size_t end = inputs.find(kSeparator, begin);
    if (end == std::string::npos) break;  // nothing follows the last separator
    cases.push_back({inputs.substr(begin, end - begin), {}});
    begin = end + kSeparator.size();
  }
  const std::vector<std::string> lines = Lines(ReadText(gguf_path + ".out"));
  if (lines.size() != cases.size()) return {};  // the tests check the count
  for (size_t i = 0; i < cases.size(); ++i) {
    std::istringstream ids(lines[i]);
    for (uint32_t id = 0; ids >> id;) cases[i].ids.push_back(id);
  }
  return cases;
}

}  // namespace kvrt::testing
