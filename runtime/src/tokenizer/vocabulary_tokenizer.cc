// Assembling a GGUF tokenizer from VocabularyData; see vocabulary_tokenizer.h.
#include "tokenizer/vocabulary_tokenizer.h"

#include <new>
#include <stdexcept>
#include <utility>

#include "tokenizer/end_of_generation.h"
#include "tokenizer/pretokenizer.h"

namespace kvrt::tokenizer {
namespace {

Error OutOfMemory(std::string_view what) {
  return Error(ErrorCode::kAllocationFailed, {{"context", std::string(what)}},
               "could not allocate the " + std::string(what));
}

Result<void> CheckSpecialId(std::string_view role, std::optional<uint32_t> id, size_t size) {
  if (!id || *id < size) return {};
  return Fail(ErrorCode::kSpecialTokenOutOfRange,
              {{"role", std::string(role)},
               {"token_id", uint64_t{*id}},
               {"vocabulary_size", uint64_t{size}}},
              "the " + std::string(role) + " token id " + std::to_string(*id) +
                  " is outside the vocabulary of " + std::to_string(size) + " tokens");
}

Error UnknownToken(size_t position, uint32_t token_id) {
  return Error(ErrorCode::kUnknownToken,
               {{"position", uint64_t{position}}, {"token_id", uint64_t{token_id}}},
               "token " + std::to_string(token_id) + " at position " + std::to_string(position) +
                   " is outside this tokenizer vocabulary");
}

// llama.cpp sets token attributes the file does not carry by model name; for
// phi-3 every special token but <unk>, <s> and <|endoftext|> strips the
// whitespace to its right.
bool StripsRightOfSpecialTokens(std::string_view model_name) {
  std::string lower(model_name);
  for (char& c : lower) c = (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
  return lower.find("phi-3") != std::string::npos || lower.find("phi3") != std::string::npos;
}

}  // namespace

Result<std::shared_ptr<const VocabularyTokenizer>> VocabularyTokenizer::Build(
    VocabularyData vocabulary) {
  const bool sentencepiece = vocabulary.model == "llama";
  if (!sentencepiece && vocabulary.model != "gpt2") {
    return Fail(ErrorCode::kUnsupportedTokenizerModel, {{"model", vocabulary.model}},
                "the GGUF tokenizer model \"" + vocabulary.model +
                    "\" is not supported (expected \"llama\" or \"gpt2\")");
  }
  try {
    Result<TokenTable> table = TokenTable::Build(
        std::move(vocabulary.tokens), std::move(vocabulary.scores), vocabulary.token_types);
    if (!table) return Fail(std::move(table.error()));
    for (const auto& [role, id] :
         {std::pair{"BOS", vocabulary.bos}, std::pair{"EOS", vocabulary.eos},
          std::pair{"unknown", vocabulary.unk}, std::pair{"padding", vocabulary.pad},
          std::pair{"end-of-turn", vocabulary.eot}, std::pair{"end-of-message", vocabulary.eom},
          std::pair{"FIM prefix", vocabulary.fim_pre}, std::pair{"FIM suffix", vocabulary.fim_suf},
          std::pair{"FIM middle", vocabulary.fim_mid}, std::pair{"FIM pad", vocabulary.fim_pad},
          std::pair{"FIM repository", vocabulary.fim_rep},
          std::pair{"FIM separator", vocabulary.fim_sep}}) {
      if (Result<void> in_range = CheckSpecialId(role, id, table->size()); !in_range) {
        return Fail(std::move(in_range.error()));
      }
    }
    std::optional<PreTokenizer> pre;
    if (!sentencepiece) {
      Result<PreTokenizer> named = PreTokenizer::ForName(vocabulary.pre);
      if (!named) return Fail(std::move(named.error()));
      pre = std::move(*named);
    }
    // Before the encoders and the decoded bytes: it can turn tokens into control tokens.
    std::vector<uint32_t> end_of_generation = DeriveEndOfGeneration(
        *table, {vocabulary.eos, vocabulary.eot, vocabulary.eom, vocabulary.fim_pre,
                 vocabulary.fim_suf, vocabulary.fim_mid, vocabulary.fim_pad, vocabulary.fim_rep,
                 vocabulary.fim_sep});
    const bool add_space_prefix = vocabulary.add_space_prefix.value_or(sentencepiece);
    std::vector<std::string> token_bytes;
    std::variant<SentencePieceEncoder, ByteLevelBpeEncoder> encoder;
    if (sentencepiece) {
      Result<SentencePieceEncoder> spm =
          SentencePieceEncoder::Build(*table, vocabulary.unk, add_space_prefix);
      if (!spm) return Fail(std::move(spm.error()));
      Result<std::vector<std::string>> bytes = SentencePieceTokenBytes(*table);
      if (!bytes) return Fail(std::move(bytes.error()));
      encoder = std::move(*spm);
      token_bytes = std::move(*bytes);
    } else {
      Result<ByteLevelBpeEncoder> bpe = ByteLevelBpeEncoder::Build(*table, vocabulary.merges, *pre);
      if (!bpe) return Fail(std::move(bpe.error()));
      encoder.emplace<ByteLevelBpeEncoder>(std::move(*bpe));
      token_bytes = ByteLevelTokenBytes(*table);
    }
    std::shared_ptr<VocabularyTokenizer> tokenizer(
        new VocabularyTokenizer(std::move(*table), std::move(encoder)));
    tokenizer->token_bytes_ = std::move(token_bytes);
    tokenizer->special_ = SpecialTokensOf(tokenizer->table_);
    if (StripsRightOfSpecialTokens(vocabulary.name)) {
      for (SpecialToken& token : tokenizer->special_) {
        const std::string& text = tokenizer->table_.text(token.id);
        token.rstrip = text != "<unk>" && text != "<s>" && text != "<|endoftext|>";
      }
    }
    tokenizer->end_of_generation_ = std::move(end_of_generation);
    tokenizer->chat_template_ = std::move(vocabulary.chat_template);
    tokenizer->bos_ = vocabulary.bos;
    tokenizer->eos_ = vocabulary.eos;
    tokenizer->unk_ = vocabulary.unk;
    tokenizer->pad_ = vocabulary.pad;
    tokenizer->add_bos_ = vocabulary.add_bos.value_or(sentencepiece || pre->adds_bos());
    tokenizer->add_eos_ = vocabulary.add_eos.value_or(false);
    tokenizer->add_space_prefix_ = add_space_prefix;
    return std::shared_ptr<const VocabularyTokenizer>(std::move(tokenizer));
  } catch (const std::bad_alloc&) {
    return Fail(OutOfMemory("GGUF tokenizer"));
  } catch (const std::length_error&) {
    return Fail(OutOfMemory("GGUF tokenizer"));
  }
}

Result<std::vector<uint32_t>> VocabularyTokenizer::Encode(std::string_view text,
                                                          bool parse_special) const {
  try {
    std::vector<uint32_t> ids;
    auto encode_raw = [&](std::string_view raw) -> Result<void> {
      if (const auto* spm = std::get_if<SentencePieceEncoder>(&encoder_)) {
        spm->Encode(table_, raw, ids);
        return {};
      }
      return std::get<ByteLevelBpeEncoder>(encoder_).Encode(table_, raw, ids);
    };
    for (const TextFragment& fragment :
         SplitAtSpecialTokens(table_, special_, text, parse_special)) {
      if (fragment.is_token) {
        ids.push_back(fragment.id);
      } else if (Result<void> encoded = encode_raw(fragment.text); !encoded) {
        return Fail(std::move(encoded.error()));
      }
    }
    return ids;
  } catch (const std::bad_alloc&) {
    return Fail(OutOfMemory("encoded token ids"));
  } catch (const std::length_error&) {
    return Fail(OutOfMemory("encoded token ids"));
  }
}

Result<std::string_view> VocabularyTokenizer::TokenBytes(uint32_t id, size_t position) const {
  if (id >= token_bytes_.size()) return Fail(UnknownToken(position, id));
  return std::string_view(token_bytes_[id]);
}

Result<std::string_view> VocabularyTokenizer::TokenBytesAfter(std::optional<uint32_t> previous,
                                                              uint32_t id, size_t position) const {
  Result<std::string_view> bytes = TokenBytes(id, position);
  const bool starts_text = !previous || previous == bos_;
  if (bytes && is_sentencepiece() && add_space_prefix_ && starts_text &&
      table_.type(id) == TokenType::kNormal && !bytes->empty() && bytes->front() == ' ') {
    bytes->remove_prefix(1);
  }
  return bytes;
}

}  // namespace kvrt::tokenizer
