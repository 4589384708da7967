#include "common.h"

#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "kvrt/weight_format.h"

namespace kvrt::cli {

int ReportError(const Error& error) {
  std::fprintf(stderr, "error: %s: %s\n", std::string(error.name()).c_str(), error.message().c_str());
  return kErrorStatus;
}

int ReportRegression(const std::string& what) {
  std::fprintf(stderr, "error: PerformanceRegression: %s\n", what.c_str());
  return kRegressionStatus;
}

size_t EngineThreads(const EngineOptions& engine) {
  return engine.backend == Backend::kFast && engine.pool != nullptr ? engine.pool->threads() : 1;
}

std::string DescribeEngineWeights(const Model& model, const EngineOptions& engine) {
  const std::vector<MatrixWeightFormat> plan = model.WeightPlan(engine.weights);
  std::string text = "weights " + std::string(WeightFormatName(engine.weights)) + ":";
  // Matrices per effective format, in the enum's order.
  for (const WeightFormat format : {WeightFormat::kF32, WeightFormat::kBf16, WeightFormat::kF16,
                                    WeightFormat::kQ8_0, WeightFormat::kQ4_0, WeightFormat::kQ4_K,
                                    WeightFormat::kQ6_K, WeightFormat::kQ5_K, WeightFormat::kQ5_0,
                                    WeightFormat::kQ3_K, WeightFormat::kIQ4_NL, WeightFormat::kIQ4_XS,
                                    WeightFormat::kQ4_1, WeightFormat::kQ5_1, WeightFormat::kQ2_K}) {
    size_t count = 0;
    for (const MatrixWeightFormat& matrix : plan) count += matrix.effective == format;
    if (count) text += " " + std::string(WeightFormatName(format)) + " x" + std::to_string(count);
  }
  if (engine.weights != WeightFormat::kAsStored &&
      (engine.backend == Backend::kReference || engine.precision == Precision::kF64)) {
    text += " (dequantized, computed in f64)";
  }
  if (engine.int8_activations) {
    // The types the int8-activation kernels take (simd/int8_activations.h).
    size_t int8 = 0;
    for (const MatrixWeightFormat& matrix : plan) int8 += ReachedByInt8Activations(matrix.effective);
    text += "; int8 activations on " + std::to_string(int8) + " quantized matrices";
  }
  if (engine.bf16_activations) {
    size_t bf16 = 0;
    for (const MatrixWeightFormat& matrix : plan) bf16 += matrix.effective == WeightFormat::kBf16;
    text += "; bf16 activations on " + std::to_string(bf16) + " bf16 matrices";
  }
  const std::string fallbacks = DescribeFallbacks(plan);
  text += fallbacks.empty() ? "; no fallbacks" : "; fallbacks: " + fallbacks;
  return text;
}

Result<void> CheckContextSize(const Model& model, uint64_t context_size) {
  const size_t positions = model.config().max_positions;
  if (context_size <= positions) return {};
  return std::unexpected(Error(ErrorCode::kCapacityExceedsPositions,
                               {{"capacity", context_size}, {"max_positions", uint64_t{positions}}},
                               "context size " + std::to_string(context_size) + " exceeds the model's context of " +
                                   std::to_string(positions) + " positions"));
}

namespace {

// --kv-type, or llama.cpp's --cache-type-k/-ctk and --cache-type-v/-ctv, which
// must agree: kvrt keeps keys and values in one type. "f32"/"f64" name the
// engine's own precision and must be it.
Result<KvType> KvTypeFromFlags(const Flags& flags, Precision precision) {
  std::optional<std::string> chosen;
  std::string chosen_by;
  for (const char* name : {"kv-type", "cache-type-k", "cache-type-v"}) {
    const std::optional<std::string> value = flags.Value(name);
    if (!value) continue;
    if (chosen && *value != *chosen) {
      return std::unexpected(InvalidArgument("--" + chosen_by + " " + *chosen + " and --" + name + " " + *value +
                                             " differ: kvrt keeps keys and values in one type"));
    }
    chosen = *value;
    chosen_by = name;
  }
  if (!chosen || *chosen == PrecisionName(precision)) return KvType::kEngine;
  if (*chosen == "f16") return KvType::kF16;
  if (*chosen == "bf16") return KvType::kBf16;
  if (*chosen == "q8_0") return KvType::kQ8_0;
  return std::unexpected(InvalidArgument("--" + chosen_by + " must be f16, bf16, q8_0 or the engine's precision (" +
                                         std::string(PrecisionName(precision)) + "), got '" + *chosen + "'"));
}

}  // namespace

Result<EngineChoice> EngineFromFlags(const Flags& flags) {
  EngineChoice choice;
  if (std::optional<std::string> weights = flags.Value("weights")) {
    const std::optional<WeightFormat> format = ParseWeightFormat(*weights);
    if (!format) {
      return std::unexpected(InvalidArgument(
          std::string("--weights must be ") + kWeightFormatChoices + ", got '" + *weights + "'"));
    }
    choice.options.weights = *format;
  }
  Result<uint64_t> rows = flags.Unsigned("max-rows-per-step", EngineOptions::kDefaultMaxRowsPerStep);
  if (!rows) return std::unexpected(rows.error());
  if (*rows == 0) return std::unexpected(InvalidArgument("--max-rows-per-step must be at least 1"));
  choice.options.max_rows_per_step = static_cast<size_t>(*rows);
  const std::string backend = flags.Value("backend").value_or("fast");
  const std::string precision = flags.Value("precision").value_or(backend == "reference" ? "f64" : "f32");
  choice.options.batch_invariant = !flags.Has("batch-variant");
  choice.options.int8_activations = flags.Has("int8-activations");
  choice.options.bf16_activations = flags.Has("bf16-activations");
  if (backend == "reference") {
    if (flags.Has("batch-variant")) {
      return std::unexpected(InvalidArgument("--batch-variant needs --backend fast (the reference is exact)"));
    }
    if (flags.Has("int8-activations")) {
      return std::unexpected(Error(ErrorCode::kUnsupportedBackend, {{"", std::string("int8_activations")}},
                                   "--int8-activations needs --backend fast --precision f32"));
    }
    if (flags.Has("bf16-activations")) {
      return std::unexpected(Error(ErrorCode::kUnsupportedBackend, {{"", std::string("bf16_activations")}},
                                   "--bf16-activations needs --backend fast --precision f32"));
    }
    choice.options.backend = Backend::kReference;
    if (precision != "f64") {
      return std::unexpected(Error(ErrorCode::kUnsupportedBackend, {{"", precision}},
                                   "the reference backend computes in f64 only"));
    }
    choice.options.precision = Precision::kF64;
    Result<KvType> kv_type = KvTypeFromFlags(flags, choice.options.precision);
    if (!kv_type) return std::unexpected(kv_type.error());
    choice.options.kv_type = *kv_type;
    return choice;
  }
  if (backend != "fast") {
    return std::unexpected(Error(ErrorCode::kUnsupportedBackend, {{"", backend}},
                                 "unknown backend '" + backend + "' (available: fast, reference)"));
  }
  choice.options.backend = Backend::kFast;
  if (precision == "f32") {
    choice.options.precision = Precision::kF32;
  } else if (precision == "f64") {
    choice.options.precision = Precision::kF64;
    if (flags.Has("int8-activations")) {
      return std::unexpected(Error(ErrorCode::kUnsupportedBackend, {{"", std::string("int8_activations")}},
                                   "--int8-activations needs --precision f32"));
    }
    if (flags.Has("bf16-activations")) {
      return std::unexpected(Error(ErrorCode::kUnsupportedBackend, {{"", std::string("bf16_activations")}},
                                   "--bf16-activations needs --precision f32"));
    }
  } else {
    return std::unexpected(InvalidArgument("--precision must be f32 or f64, got '" + precision + "'"));
  }
  Result<KvType> kv_type = KvTypeFromFlags(flags, choice.options.precision);
  if (!kv_type) return std::unexpected(kv_type.error());
  choice.options.kv_type = *kv_type;
  const std::string kv_name(KvTypeName(choice.options.kv_type));
  if (IsCompactKvType(choice.options.kv_type) && choice.options.precision != Precision::kF32) {
    return std::unexpected(Error(ErrorCode::kUnsupportedBackend, {{"", kv_name}},
                                 "--kv-type " + kv_name + " needs --precision f32 on the fast backend"));
  }
  if (IsCompactKvType(choice.options.kv_type) && !choice.options.batch_invariant) {
    return std::unexpected(Error(ErrorCode::kUnsupportedBackend, {{"", kv_name}},
                                 "--kv-type " + kv_name + " needs batch-invariant attention (drop --batch-variant)"));
  }
  // 0: the pool's default, $KVRT_THREADS or every core.
  Result<uint64_t> flag = flags.Unsigned("threads", 0);
  if (!flag) return std::unexpected(flag.error());
  if (*flag > 1024) return std::unexpected(InvalidArgument("--threads must be at most 1024"));
  choice.pool = std::make_unique<threading::ThreadPool>(*flag);
  choice.options.pool = choice.pool.get();
  return choice;
}

}  // namespace kvrt::cli
