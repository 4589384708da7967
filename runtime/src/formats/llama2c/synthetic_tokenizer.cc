// SyntheticLlama2cTokenizer: a vocabulary with the structure of Llama 2's
// tokenizer.bin (controls, byte tokens, characters, scored merges) for random
// models that have no trained tokenizer. Merges are concatenations of earlier
// pieces, so every merge piece is reachable by run.c's merge loop, and their
// scores fall with rank like sentencepiece's.
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "tokenizer/llama2c_encoding.h"
#include "formats/llama2c/llama2c.h"
#include "kvrt/rng.h"

namespace kvrt {
namespace {

constexpr size_t kMaxMergeBytes = 16;
// Half the merge operands are drawn from these characters, repeated roughly by
// their frequency in English, so the best-scoring merges are pairs that text
// actually contains (" t", "e ", "th", ...) and prompts encode to fewer tokens.
constexpr std::string_view kCommonCharacters =
    "          eeeeeeeeettttttaaaaaaoooooiiiiinnnnnsssssshhhhrrrrdddlllcccuummwwffggyyppbb,.vk";
// llama2.c's export names BOS and EOS this way (sentencepiece's <s> and </s>).
constexpr const char* kControlPieces[] = {"<unk>", "\n<s>\n", "\n</s>\n"};

}  // namespace

Result<Tokenizer> SyntheticLlama2cTokenizer(size_t vocabulary_size, uint64_t seed) {
  if (vocabulary_size < llama2c::kMinimumVocabulary || vocabulary_size > UINT32_MAX) {
    return Fail(ErrorCode::kInvalidArgument, {},
                "a synthetic llama2.c tokenizer needs a vocabulary of at least " +
                    std::to_string(llama2c::kMinimumVocabulary) +
                    " (3 controls and 256 byte tokens), got " + std::to_string(vocabulary_size));
  }
  std::vector<std::string> pieces(std::begin(kControlPieces), std::end(kControlPieces));
  std::vector<float> scores(pieces.size(), 0.0f);
  for (unsigned byte = 0; byte < 256; ++byte) {
    pieces.push_back(llama2c::RawBytePiece(static_cast<uint8_t>(byte)));
    scores.push_back(0.0f);
  }
  // Characters score below every merge: they are never the result of one.
  const float character_score = -static_cast<float>(vocabulary_size);
  std::unordered_set<std::string> seen;
  std::vector<size_t> text_ids;  // pieces merges may combine
  for (char c = ' '; c <= '~' && pieces.size() < vocabulary_size; ++c) {
    text_ids.push_back(pieces.size());
    pieces.emplace_back(1, c);
    scores.push_back(character_score);
    seen.insert(pieces.back());
  }
  SplitMix64 rng(seed);
  size_t rank = 0;
  // Each draw either adds a piece or is a repeat / too long; the attempt budget
  // only guards against a vocabulary too large for 16-byte pieces.
  for (uint64_t attempts = 0; pieces.size() < vocabulary_size; ++attempts) {
    if (attempts > 64 * uint64_t{vocabulary_size}) {
      return Fail(ErrorCode::kInvalidArgument, {},
                  "could not generate " + std::to_string(vocabulary_size) + " distinct pieces");
    }
    auto operand = [&]() -> std::string {
      const uint64_t draw = rng.NextU64();
      if (draw & 1) return std::string(1, kCommonCharacters[(draw >> 1) % kCommonCharacters.size()]);
      return pieces[text_ids[(draw >> 1) % text_ids.size()]];
    };
    const std::string left = operand();
    const std::string right = operand();
    if (left.size() + right.size() > kMaxMergeBytes) continue;
    std::string merged = left + right;
    if (!seen.insert(merged).second) continue;
    text_ids.push_back(pieces.size());
    pieces.push_back(std::move(merged));
    scores.push_back(-static_cast<float>(rank++));
  }
  return Tokenizer::Llama2c(std::move(pieces), std::move(scores), kMaxMergeBytes);
}

}  // namespace kvrt
