#include "common.h"

#include <cstdio>
#include <cstdlib>

#include "kvrt/llama2c.h"

namespace kvrt::cli {

int ReportError(const Error& error) {
  std::fprintf(stderr, "error: %s: %s\n", std::string(error.name()).c_str(), error.message().c_str());
  return kErrorStatus;
}

Result<LoadedModel> LoadModel(const std::string& path) {
  Result<ModelFileFormat> format = DetectModelFileFormat(path);
  if (!format) return std::unexpected(format.error());
  if (*format == ModelFileFormat::kLlama2c) {
    // A llama2.c file holds only the model: no tokenizer (see --tokenizer), no
    // optimizer, sampling state 0.
    Result<DecoderModel> model = LoadLlama2cModel(path);
    if (!model) return std::unexpected(model.error());
    Checkpoint facts;
    facts.config = model->config();
    facts.file_bytes = *Llama2cFileBytes(model->config());
    return LoadedModel{std::move(facts), std::move(*model)};
  }
  Result<Checkpoint> checkpoint = LoadCheckpoint(path);
  if (!checkpoint) return std::unexpected(checkpoint.error());
  Result<DecoderModel> model = checkpoint->BuildModel();
  if (!model) return std::unexpected(model.error());
  return LoadedModel{std::move(*checkpoint), std::move(*model)};
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
