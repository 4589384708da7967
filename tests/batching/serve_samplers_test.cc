// Serving requests with mixed sampler settings over the slots of one cache
// (ServeGenerations): every request's result — tokens, draws, log-probabilities,
// text, stop, RNG state — is bit-identical to its solo GenerateCached run, for
// 1 to 4 threads, several slot counts and prefill chunkings; and the solo runs
// themselves do not change with the thread count.
#include <gtest/gtest.h>

#include <bit>
#include <random>
#include <string>
#include <vector>

#include "generate/generate.h"
#include "kvrt/generation.h"
#include "kvrt/threading/thread_pool.h"
#include "kvrt/tokenizer.h"
#include "model/decoder_model.h"

namespace kvrt {
namespace {

constexpr size_t kVocabulary = 64;

DecoderModel ServingModel() {
  ModelConfig config = ModelConfig::Create(kVocabulary, 32, 4, 48, 2, 128, 10000.0, 1e-5);
  config.kv_heads = 2;
  SplitMix64 rng(2024);
  return *DecoderModel::FromSeed(config, rng);
}

Tokenizer Letters() {
  std::vector<std::string> pieces;
  for (size_t i = 0; i < kVocabulary; ++i) pieces.push_back(std::string(1, static_cast<char>('!' + i)));
  return *Tokenizer::Literal(pieces);
}

// Requests that differ in every setting: greedy and sampled, each sampler on
// or off, penalties with windows of their own, stops, end ids, log-probabilities.
std::vector<GenerationRequest> MixedRequests(std::mt19937_64& rng) {
  std::vector<GenerationRequest> requests;
  const Tokenizer letters = Letters();
  for (size_t i = 0; i < 10; ++i) {
    GenerationRequest request;
    const size_t length = 1 + rng() % 20;
    for (size_t t = 0; t < length; ++t) request.prompt.push_back(static_cast<uint32_t>(rng() % kVocabulary));
    GenerationConfig& config = request.config;
    switch (i % 3) {
      case 0: config.mode = SamplingMode::Greedy(); break;
      case 1: config.mode = SamplingMode::TemperatureTopK(0.5 + 0.1 * static_cast<double>(rng() % 10), 1 + rng() % 40); break;
      default: config.mode = SamplingMode::Temperature(0.7 + 0.1 * static_cast<double>(rng() % 6)); break;
    }
    if (rng() % 2) config.sampler.top_p = 0.8 + 0.02 * static_cast<double>(rng() % 10);
    if (rng() % 2) config.sampler.min_p = 0.01 * static_cast<double>(rng() % 10);
    if (rng() % 3 == 0) config.sampler.typical_p = 0.9;
    if (rng() % 2) {
      config.sampler.repetition_penalty = 1.0 + 0.05 * static_cast<double>(rng() % 8);
      config.sampler.presence_penalty = 0.1 * static_cast<double>(rng() % 4);
      config.sampler.frequency_penalty = 0.05 * static_cast<double>(rng() % 4);
      config.sampler.penalty_last_n = rng() % 2 ? -1 : static_cast<int64_t>(1 + rng() % 16);
    }
    if (rng() % 3 == 0) config.sampler.logit_bias = {{static_cast<uint32_t>(rng() % kVocabulary), 2.0}};
    if (rng() % 2) config.top_logprobs = rng() % 5;
    config.tokenizer = letters;
    if (rng() % 2) config.stop = {std::string(1, static_cast<char>('!' + rng() % kVocabulary))};
    if (rng() % 4 == 0) config.end_of_generation = {static_cast<uint32_t>(rng() % kVocabulary)};
    config.max_new_tokens = 4 + rng() % 24;
    request.rng_state = rng();
    request.arrival_step = rng() % 3 == 0 ? rng() % 10 : 0;
    requests.push_back(std::move(request));
  }
  return requests;
}

EngineOptions Fast(threading::ThreadPool& pool) {
  EngineOptions engine;
  engine.pool = &pool;
  return engine;
}

std::string Difference(const GenerationResult& a, const GenerationResult& b) {
  const auto bits = [](std::optional<double> v) { return v ? std::bit_cast<uint64_t>(*v) : ~uint64_t{0}; };
  if (a.generated != b.generated) return "tokens";
  if (a.stop != b.stop) return "stop";
  if (a.text != b.text) return "text";
  if (a.top_logprobs != b.top_logprobs) return "top logprobs";
  if (a.final_cache_len != b.final_cache_len || !(a.work == b.work)) return "cache or work";
  for (size_t i = 0; i < a.steps.size(); ++i) {
    if (bits(a.steps[i].unit_draw) != bits(b.steps[i].unit_draw) ||
        bits(a.steps[i].interval_start) != bits(b.steps[i].interval_start) ||
        bits(a.steps[i].logprob) != bits(b.steps[i].logprob)) {
      return "step " + std::to_string(i);
    }
  }
  return "";
}

TEST(ServeSamplersTest, MixedSamplerSettingsServedTogetherEqualTheirSoloRunsForOneToFourThreads) {
  const DecoderModel model = ServingModel();
  std::mt19937_64 rng(99);
  const std::vector<GenerationRequest> requests = MixedRequests(rng);
  std::vector<GenerationResult> solo_one_thread;
  for (size_t threads = 1; threads <= 4; ++threads) {
    threading::ThreadPool pool(threads);
    std::vector<GenerationResult> solo;
    for (const GenerationRequest& request : requests) {
      SplitMix64 request_rng(request.rng_state);
      Result<GenerationResult> alone = GenerateCached(model, request.prompt, request.config, request_rng, Fast(pool));
      ASSERT_TRUE(alone) << alone.error().message();
      solo.push_back(std::move(*alone));
    }
    if (threads == 1) {
      solo_one_thread = solo;
    } else {
      for (size_t i = 0; i < requests.size(); ++i) {
        EXPECT_EQ(Difference(solo[i], solo_one_thread[i]), "") << threads << " threads, request " << i;
      }
    }
    for (const size_t slots : {1u, 3u, 4u}) {
      ServeOptions options;
      options.slots = slots;
      options.engine = Fast(pool);
      options.prefill_chunk = slots == 3 ? 5 : 0;
      Result<std::vector<ServedGeneration>> served = ServeGenerations(model, requests, options);
      ASSERT_TRUE(served);
      for (size_t i = 0; i < requests.size(); ++i) {
        const ServedGeneration& out = (*served)[i];
        ASSERT_FALSE(out.error) << out.error->message();
        EXPECT_EQ(Difference(out.result, solo[i]), "")
            << threads << " threads, " << slots << " slots, request " << i;
        SplitMix64 replay(requests[i].rng_state);
        for (const GenerationStep& step : solo[i].steps) {
          if (step.unit_draw) replay.NextU64();
        }
        EXPECT_EQ(out.final_rng_state, replay.state());
      }
    }
  }
}

TEST(ServeSamplersTest, ARequestWiderThanTheSlotsFailsAloneAndTheOthersRun) {
  const DecoderModel model = ServingModel();
  std::vector<GenerationRequest> requests(2);
  for (GenerationRequest& request : requests) {
    request.prompt = {1, 2, 3};
    request.config.max_new_tokens = 4;
  }
  requests[0].config.context_size = 40;  // the slots hold 32
  requests[1].config.context_size = 32;
  ServeOptions options;
  options.slots = 2;
  options.capacity = 32;
  options.engine.threads = 1;
  Result<std::vector<ServedGeneration>> served = ServeGenerations(model, requests, options);
  ASSERT_TRUE(served);
  ASSERT_TRUE((*served)[0].error);
  EXPECT_EQ((*served)[0].error->code(), ErrorCode::kCapacityExceedsPositions);
  ASSERT_FALSE((*served)[1].error);
  EXPECT_EQ((*served)[1].result.generated.size(), 4u);
}

}  // namespace
}  // namespace kvrt
