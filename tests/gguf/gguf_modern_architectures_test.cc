// The qwen2 model (q/k/v biases, tied head, NEOX RoPE) and the Llama-3.1-style
// model (rope_freqs.weight, base 500000) of fixtures/gguf/modern against
// llama.cpp's logits and greedy continuations, on the fast f32 and reference f64
// engines; then the fast engine against the reference, across thread counts, and
// in batch slots against solo runs.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <memory>

#include "gguf_test_support.h"
#include "kvrt/threading/thread_pool.h"

namespace kvrt::gguf::testing {
namespace {

// f32 files: llama.cpp keeps float32 activations too, so only rounding separates
// it from kvrt (an f64 re-implementation lands within 2e-6, fixtures README §4).
// Quantized files: the bounds of the kq-* files for the same activation rounding.
inline constexpr FixtureType kArchitectureTypes[] = {
    {"qwen2_f32", 1e-4, "modern/qwen2-f32"},
    {"qwen2_q8_0", kQ8BlockBound, "modern/qwen2-q8_0"},
    {"qwen2_q4_k_m", kQ8SuperBlockBound, "modern/qwen2-q4_k_m"},
    {"llama31_f32", 1e-4, "modern/llama31-f32"},
    {"llama31_q4_k_m", kQ8SuperBlockBound, "modern/llama31-q4_k_m"}};

struct Models {
  DecoderModel dense;   // kDenseF64, for the reference engine
  DecoderModel panels;  // kPanelsF32, for the fast engine
};

const Models& LoadModels(const FixtureType& t) {
  static std::map<std::string, std::unique_ptr<Models>> cache;
  std::unique_ptr<Models>& slot = cache[t.stem];
  if (!slot) {
    Result<GgufFile> file = GgufFile::Open(ModelPath(t));
    EXPECT_TRUE(file) << file.error().Debug();
    Result<DecoderModel> dense = BuildLlamaModel(*file, ModelStorage::kDenseF64);
    EXPECT_TRUE(dense) << dense.error().Debug();
    Result<DecoderModel> panels = BuildLlamaModel(*file, ModelStorage::kPanelsF32);
    EXPECT_TRUE(panels) << panels.error().Debug();
    slot = std::make_unique<Models>(Models{std::move(*dense), std::move(*panels)});
  }
  return *slot;
}

bool IsF32(const FixtureType& t) { return std::string(t.type).ends_with("_f32"); }

EngineOptions Fast(threading::ThreadPool* pool = nullptr) {
  EngineOptions options{Backend::kFast, Precision::kF32, 0, nullptr};
  options.pool = pool;
  return options;
}
constexpr EngineOptions kReferenceF64{Backend::kReference, Precision::kF64, 0, nullptr};

bool SameBits(const Rows& a, const Rows& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].size() != b[i].size() || std::memcmp(a[i].data(), b[i].data(), a[i].size() * sizeof(double)) != 0) {
      return false;
    }
  }
  return true;
}

class ModernArchitecture : public ::testing::TestWithParam<FixtureType> {};

TEST_P(ModernArchitecture, LogitsMatchLlamaCppAndTheReference) {
  const FixtureType t = GetParam();
  KVRT_SKIP_FIXTURE_OUTSIDE_SANITIZER_SAMPLE(t);
  const Models& models = LoadModels(t);
  const nlohmann::json& json = LlamaCppLogits(t);
  for (const nlohmann::json& sequence : json["sequences"]) {
    const std::vector<uint32_t> tokens = Ids(sequence["tokens"]);
    const Rows fast = SessionLogits(models.panels, tokens, Fast());
    const Rows reference = SessionLogits(models.dense, tokens, kReferenceF64);
    ASSERT_EQ(fast.size(), tokens.size());
    ASSERT_EQ(reference.size(), tokens.size());
    const double fast_llama = CompareWithLlamaCpp(fast, sequence, json["cols"]);
    const double reference_llama = CompareWithLlamaCpp(reference, sequence, json["cols"]);
    const double fast_reference = MaxDifference(fast, reference);
    std::printf("[ gguf ] %-14s %s (%zu tokens): |fast f32 - llama.cpp| %.3g, |reference f64 - llama.cpp| %.3g, "
                "|fast f32 - reference f64| %.3g\n",
                t.type, sequence["name"].get<std::string>().c_str(), tokens.size(), fast_llama, reference_llama,
                fast_reference);
    EXPECT_LE(fast_llama, t.bound) << sequence["name"];
    EXPECT_LE(reference_llama, t.bound) << sequence["name"];
    EXPECT_LE(fast_reference, 1e-4) << sequence["name"];
  }
}

