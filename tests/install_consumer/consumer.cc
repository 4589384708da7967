// Builds the seed-38 fixture model through the installed package, generates
// greedily with a KV-cached session, and checks the bit-exact first logit.
#include <kvrt/generation.h>
#include <kvrt/model.h>
#include <kvrt/reference.h>

#include <bit>
#include <cstdio>
#include <vector>

int main() {
  kvrt::SplitMix64 rng(38);
  auto model = kvrt::DecoderModel::FromSeed(kvrt::ModelConfig::Create(5, 4, 2, 4, 2, 4, 10000.0, 1e-6), rng);
  if (!model) return 1;
  const std::vector<uint32_t> prompt = {0, 1};
  auto logits = kvrt::LastLogitsCompletePrefix(*model, prompt);
  if (!logits || std::bit_cast<uint64_t>((*logits)[0]) != 0x3ffc4b42fea302b1ull) return 2;
  kvrt::GenerationConfig config;
  config.max_new_tokens = 2;
  kvrt::SplitMix64 sampling(7);
  auto run = kvrt::GenerateCached(*model, prompt, config, sampling);
  if (!run) return 3;
  std::printf("generated %zu tokens, stop %s\n", run->generated.size(),
              std::string(kvrt::GenerationStopName(run->stop)).c_str());
  return 0;
}
