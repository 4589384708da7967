// Writes the seed corpora of the fuzz targets from fixtures/ (run at build time
// by the kvrt_fuzz_seeds target): usage `fuzz_make_seeds <fixtures> <out>`.
//
//   <out>/checkpoint/  every small .ckpt of fixtures/checkpoints and fixtures/corrupt
//   <out>/tokenizer/   the example texts and id lists of checkpoints/ch39_trained.txt,
//                      in the tokenizer fuzzer's input format
//   <out>/session/     hand-written operation sequences in the session fuzzer's format
//   <out>/llama2c/     small model.bin and tokenizer.bin files written by the runtime,
//                      and a few texts, in the llama2c fuzzer's format
//   <out>/gguf/        small llama GGUF files of every supported type, written by the
//                      runtime's GGUF writer
//   <out>/gguf_tokenizer/ field descriptions of SentencePiece and byte-level BPE
//                      vocabularies, in the GGUF tokenizer fuzzer's format
//   <out>/batch_requests/ kvrt batch request files (JSON lines) using every field
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "formats/gguf/gguf_writer.h"
#include "formats/llama2c/llama2c.h"
#include "model/decoder_model.h"
#include "kvrt/rng.h"

namespace {

namespace fs = std::filesystem;
using Bytes = std::vector<uint8_t>;

void Write(const fs::path& path, const Bytes& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

void CopyCheckpoints(const fs::path& fixtures, const fs::path& out) {
  for (const char* folder : {"checkpoints", "corrupt"}) {
    for (const fs::directory_entry& entry : fs::directory_iterator(fixtures / folder)) {
      if (entry.path().extension() == ".ckpt") {
        fs::copy_file(entry.path(), out / entry.path().filename(),
                      fs::copy_options::overwrite_existing);
      }
    }
  }
}

Bytes FromHex(const std::string& hex) {
  Bytes bytes;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) {
    bytes.push_back(static_cast<uint8_t>(std::stoul(hex.substr(i, 2), nullptr, 16)));
  }
  return bytes;
}

// The value after `key` up to the next space (or the end of the line).
std::string Field(const std::string& line, const std::string& key) {
  const size_t at = line.find(key);
  if (at == std::string::npos) return {};
  const size_t start = at + key.size();
  const size_t end = line.find(' ', start);
  return line.substr(start, end == std::string::npos ? std::string::npos : end - start);
}

std::vector<uint32_t> IdList(const std::string& line, const std::string& key) {
  std::vector<uint32_t> ids;
  const size_t at = line.find(key + "[");
  if (at == std::string::npos) return ids;
  std::istringstream list(line.substr(at + key.size() + 1, line.find(']', at) - at - key.size() - 1));
  for (std::string item; std::getline(list, item, ',');) ids.push_back(std::stoul(item));
  return ids;
}

// Tokenizer fuzzer format: a selector byte (fixture index, +0x80 to decode ids),
// then text bytes, or ids as (high byte, low byte) pairs.
void WriteTokenizerSeeds(const fs::path& fixtures, const fs::path& out) {
  std::ifstream examples(fixtures / "checkpoints" / "ch39_trained.txt");
  int count = 0;
  for (std::string line; std::getline(examples, line);) {
    if (line.find("utf8_hex=") == std::string::npos) continue;
    const Bytes text = FromHex(Field(line, "utf8_hex="));
    for (uint8_t fixture : {0, 2}) {  // ch39 and the demo's tokenizer
      Bytes seed{fixture};
      seed.insert(seed.end(), text.begin(), text.end());
      Write(out / ("text_" + std::to_string(count++)), seed);
    }
    for (const char* key : {"content_ids=", "document_ids="}) {
      Bytes seed{0x80};
      for (uint32_t id : IdList(line, key)) {
        seed.push_back(static_cast<uint8_t>(id >> 8));
        seed.push_back(static_cast<uint8_t>(id));
      }
      Write(out / ("ids_" + std::to_string(count++)), seed);
    }
  }
}

// Session fuzzer operations (session_world.cc, session_ops.cc), one byte per
// argument; the comments name the argument bytes.
namespace op {
Bytes NewCache(uint8_t slot, uint8_t model, uint8_t batch, uint8_t capacity, uint8_t f32) {
  return {0, slot, model, batch, capacity, f32};
}
Bytes Bind(uint8_t cache, uint8_t model, uint8_t session, uint8_t engine, uint8_t pool = 0) {
  // engine: 0 reference f64, 1 fast f64, 2 fast f32, 3 reference f32 (rejected)
  Bytes bytes{2, cache, model, session, engine};
  if (engine == 1 || engine == 2) bytes.push_back(pool);
  return bytes;
}
Bytes Prefill(uint8_t session, const Bytes& tokens, uint8_t batch = 1) {
  Bytes bytes{3, session, static_cast<uint8_t>(tokens.size() / batch), 1};
  bytes.insert(bytes.end(), tokens.begin(), tokens.end());
  if (batch == 1) bytes.push_back(1);
  return bytes;
}
Bytes Decode(uint8_t session, const Bytes& tokens) {
  Bytes bytes{4, session, 1};
  bytes.insert(bytes.end(), tokens.begin(), tokens.end());
  if (tokens.size() == 1) bytes.push_back(1);
  return bytes;
}
Bytes Reset(uint8_t session) { return {6, session}; }
Bytes Drop(uint8_t session) { return {7, session}; }
// One ordinary update (kind 0) of parameter `index`.
Bytes Update(uint8_t model, uint8_t index) { return {8, model, 1, 0, index}; }
}  // namespace op

Bytes Sequence(uint8_t variant, std::initializer_list<Bytes> operations) {
  Bytes bytes{variant, 0};
  for (const Bytes& operation : operations) bytes.insert(bytes.end(), operation.begin(), operation.end());
  return bytes;
}

void WriteSessionSeeds(const fs::path& out) {
  std::vector<Bytes> seeds;
  for (uint8_t variant = 0; variant < 4; ++variant) {
    for (uint8_t engine = 0; engine < 3; ++engine) {
      const uint8_t f32 = engine == 2 ? 1 : 0;
      // Prefill, decode to full, reset, replay; then an update refused while the
      // session lives, accepted after, and the stale cache refused at bind.
      seeds.push_back(Sequence(
          variant, {op::NewCache(0, 0, 1, 0, f32), op::Bind(0, 0, 0, engine, 1),
                    op::Prefill(0, {1, 2}), op::Decode(0, {3}), op::Decode(0, {4}),
                    op::Decode(0, {0}), op::Decode(0, {1}), op::Reset(0), op::Prefill(0, {2}),
                    op::Update(0, 3), op::Drop(0), op::Update(0, 3), op::Bind(0, 0, 0, engine),
                    op::NewCache(1, 0, 1, 0, f32), op::Bind(1, 0, 1, engine),
                    op::Prefill(1, {0, 1, 2})}));
      // Two sequences per cache, two sessions, a rebind that continues decoding.
      seeds.push_back(Sequence(
          variant, {op::NewCache(0, 0, 2, 0, f32), op::NewCache(1, 2, 1, 3, f32),
                    op::Bind(0, 0, 0, engine), op::Bind(1, 2, 1, engine),
                    op::Prefill(0, {1, 2, 3, 4}, 2), op::Decode(0, {1, 2}), op::Prefill(1, {5}),
                    op::Drop(0), op::Bind(0, 0, 0, engine == 0 ? 1 : 0), op::Decode(0, {3, 4}),
                    op::Bind(0, 1, 1, 0), op::Update(1, 0)}));
    }
  }
  for (size_t i = 0; i < seeds.size(); ++i) Write(out / ("ops_" + std::to_string(i)), seeds[i]);
}

Bytes ReadFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return Bytes(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

Bytes Prefixed(uint8_t selector, const Bytes& payload) {
  Bytes seed{selector};
  seed.insert(seed.end(), payload.begin(), payload.end());
  return seed;
}

// llama2c fuzzer format: a selector byte (0 tokenizer.bin, 1 synthetic text,
// 2 model.bin), then the payload.
bool WriteLlama2cSeeds(const fs::path& out) {
  int count = 0;
  for (const auto& [size, seed] : {std::pair<size_t, uint64_t>{259, 1}, {300, 2}}) {
    kvrt::Result<kvrt::Tokenizer> tokenizer = kvrt::SyntheticLlama2cTokenizer(size, seed);
    if (!tokenizer) return false;
    kvrt::Result<std::vector<uint8_t>> bytes = kvrt::EncodeLlama2cTokenizer(*tokenizer);
    if (!bytes) return false;
    Write(out / ("tokenizer_" + std::to_string(count++)), Prefixed(0, *bytes));
  }
  for (const char* text : {"Once upon a time", "h\xC3\xA9llo", "\n\t\xFF"}) {
    Bytes seed{1, 1};
    seed.insert(seed.end(), text, text + std::strlen(text));
    Write(out / ("text_" + std::to_string(count++)), seed);
  }
  for (const auto& [kv_heads, tied] : {std::pair<size_t, bool>{2, true}, {1, false}}) {
    kvrt::ModelConfig config = kvrt::ModelConfig::Create(12, 8, 2, 12, 1, 6, 10000.0, 1e-5);
    config.kv_heads = kv_heads;
    config.tied_output = tied;
    kvrt::SplitMix64 rng(5);
    kvrt::Result<kvrt::DecoderModel> model =
        kvrt::DecoderModel::FromSeed(config, rng, kvrt::ModelStorage::kPanelsF32);
    if (!model) return false;
    const fs::path path = out / "model.tmp";
    if (!kvrt::SaveLlama2cModel(*model, path.string())) return false;
    Write(out / ("model_" + std::to_string(count++)), Prefixed(2, ReadFile(path)));
    fs::remove(path);
  }
  return true;
}

// GGUF fuzzer format: the file bytes. Tied and untied heads, GQA, a tokenizer,
// and every supported tensor type (D = 32: whole quantization blocks; F = 48:
// ffn_down falls back to F16).
bool WriteGgufSeeds(const fs::path& out) {
  using kvrt::gguf::GgmlType;
  int count = 0;
  for (const auto& [kv_heads, tied] : {std::pair<size_t, bool>{2, false}, {4, true}}) {
    kvrt::ModelConfig config = kvrt::ModelConfig::Create(24, 32, 4, 48, 1, 8, 10000.0, 1.0 / 65536);
    config.kv_heads = kv_heads;
    config.tied_output = tied;
    kvrt::SplitMix64 rng(9);
    kvrt::Result<kvrt::DecoderModel> model = kvrt::DecoderModel::FromSeed(config, rng);
    if (!model) return false;
    kvrt::gguf::GgufTokenizerMetadata tokenizer;
    for (int i = 0; i < 24; ++i) tokenizer.tokens.push_back("t" + std::to_string(i));
    tokenizer.scores.assign(24, 0.0f);
    tokenizer.token_types.assign(24, 1);
    tokenizer.bos_token_id = 1;
    for (GgmlType type : {GgmlType::kF32, GgmlType::kF16, GgmlType::kBF16, GgmlType::kQ8_0, GgmlType::kQ4_0}) {
      const fs::path path = out / ("model_" + std::to_string(count++) + ".gguf");
      if (!kvrt::gguf::SaveGgufModel(*model, type, path.string(), tokenizer)) return false;
    }
  }
  return true;
}

// GGUF tokenizer fuzzer inputs (gguf_tokenizer_fuzzer.cc): model selector, pre
// flag (+ selector), token count (u16), per token a selector (≥ 1: a table piece,
// then a bit for a second piece), then the scores/types/merges flags, special
// ids and flags, and the text. Zero bytes past the end read as "absent".
void WriteGgufTokenizerSeeds(const fs::path& out) {
  auto seed = [](uint8_t model, uint8_t pieces, std::string_view text) {
    Bytes bytes = {model, 0, pieces, 0};
    for (uint8_t i = 0; i < pieces; ++i) bytes.insert(bytes.end(), {1, static_cast<uint8_t>(i), 0});
    bytes.insert(bytes.end(), {1, 1});                           // scores, as many as tokens
    for (uint8_t i = 0; i < pieces; ++i) bytes.insert(bytes.end(), {static_cast<uint8_t>(i), 0});
    bytes.insert(bytes.end(), {1, 1});                           // token types, as many as tokens
    for (uint8_t i = 0; i < pieces; ++i) bytes.push_back(1);
    bytes.insert(bytes.end(), {0, 1, 1, 0, 1, 2, 0, 0, 0, 0, 0, 0});  // no merges; bos 1, eos 2
    bytes.insert(bytes.end(), text.begin(), text.end());
    return bytes;
  };
  Write(out / "llama", seed(1, 30, "Hello the a b\n\xC3\xA9 world"));
  Write(out / "gpt2", seed(2, 30, " the ab Hello <|endoftext|>"));
}

// kvrt batch request files: every field, defaults and a few mistakes.
void WriteBatchRequestSeeds(const fs::path& out) {
  const std::vector<std::string> files = {
      "{\"tokens\":[1,2,3],\"max_new_tokens\":4}\n{\"prompt\":\"Once upon\",\"greedy\":true,\"id\":\"a\"}\n",
      "{\"prompt\":\"--help\",\"temperature\":0.8,\"top_k\":5,\"seed\":7,\"max_new_tokens\":6}\n"
      "{\"tokens\":[5],\"rng_state\":\"0x1f\",\"temperature\":1.5,\"top_k\":40,\"eos\":3,\"arrival_step\":2}\n"
      "\n{\"prompt\":\"Once\\u0000 upon\",\"eos\":null,\"id\":9,\"max_new_tokens\":30}\n",
      "{\"tokens\":[1,2],\"no_eos\":true,\"temperature\":0,\"max_new_tokens\":2}\r\n{\"tokens\":[]}\n",
      "{\"tokens\":[1],\"prompt\":\"x\"}\n",
  };
  for (size_t i = 0; i < files.size(); ++i) {
    const std::string& text = files[i];
    Write(out / ("requests_" + std::to_string(i) + ".jsonl"), Bytes(text.begin(), text.end()));
  }
}

}  // namespace

// Slot-schedule fuzzer inputs (slots_fuzzer.cc): slots−1, precision bit, step
// rows−1, then operations (0–2 step: runs, each slot, phase bit, completes bit,
// prompt length, tokens; 3 reset slot; 4 truncate slot len; 5 fork from to).
void WriteSlotSeeds(const fs::path& out) {
  const std::vector<Bytes> seeds = {
      {1, 0, 11,
       0, 2, 0, 0, 1, 4, 1, 2, 3, 4, 1, 0, 0, 2, 5, 6,
       0, 2, 0, 1, 1, 7, 1, 0, 1, 3, 8, 9, 10,
       5, 0, 1, 4, 1, 3,
       0, 1, 1, 1, 1, 11,
       3, 0},
      {3, 1, 5,
       0, 3, 2, 0, 1, 5, 1, 1, 1, 1, 1, 0, 0, 1, 3, 9, 0, 0, 4, 4, 4, 4, 4,
       0, 2, 2, 1, 1, 2, 9, 0, 1, 2, 5, 5,
       0, 1, 9, 1, 1, 3},
  };
  for (size_t i = 0; i < seeds.size(); ++i) Write(out / ("ops_" + std::to_string(i)), seeds[i]);
}

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: fuzz_make_seeds <fixtures> <out>\n";
    return 2;
  }
  const fs::path fixtures = argv[1], out = argv[2];
  for (const char* target :
       {"checkpoint", "tokenizer", "session", "llama2c", "gguf", "slots", "gguf_tokenizer", "batch_requests"}) {
    fs::create_directories(out / target);
  }
  CopyCheckpoints(fixtures, out / "checkpoint");
  WriteTokenizerSeeds(fixtures, out / "tokenizer");
  WriteSessionSeeds(out / "session");
  WriteSlotSeeds(out / "slots");
  WriteGgufTokenizerSeeds(out / "gguf_tokenizer");
  WriteBatchRequestSeeds(out / "batch_requests");
  if (!WriteLlama2cSeeds(out / "llama2c")) {
    std::cerr << "fuzz_make_seeds: could not write the llama2c seeds\n";
    return 1;
  }
  if (!WriteGgufSeeds(out / "gguf")) {
    std::cerr << "fuzz_make_seeds: could not write the gguf seeds\n";
    return 1;
  }
  return 0;
}