// f32: all 24 of llama.cpp's greedy tokens, free running. Quantized: fed
// llama.cpp's tokens, the same choice wherever its margin exceeds twice the bound.
TEST_P(ModernArchitecture, GreedyContinuationsEqualLlamaCpps) {
  const FixtureType t = GetParam();
  KVRT_SKIP_FIXTURE_OUTSIDE_SANITIZER_SAMPLE(t);
  const Models& models = LoadModels(t);
  const bool free_running = IsF32(t);
  for (const nlohmann::json& sequence : LlamaCppLogits(t)["sequences"]) {
    for (const auto& [model, engine] : {std::pair{&models.panels, Fast()}, std::pair{&models.dense, kReferenceF64}}) {
      ExpectGreedyFollowsLlamaCpp(*model, engine, sequence, t.type, t.bound, free_running);
    }
  }
}

// int8 activations (q8_0, q4_0 and K-quant weights) add the biases after the same
// fused product: within the bound of llama.cpp, which rounds activations the same way
// for q8_0 weights; for the K-quants it rounds them to q8_K super-blocks and kvrt to
// q8_0 blocks, two roundings whose bounds add (gguf_llama_cpp_test.cc).
TEST_P(ModernArchitecture, Int8ActivationsStayWithinTheBoundOfLlamaCpp) {
  const FixtureType t = GetParam();
  KVRT_SKIP_FIXTURE_OUTSIDE_SANITIZER_SAMPLE(t);
  if (std::string(t.type).ends_with("f32")) GTEST_SKIP() << "int8 activations serve quantized weights";
  const Models& models = LoadModels(t);
  const nlohmann::json& json = LlamaCppLogits(t);
  EngineOptions int8 = Fast();
  int8.int8_activations = true;
  for (const nlohmann::json& sequence : json["sequences"]) {
    const std::vector<uint32_t> tokens = Ids(sequence["tokens"]);
    const Rows ours = SessionLogits(models.panels, tokens, int8);
    const double int8_llama = CompareWithLlamaCpp(ours, sequence, json["cols"]);
    std::printf("[ gguf ] %-14s %s: int8 activations: |fast - llama.cpp| %.3g\n", t.type,
                sequence["name"].get<std::string>().c_str(), int8_llama);
    const bool same_rounding = std::string(t.type).ends_with("q8_0");
    EXPECT_LE(int8_llama, same_rounding ? t.bound : t.bound + kQ8BlockBound) << sequence["name"];
    EXPECT_FALSE(SameBits(ours, SessionLogits(models.panels, tokens, Fast())))
        << "the int8 activations did not reach the engine";
  }
}

