// The K-quant mixes choose llama-quantize's type for every matrix: each fixture that
// llama-quantize b4747 made from kq-f32.gguf (and the Llama 3.1 / Qwen2 ones from
// their f32 files) holds, tensor by tensor, the type KQuantMixType names. The
// fixtures have two layers, so the rules that count layers (use_more_bits, the first
// eighth or sixteenth) are also checked on the layer counts of real models.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <optional>
#include <string>
#include <vector>

#include "formats/gguf/gguf_file.h"
#include "formats/gguf/tensor_types.h"
#include "gguf_test_support.h"
#include "weights/k_quant_mix.h"

namespace kvrt::gguf::testing {
namespace {

using detail::KQuantMix;
using detail::KQuantMixType;
using detail::MixMatrix;
using detail::MixModel;
using detail::MixTensorType;

struct MixFixture {
  const char* file;
  KQuantMix mix;
};

// The matrix a GGUF tensor name stands for, and its layer; nullopt for gains and biases.
std::optional<std::pair<MixMatrix, size_t>> MatrixOf(std::string_view name) {
  if (name == "token_embd.weight") return std::pair{MixMatrix::kTokenTable, size_t{0}};
  if (name == "output.weight") return std::pair{MixMatrix::kHead, size_t{0}};
  constexpr std::pair<std::string_view, MixMatrix> kBlockMatrices[] = {
      {"attn_q.weight", MixMatrix::kQuery},   {"attn_k.weight", MixMatrix::kKey},
      {"attn_v.weight", MixMatrix::kValue},   {"attn_output.weight", MixMatrix::kAttentionOutput},
      {"ffn_gate.weight", MixMatrix::kGate},  {"ffn_up.weight", MixMatrix::kUp},
      {"ffn_down.weight", MixMatrix::kDown}};
  if (!name.starts_with("blk.")) return std::nullopt;
  const size_t dot = name.find('.', 4);
  const size_t layer = std::stoul(std::string(name.substr(4, dot - 4)));
  for (const auto& [suffix, matrix] : kBlockMatrices) {
    if (name.substr(dot + 1) == suffix) return std::pair{matrix, layer};
  }
  return std::nullopt;
}

std::string Lower(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}

class KQuantMixFixtureTest : public ::testing::TestWithParam<MixFixture> {};

TEST_P(KQuantMixFixtureTest, EveryMatrixHasTheTypeLlamaQuantizeGaveIt) {
  Result<GgufFile> file = GgufFile::Open(FixturePath(std::string("modern/") + GetParam().file));
  ASSERT_TRUE(file) << file.error().Debug();
  Result<std::string_view> arch = file->Get<std::string_view>("general.architecture");
  ASSERT_TRUE(arch);
  const std::string prefix(*arch);
  MixModel model;
  model.layers = *file->Get<size_t>(prefix + ".block_count");
  model.heads = *file->Get<size_t>(prefix + ".attention.head_count");
  model.kv_heads = *file->Get<size_t>(prefix + ".attention.head_count_kv");
  model.head_is_token_table = file->FindTensor("output.weight") == nullptr;
  size_t matrices = 0;
  for (const TensorInfo& tensor : file->tensors()) {
    const auto matrix = MatrixOf(tensor.name);
    if (!matrix) continue;
    const MixTensorType chosen = KQuantMixType(GetParam().mix, matrix->first, matrix->second, tensor.ne[0], model);
    EXPECT_EQ(detail::MixTensorTypeName(chosen), Lower(GgmlTypeName(tensor.type))) << tensor.name;
    ++matrices;
  }
  EXPECT_EQ(matrices, 7 * model.layers + (model.head_is_token_table ? 1 : 2));
}

INSTANTIATE_TEST_SUITE_P(Fixtures, KQuantMixFixtureTest,
                         ::testing::Values(MixFixture{"kq-q2_k.gguf", KQuantMix::kQ2_K},
                                           MixFixture{"kq-q3_k_m.gguf", KQuantMix::kQ3_K_M},
                                           MixFixture{"kq-q4_k_s.gguf", KQuantMix::kQ4_K_S},
                                           MixFixture{"kq-q4_k_m.gguf", KQuantMix::kQ4_K_M},
                                           MixFixture{"kq-q5_k_m.gguf", KQuantMix::kQ5_K_M},
                                           MixFixture{"kq-q6_k.gguf", KQuantMix::kQ6_K},
                                           MixFixture{"llama31-q4_k_m.gguf", KQuantMix::kQ4_K_M},
                                           MixFixture{"qwen2-q4_k_m.gguf", KQuantMix::kQ4_K_M}));

// Layers whose matrix gets a type other than the mix's default, of `layers`.
std::vector<size_t> LayersWith(KQuantMix mix, MixMatrix matrix, MixTensorType type, const MixModel& model) {
  std::vector<size_t> layers;
  for (size_t layer = 0; layer < model.layers; ++layer) {
    if (KQuantMixType(mix, matrix, layer, 4096, model) == type) layers.push_back(layer);
  }
  return layers;
}

TEST(KQuantMixTest, Q4_K_MGivesHalfOfTheValueAndDownProjectionsOf32LayersQ6_K) {
  // llama.cpp's use_more_bits on 32 layers (Llama 2 7B): the first and last four,
  // and every third from layer 6.
  const MixModel model{.layers = 32, .heads = 32, .kv_heads = 32};
  const std::vector<size_t> expected = {0, 1, 2, 3, 6, 9, 12, 15, 18, 21, 24, 27, 28, 29, 30, 31};
  EXPECT_EQ(LayersWith(KQuantMix::kQ4_K_M, MixMatrix::kValue, MixTensorType::kQ6_K, model), expected);
  EXPECT_EQ(LayersWith(KQuantMix::kQ4_K_M, MixMatrix::kDown, MixTensorType::kQ6_K, model), expected);
  EXPECT_EQ(LayersWith(KQuantMix::kQ5_K_M, MixMatrix::kDown, MixTensorType::kQ6_K, model), expected);
  EXPECT_TRUE(LayersWith(KQuantMix::kQ4_K_M, MixMatrix::kQuery, MixTensorType::kQ6_K, model).empty());
}

TEST(KQuantMixTest, TheFirstLayersGetMoreBitsInTheSmallMixes) {
  const MixModel model{.layers = 32, .heads = 32, .kv_heads = 8};
  // Q3_K_M: the first two value projections and the first 32/16 down projections q5_k.
  EXPECT_EQ(LayersWith(KQuantMix::kQ3_K_M, MixMatrix::kValue, MixTensorType::kQ5_K, model),
            (std::vector<size_t>{0, 1}));
  EXPECT_EQ(LayersWith(KQuantMix::kQ3_K_M, MixMatrix::kDown, MixTensorType::kQ5_K, model),
            (std::vector<size_t>{0, 1}));
  EXPECT_EQ(LayersWith(KQuantMix::kQ3_K_M, MixMatrix::kDown, MixTensorType::kQ4_K, model).size(), 30u);
  // Q4_K_S: the first four value projections and the first 32/8 down projections q5_k.
  EXPECT_EQ(LayersWith(KQuantMix::kQ4_K_S, MixMatrix::kValue, MixTensorType::kQ5_K, model),
            (std::vector<size_t>{0, 1, 2, 3}));
  EXPECT_EQ(LayersWith(KQuantMix::kQ4_K_S, MixMatrix::kDown, MixTensorType::kQ5_K, model),
            (std::vector<size_t>{0, 1, 2, 3}));
  // Q2_K: with four query heads per key/value head the value projections are q4_k.
  EXPECT_EQ(LayersWith(KQuantMix::kQ2_K, MixMatrix::kValue, MixTensorType::kQ4_K, model).size(), 32u);
}

TEST(KQuantMixTest, A70BModelsValueProjectionsGetQ5_K) {
  const MixModel llama70b{.layers = 80, .heads = 64, .kv_heads = 8};
  // Layer 11 of 80 is not one of use_more_bits' (the first ten, the last ten, every third between).
  EXPECT_EQ(KQuantMixType(KQuantMix::kQ4_K_M, MixMatrix::kValue, 11, 8192, llama70b), MixTensorType::kQ5_K);
  EXPECT_EQ(KQuantMixType(KQuantMix::kQ4_K_M, MixMatrix::kValue, 0, 8192, llama70b), MixTensorType::kQ6_K);
  const MixModel llama65b{.layers = 80, .heads = 64, .kv_heads = 64};
  EXPECT_EQ(KQuantMixType(KQuantMix::kQ4_K_M, MixMatrix::kValue, 11, 8192, llama65b), MixTensorType::kQ4_K);
}

TEST(KQuantMixTest, RowsThatNoBlockDividesFallBackAsLlamaCppDoes) {
  const MixModel model{.layers = 8, .heads = 8, .kv_heads = 8};
  // K = 1376 (llama2.c's 42M hidden width): 43 blocks of 32, not a multiple of 256.
  EXPECT_EQ(KQuantMixType(KQuantMix::kQ4_K_M, MixMatrix::kDown, 1, 1376, model), MixTensorType::kQ5_0);
  EXPECT_EQ(KQuantMixType(KQuantMix::kQ4_K_M, MixMatrix::kDown, 0, 1376, model), MixTensorType::kQ8_0);
  EXPECT_EQ(KQuantMixType(KQuantMix::kQ5_K_M, MixMatrix::kDown, 1, 1376, model), MixTensorType::kQ5_1);
  EXPECT_EQ(KQuantMixType(KQuantMix::kQ3_K_M, MixMatrix::kGate, 1, 1376, model), MixTensorType::kIQ4_NL);
  // The head of a width that is not a multiple of 256 is q8_0, of one not a multiple of 32 f16.
  EXPECT_EQ(KQuantMixType(KQuantMix::kQ4_K_M, MixMatrix::kHead, 0, 288, model), MixTensorType::kQ8_0);
  EXPECT_EQ(KQuantMixType(KQuantMix::kQ4_K_M, MixMatrix::kHead, 0, 100, model), MixTensorType::kF16);
  EXPECT_EQ(KQuantMixType(KQuantMix::kQ4_K_M, MixMatrix::kQuery, 0, 100, model), MixTensorType::kF16);
}

}  // namespace
}  // namespace kvrt::gguf::testing
