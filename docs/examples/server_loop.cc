// server_loop [MODEL]: a small serving loop over the sequence slots of one cache
// (docs/batching.md). Requests wait in a queue; each step admits waiting
// requests into free slots, feeds prompts in chunks beside the other slots'
// decode tokens, samples one token for every slot whose prompt is complete, and
// frees a slot when its request is done. Then it checks what batch invariance
// promises: every request's tokens equal GenerateCached's for it alone.
// Without MODEL it serves a small seeded model. Built and run by a test.
#include <kvrt/generation.h>
#include <kvrt/load_model.h>
#include <kvrt/sampling.h>
#include <kvrt/session.h>

#include <algorithm>
#include <cstdio>
#include <deque>
#include <optional>
#include <string>
#include <vector>

namespace {

int PrintError(const kvrt::Error& error) {
  std::fprintf(stderr, "error: %s: %s\n", std::string(error.name()).c_str(), error.message().c_str());
  return 1;
}

struct Request {
  std::vector<uint32_t> prompt;
  size_t max_new_tokens = 0;
  uint64_t seed = 0;
};

// What a slot holds while it serves a request.
struct Slot {
  size_t request = 0;
  size_t fed = 0;                 // prompt tokens already in the cache
  std::vector<uint32_t> tokens;   // generated so far
  kvrt::SplitMix64 rng{0};
};

}  // namespace

int main(int argc, char** argv) {
  std::optional<kvrt::Model> model;
  if (argc == 2) {
    kvrt::Result<kvrt::LoadedModel> loaded = kvrt::LoadModel(argv[1]);
    if (!loaded) return PrintError(loaded.error());
    model.emplace(std::move(loaded->model));
  } else {
    kvrt::SplitMix64 seed(7);
    kvrt::Result<kvrt::Model> seeded = kvrt::Model::FromSeed(
        kvrt::ModelConfig::Create(64, 32, 2, 48, 2, 128, 10000.0, 1e-5), seed);
    if (!seeded) return PrintError(seeded.error());
    model.emplace(std::move(*seeded));
  }
  const size_t vocabulary = model->config().vocabulary_size;

  std::vector<Request> requests;
  for (size_t i = 0; i < 6; ++i) {
    Request request;
    for (size_t t = 0; t < 3 + 7 * i; ++t) request.prompt.push_back(static_cast<uint32_t>((5 * t + i) % vocabulary));
    request.max_new_tokens = 4 + i;
    request.seed = 100 + i;
    requests.push_back(request);
  }
  const kvrt::SamplingMode mode = kvrt::SamplingMode::TemperatureTopK(0.9, 10);

  // Three slots for six requests: the later ones wait for a slot to free up.
  kvrt::SessionOptions options;  // the fast engine, f32, on every core
  options.batch_size = 3;
  kvrt::Result<kvrt::Session> session = kvrt::Session::Open(*model, options);
  if (!session) return PrintError(session.error());

  std::deque<size_t> waiting = {0, 1, 2, 3, 4, 5};
  std::vector<std::optional<Slot>> slots(3);
  std::vector<std::vector<uint32_t>> served(requests.size());
  constexpr size_t kChunk = 8;  // prompt tokens per slot per step
  while (!waiting.empty() || std::any_of(slots.begin(), slots.end(), [](auto& s) { return s.has_value(); })) {
    for (std::optional<Slot>& slot : slots) {  // admission
      if (!slot && !waiting.empty()) {
        slot = Slot{waiting.front(), 0, {}, kvrt::SplitMix64(requests[waiting.front()].seed)};
        waiting.pop_front();
      }
    }
    std::vector<kvrt::SlotRun> runs;
    for (size_t s = 0; s < slots.size(); ++s) {
      if (!slots[s]) continue;
      Slot& slot = *slots[s];
      const std::vector<uint32_t>& prompt = requests[slot.request].prompt;
      if (slot.fed < prompt.size()) {  // a prompt chunk
        const size_t n = std::min(kChunk, prompt.size() - slot.fed);
        runs.push_back({s, std::span(prompt).subspan(slot.fed, n), kvrt::RunPhase::kPrefill,
                        slot.fed + n == prompt.size()});
        slot.fed += n;
      } else {  // the last sampled token
        runs.push_back({s, std::span(slot.tokens).last(1), kvrt::RunPhase::kDecode, true});
      }
    }
    kvrt::Result<kvrt::SlotStepOutput> step = session->Step(runs);
    if (!step) return PrintError(step.error());  // nothing advanced: the step could be retried
    for (size_t r = 0; r < runs.size(); ++r) {
      Slot& slot = *slots[runs[r].slot];
      if (runs[r].phase == kvrt::RunPhase::kPrefill && !runs[r].completes_prompt) continue;
      kvrt::Result<kvrt::TokenSelection> next =
          kvrt::SampleNextToken(step->logits.subspan(r * vocabulary, vocabulary), mode, slot.rng);
      if (!next) return PrintError(next.error());
      slot.tokens.push_back(next->token_id);
      if (slot.tokens.size() == requests[slot.request].max_new_tokens) {  // done: free the slot
        served[slot.request] = slot.tokens;
        if (kvrt::Result<void> reset = session->ResetSlot(runs[r].slot); !reset) return PrintError(reset.error());
        slots[runs[r].slot].reset();
      }
    }
  }

  // Batch invariance: each request alone gives the same tokens.
  for (size_t i = 0; i < requests.size(); ++i) {
    kvrt::GenerationConfig config;
    config.mode = mode;
    config.max_new_tokens = requests[i].max_new_tokens;
    kvrt::SplitMix64 rng(requests[i].seed);
    kvrt::Result<kvrt::GenerationResult> alone =
        kvrt::GenerateCached(*model, requests[i].prompt, config, rng, options.engine);
    if (!alone) return PrintError(alone.error());
    if (alone->generated != served[i]) {
      std::fprintf(stderr, "request %zu: served tokens differ from its solo run\n", i);
      return 1;
    }
  }
  std::printf("served %zu requests over %zu slots; each equals its solo run\n", requests.size(), slots.size());
  return 0;
}
