// kvrt/load_model.h: the library's model file, handed out as a Model.
#include "api/model_impl.h"
#include "formats/load_model.h"
#include "kvrt/load_model.h"

namespace kvrt {

Result<LoadedModel> LoadModel(const std::string& path) {
  Result<ModelFile> file = ReadModelFile(path);
  if (!file) return Fail(std::move(file.error()));
  return LoadedModel{file->format, WrapModel(std::move(file->model)), std::move(file->tokenizer),
                     file->sampling_rng_state, file->file_bytes};
}

}  // namespace kvrt
