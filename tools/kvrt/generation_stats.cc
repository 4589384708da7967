#include "generation_stats.h"

#include <string>

#include "build_facts.h"
#include "common.h"

namespace kvrt::cli {
namespace {

double PerSecond(double count, double seconds) { return seconds > 0.0 ? count / seconds : 0.0; }

}  // namespace

// What one K/V element is stored as: the engine's precision, f16/bf16/q8_0 on an
// f32 engine, or f64 holding such values on an f64 one (the reference's oracle).
std::string KvStorageName(const EngineOptions& engine) {
  if (!IsCompactKvType(engine.kv_type)) return std::string(PrecisionName(engine.precision));
  const std::string type(KvTypeName(engine.kv_type));
  return engine.precision == Precision::kF32 ? type : type + " values as f64";
}

size_t KvCacheBytes(const ModelConfig& config, const EngineOptions& engine, size_t positions) {
  return positions * KvBytesPerPosition(config, engine.precision, engine.kv_type);
}

void PrintGenerationStats(std::FILE* out, const Model& model, const EngineOptions& engine,
                          double load_seconds, const GenerationResult& run,
                          const GenerationClock& clock, bool cached, size_t positions) {
  const ModelConfig& config = model.config();
  const std::string backend(BackendName(engine.backend)), precision(PrecisionName(engine.precision));
  std::fprintf(out, "kvrt: load %.3f s; engine %s %s; %s; %s\n", load_seconds, backend.c_str(), precision.c_str(),
               DescribeEngineWeights(model, engine).c_str(),
               BuildFactsLine(CurrentBuildFacts(EngineThreads(engine))).c_str());
  std::fprintf(out, "kvrt: stop: %s after %zu generated tokens\n", std::string(GenerationStopName(run.stop)).c_str(),
               run.generated.size());
  if (!cached) {
    std::fprintf(out, "kvrt: uncached: %zu tokens in %.3f s, %.2f tokens/s (every step replays the prefix)\n",
                 run.generated.size(), clock.TotalSeconds(),
                 PerSecond(static_cast<double>(run.generated.size()), clock.TotalSeconds()));
    return;
  }
  const double kv_mib = static_cast<double>(KvCacheBytes(config, engine, positions)) / (1024.0 * 1024.0);
  std::fprintf(out, "kvrt: kv cache %.2f MiB (%zu layers x %zu positions x %zu kv width x 2, %s)\n", kv_mib,
               config.layers, positions, config.kv_width(), KvStorageName(engine).c_str());
  std::fprintf(out, "kvrt: prompt   %5zu tokens in %8.3f s, %10.2f tokens/s (prefill)\n", run.prompt.size(),
               clock.PrefillSeconds(), PerSecond(static_cast<double>(run.prompt.size()), clock.PrefillSeconds()));
  const double decodes = static_cast<double>(run.work.decode_tokens);
  std::fprintf(out, "kvrt: generated %4zu tokens, %zu decode steps in %8.3f s, %10.2f tokens/s (decode)\n",
               run.generated.size(), static_cast<size_t>(run.work.decode_tokens), clock.DecodeSeconds(),
               PerSecond(decodes, clock.DecodeSeconds()));
}

}  // namespace kvrt::cli
