// Uses the installed package the way an embedder does: a seeded model, the
// bit-exact reference engine on an explicit cache (the first logit must carry
// the reference crate's bits), then a session that owns its cache on the
// default fast f32 engine, the same engine on a oneTBB arena of the embedder's
// (the same bits as on one thread), then the generation loop.
#include <kvrt/generation.h>
#include <kvrt/model.h>
#include <kvrt/session.h>
#include <kvrt/threading/tbb_arena.h>
#include <oneapi/tbb/task_arena.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <vector>

int main() {
  kvrt::SplitMix64 rng(38);
  auto model = kvrt::Model::FromSeed(kvrt::ModelConfig::Create(5, 4, 2, 4, 2, 4, 10000.0, 1e-6), rng);
  if (!model) return 1;
  const std::vector<uint32_t> prompt = {0, 1};

  auto cache = kvrt::KvCache::Create(*model, kvrt::CacheOptions{.precision = kvrt::Precision::kF64});
  if (!cache) return 2;
  auto exact = kvrt::Session::Bind(*cache, *model, kvrt::ReferenceEngine());
  if (!exact) return 2;
  auto logits = exact->Prefill(prompt);
  if (!logits || std::bit_cast<uint64_t>(logits->logits[0]) != 0x3ffc4b42fea302b1ull) return 2;

  auto fast = kvrt::Session::Open(*model);  // fast f32, the cache follows its precision
  if (!fast) return 3;
  auto fast_logits = fast->Prefill(prompt);
  if (!fast_logits || std::fabs(fast_logits->logits[0] - logits->logits[0]) > 1e-4) return 3;

  // The embedder's own arena: kvrt's loops run on its threads, with the same bits.
  tbb::task_arena arena(2);
  auto pool = kvrt::threading::PoolOnArena(arena);
  auto serial_cache = kvrt::KvCache::Create(*model, kvrt::CacheOptions{.precision = kvrt::Precision::kF32});
  auto arena_cache = kvrt::KvCache::Create(*model, kvrt::CacheOptions{.precision = kvrt::Precision::kF32});
  if (!serial_cache || !arena_cache || pool->threads() != 2) return 5;
  kvrt::EngineOptions calling_thread;
  calling_thread.threads = 1;
  kvrt::EngineOptions on_host_arena;
  on_host_arena.pool = pool.get();
  auto serial = kvrt::Session::Bind(*serial_cache, *model, calling_thread);
  auto on_arena = kvrt::Session::Bind(*arena_cache, *model, on_host_arena);
  if (!serial || !on_arena) return 5;
  auto serial_logits = serial->Prefill(prompt);
  auto arena_logits = on_arena->Prefill(prompt);
  if (!serial_logits || !arena_logits || !std::ranges::equal(serial_logits->logits, arena_logits->logits)) return 5;

  kvrt::GenerationConfig config;
  config.max_new_tokens = 2;
  kvrt::SplitMix64 sampling(7);
  auto run = kvrt::GenerateCached(*model, prompt, config, sampling);
  if (!run) return 4;
  std::printf("generated %zu tokens, stop %s\n", run->generated.size(),
              std::string(kvrt::GenerationStopName(run->stop)).c_str());
  return 0;
}
