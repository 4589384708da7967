// LLMCP35 reader (spec/checkpoint.md §9) on arbitrary bytes.
//
// Properties: ParseCheckpoint never crashes and either returns a typed error or
// accepts; an accepted file is canonical, so EncodeCheckpoint reproduces the
// input byte for byte, and its model builds. The built model then runs one
// cached prefill on both engines, which exercises the forward on whatever
// geometry the file declared (odd widths, zero layers, huge values).
#include <cstddef>
#include <algorithm>
#include <cstdint>
#include <span>
#include <vector>

#include "fuzz_check.h"
#include "formats/llmcp35/checkpoint.h"
#include "kv/decoder_kv_cache.h"
#include "model/rope.h"
#include "session/decoder_kv_session.h"

namespace kvrt::fuzz {
namespace {

// A file may legitimately declare a context of up to RopeTable::kMaxEntries
// table entries (a 6 KB file can ask for 4 GiB of RoPE tables, which is valid
// but would only measure the machine). Larger tables are skipped, not judged.
constexpr size_t kMaxFuzzedRopeEntries = size_t{1} << 20;

void PrefillOnce(const DecoderModel& model, EngineOptions engine) {
  CacheOptions options;
  options.precision = engine.precision;
  options.capacity = model.config().max_positions < 3 ? model.config().max_positions : 3;
  Result<DecoderKvCache> cache = DecoderKvCache::Create(model, options);
  if (!cache) {
    CheckTypedError(cache.error());
    return;
  }
  Result<DecoderKvSession> session = Bind(*cache, model, engine);
  KVRT_FUZZ_CHECK(session, Describe(session));
  const std::vector<uint32_t> prompt(options.capacity, 0);
  Result<StepOutput> step = session->Prefill(prompt);
  if (!step) {
    CheckTypedError(step.error());
    KVRT_FUZZ_CHECK(cache->len() == 0 && cache->work() == KvWork{}, step.error().Debug());
    return;
  }
  KVRT_FUZZ_CHECK(step->cache_len == prompt.size() && cache->len() == prompt.size(),
                  "prefill length");
}

void CheckAccepted(std::span<const uint8_t> bytes, const Checkpoint& checkpoint) {
  Result<std::vector<uint8_t>> encoded = EncodeCheckpoint(checkpoint);
  KVRT_FUZZ_CHECK(encoded, Describe(encoded));
  KVRT_FUZZ_CHECK(encoded->size() == bytes.size() &&
                      std::equal(encoded->begin(), encoded->end(), bytes.begin()),
                  "re-encoding differs from the accepted input");
  KVRT_FUZZ_CHECK(checkpoint.file_bytes == bytes.size(), "file_bytes");
  KVRT_FUZZ_CHECK(checkpoint.tokenizer.vocabulary_size() == checkpoint.config.vocabulary_size,
                  "tokenizer and decoder vocabularies differ");

  const ModelConfig& config = checkpoint.config;
  const size_t pairs = config.head_width() / 2 == 0 ? 1 : config.head_width() / 2;
  if (config.max_positions > kMaxFuzzedRopeEntries / pairs) return;
  Result<DecoderModel> model = checkpoint.BuildModel();
  KVRT_FUZZ_CHECK(model, Describe(model));
  KVRT_FUZZ_CHECK(model->config().SameAs(config), "model config");
  PrefillOnce(*model, ReferenceEngine());
  PrefillOnce(*model, EngineOptions{Backend::kFast, Precision::kF64, 0, nullptr});
  PrefillOnce(*model, EngineOptions{Backend::kFast, Precision::kF32, 0, nullptr});
}

// Parses `bytes` and checks whichever verdict comes back.
void ParseAndCheck(std::span<const uint8_t> bytes) {
  Result<Checkpoint> checkpoint = ParseCheckpoint(bytes);
  if (!checkpoint) return CheckTypedError(checkpoint.error());
  CheckAccepted(bytes, *checkpoint);
}

}  // namespace
}  // namespace kvrt::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::span<const uint8_t> bytes(data, size);
  kvrt::fuzz::ParseAndCheck(bytes);
  // Almost every mutation breaks the FNV-1a checksum (spec §3), which the reader
  // checks before the variable header; parse a copy with the checksum restored
  // too, so the validation behind it is fuzzed as well.
  constexpr size_t kChecksumAt = 30, kChecksumEnd = 38;
  if (size < kChecksumEnd) return 0;
  std::vector<uint8_t> fixed(data, data + size);
  const uint64_t checksum = kvrt::CheckpointChecksum(fixed);
  for (size_t i = kChecksumAt; i < kChecksumEnd; ++i) {
    fixed[i] = static_cast<uint8_t>(checksum >> (8 * (i - kChecksumAt)));
  }
  if (!std::equal(fixed.begin(), fixed.end(), data)) kvrt::fuzz::ParseAndCheck(fixed);
  return 0;
}
