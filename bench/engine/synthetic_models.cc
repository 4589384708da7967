#include "synthetic_models.h"

#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>

namespace kvrt::bench {

const std::vector<ModelShape>& TinyStoriesShapes() {
  static const std::vector<ModelShape> shapes = {
      {"15M", 288, 6, 6, 768, 32000, 1024},
      {"42M", 512, 8, 8, 1376, 32000, 1024},
      {"110M", 768, 12, 12, 2048, 32000, 1024},
  };
  return shapes;
}

const ModelShape& ShapeNamed(const std::string& name) {
  for (const ModelShape& shape : TinyStoriesShapes()) {
    if (name == shape.name) return shape;
  }
  throw std::invalid_argument("unknown model shape " + name);
}

const DecoderModel& SyntheticModel(const ModelShape& shape) {
  static std::mutex mutex;
  static std::map<std::string, std::unique_ptr<DecoderModel>> models;
  std::lock_guard<std::mutex> lock(mutex);
  std::unique_ptr<DecoderModel>& slot = models[shape.name];
  if (!slot) {
    const ModelConfig config = ModelConfig::Create(shape.vocab, shape.dim, shape.heads, shape.ffn, shape.layers,
                                                   shape.context, 10000.0, 1e-5);
    SplitMix64 rng(1);
    Result<DecoderModel> model = DecoderModel::FromSeed(config, rng, ModelStorage::kPanelsF32);
    if (!model) throw std::runtime_error(model.error().message());
    slot = std::make_unique<DecoderModel>(std::move(*model));
  }
  return *slot;
}

double ParameterCount(const DecoderModel& model) {
  double count = 0;
  for (const ParameterPtr& parameter : model.parameters()) count += static_cast<double>(parameter->element_count());
  return count;
}

double WeightBytesPerToken(const DecoderModel& model) { return 4.0 * ParameterCount(model); }

std::vector<uint32_t> PromptTokens(size_t n, size_t vocabulary) {
  std::vector<uint32_t> tokens(n);
  SplitMix64 rng(7);
  for (uint32_t& token : tokens) token = static_cast<uint32_t>(rng.NextU64() % vocabulary);
  return tokens;
}

}  // namespace kvrt::bench