// The whole prompt in one prefill, then every row by decode: the fast engine's
// logits are the same bits with 1, 2, 3 and 4 threads.
TEST_P(ModernArchitecture, OneToFourThreadsGiveTheSameBits) {
  const FixtureType t = GetParam();
  KVRT_SKIP_FIXTURE_OUTSIDE_SANITIZER_SAMPLE(t);
  const Models& models = LoadModels(t);
  const std::vector<uint32_t> tokens = Ids(LlamaCppLogits(t)["sequences"].back()["tokens"]);
  auto run = [&](threading::ThreadPool* pool) {
    DecoderKvCache cache = *DecoderKvCache::Create(models.panels, CacheOptions{});
    DecoderKvSession session = *Bind(cache, models.panels, Fast(pool));
    Rows rows;
    Result<StepOutput> step = session.Prefill(std::span(tokens).first(tokens.size() - 4));
    EXPECT_TRUE(step);
    rows.emplace_back(step->logits.begin(), step->logits.end());
    for (size_t i = tokens.size() - 4; i < tokens.size(); ++i) {
      step = session.Decode(tokens[i]);
      EXPECT_TRUE(step);
      rows.emplace_back(step->logits.begin(), step->logits.end());
    }
    return rows;
  };
  const Rows solo = run(nullptr);
  for (size_t threads = 2; threads <= 4; ++threads) {
    threading::ThreadPool pool(threads);
    EXPECT_TRUE(SameBits(run(&pool), solo)) << threads << " threads";
  }
}

// Three sequences side by side in batch slots (prefills in one step, then decodes
// together) give each one's solo logits bit for bit.
TEST_P(ModernArchitecture, BatchSlotsEqualSoloRuns) {
  const FixtureType t = GetParam();
  KVRT_SKIP_FIXTURE_OUTSIDE_SANITIZER_SAMPLE(t);
  const Models& models = LoadModels(t);
  const nlohmann::json& sequences = LlamaCppLogits(t)["sequences"];
  std::vector<std::vector<uint32_t>> prompts;
  for (const nlohmann::json& sequence : sequences) prompts.push_back(Ids(sequence["tokens"]));
  const size_t slots = prompts.size();
  constexpr size_t kDecodes = 3;
  // Solo: prefill, then the greedy-independent decodes of tokens 1, 2, 3.
  std::vector<Rows> solo(slots);
  for (size_t s = 0; s < slots; ++s) {
    DecoderKvCache cache = *DecoderKvCache::Create(models.panels, CacheOptions{});
    DecoderKvSession session = *Bind(cache, models.panels, Fast());
    Result<StepOutput> step = session.Prefill(prompts[s]);
    ASSERT_TRUE(step);
    solo[s].emplace_back(step->logits.begin(), step->logits.end());
    for (uint32_t token = 1; token <= kDecodes; ++token) {
      step = session.Decode(token);
      ASSERT_TRUE(step);
      solo[s].emplace_back(step->logits.begin(), step->logits.end());
    }
  }
  DecoderKvCache cache = *DecoderKvCache::Create(models.panels, CacheOptions{slots, 0, Precision::kF32});
  DecoderKvSession session = *Bind(cache, models.panels, Fast());
  const size_t v = models.panels.config().vocabulary_size;
  std::vector<SlotRun> runs;
  for (size_t s = 0; s < slots; ++s) runs.push_back({s, prompts[s], RunPhase::kPrefill, true});
  for (size_t round = 0; round <= kDecodes; ++round) {
    Result<SlotStepOutput> out = session.Step(runs);
    ASSERT_TRUE(out) << out.error().Debug();
    for (size_t s = 0; s < slots; ++s) {
      const std::span<const double> ours = out->logits.subspan(s * v, v);
      EXPECT_EQ(std::memcmp(ours.data(), solo[s][round].data(), v * sizeof(double)), 0)
          << "slot " << s << " step " << round;
    }
    static const uint32_t kTokens[] = {1, 2, 3};
    runs.clear();
    for (size_t s = 0; s < slots && round < kDecodes; ++s) {
      runs.push_back({s, std::span(kTokens).subspan(round, 1), RunPhase::kDecode, true});
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, ModernArchitecture, ::testing::ValuesIn(kArchitectureTypes),
                         [](const auto& test_param) { return std::string(test_param.param.type); });

}  // namespace
}  // namespace kvrt::gguf::testing
