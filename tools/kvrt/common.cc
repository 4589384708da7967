#include "common.h"

#include <cstdio>
#include <cstdlib>


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

Result<EngineChoice> EngineFromFlags(const Flags& flags) {
  EngineChoice choice;
  const std::string backend = flags.Value("backend").value_or("fast");
  const std::string precision = flags.Value("precision").value_or(backend == "reference" ? "f64" : "f32");
  if (backend == "reference") {
    choice.options.backend = Backend::kReference;
    if (precision != "f64") {
      return std::unexpected(Error(ErrorCode::kUnsupportedBackend, {{"", precision}},
                                   "the reference backend computes in f64 only"));
    }
    choice.options.precision = Precision::kF64;
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
  } else {
    return std::unexpected(InvalidArgument("--precision must be f32 or f64, got '" + precision + "'"));
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
