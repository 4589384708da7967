#include "common.h"

#include <cstdio>

namespace kvrt::cli {

int ReportError(const Error& error) {
  std::fprintf(stderr, "error: %s: %s\n", std::string(error.name()).c_str(), error.message().c_str());
  return kErrorStatus;
}

Result<LoadedModel> LoadModel(const std::string& path) {
  Result<Checkpoint> checkpoint = LoadCheckpoint(path);
  if (!checkpoint) return std::unexpected(checkpoint.error());
  Result<DecoderModel> model = checkpoint->BuildModel();
  if (!model) return std::unexpected(model.error());
  return LoadedModel{std::move(*checkpoint), std::move(*model)};
}

Result<EngineOptions> EngineOptionsFromFlags(const Flags& flags) {
  EngineOptions options;
  const std::string backend = flags.Value("backend").value_or("reference");
  if (backend == "reference") {
    options.backend = Backend::kReference;
    options.precision = Precision::kF64;
  } else {
    return std::unexpected(Error(ErrorCode::kUnsupportedBackend, {{"", backend}},
                                 "unknown backend '" + backend + "' (available: reference)"));
  }
  return options;
}

}  // namespace kvrt::cli
