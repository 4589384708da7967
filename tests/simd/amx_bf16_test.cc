// The bf16-activation product on AMX tiles (MatMulBf16Amx, bf16_activations.h), run
// two ways: on the tile model (amx_tiles.h, every CPU: the kernel's shapes, strides,
// padded tails and stores, each tile use checked against the configuration, reads and
// writes bounds-checked under ASan) and on the CPU's tiles (where it has AMX-BF16 and
// the OS grants them; skipped elsewhere with the reason amx.h gives). Both are held
// within the bound of any f32 summation order from the scalar twin for every row count
// (whole and partial tiles and blocks), K (whole and padded 16-pair steps), column
// remainder and panel range, never writing outside their rows and panels; a row's bits
// do not depend on the rows beside it or the panel range; and MatMulBf16 picks the
// tiles only when allowed.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <utility>
#include <vector>

#include "amx_bf16_tiles.h"
#include "amx_tiles.h"
#include "bf16_test_support.h"
#include "gtest/gtest.h"
#include "kvrt/simd/amx.h"
#include "kvrt/simd/bf16_activations.h"
#include "kvrt/simd/dispatch_target.h"
#include "simd_test_support.h"

namespace kvrt::simd {
namespace {

using simd_test::Bf16Activations;
using simd_test::Bf16PairCase;
using simd_test::ExpectBitsEqual;
using simd_test::Inputs;

TEST(AmxBf16AvailabilityTest, EitherAvailableOrSaysWhyNotAndWritesNothing) {
  if (AmxBf16Available()) {
    EXPECT_TRUE(AmxBf16UnavailableReason().empty());
    return;
  }
  EXPECT_FALSE(AmxBf16UnavailableReason().empty());
  std::printf("[ amx ] not here: %.*s\n", static_cast<int>(AmxBf16UnavailableReason().size()),
              AmxBf16UnavailableReason().data());
  Inputs inputs(1);
  Bf16PairCase w(32, 32, inputs);
  Bf16Activations act(2, 32, inputs);
  std::vector<float> c(64, -7.0f);
  EXPECT_FALSE(MatMulBf16Amx(act.rows, 0, 2, w.pairs, c.data(), 32, 0, 1));
  EXPECT_EQ(c, std::vector<float>(64, -7.0f));
  EXPECT_FALSE(Bf16DotUsesAmx());
}

enum class Tiles { kModel, kCpu };

// Each test once on the tile model and once on the CPU's tiles.
class AmxBf16Test : public ::testing::TestWithParam<Tiles> {
 protected:
  void SetUp() override {
    if (GetParam() == Tiles::kCpu && !AmxBf16Available()) {
      GTEST_SKIP() << "no AMX-BF16 tiles: " << AmxBf16UnavailableReason();
    }
  }
  // MatMulBf16Amx's product on this test's tiles; false (a failure recorded) when the
  // model saw a misuse.
  bool Run(const Bf16Rows& a, size_t first_row, size_t m, const CompressedMatrixView& w, float* c, size_t ldc,
           size_t panel_begin, size_t panel_end) {
    if (GetParam() == Tiles::kCpu) return MatMulBf16Amx(a, first_row, m, w, c, ldc, panel_begin, panel_end);
    TileModel model;
    amx_bf16::MatMulBf16OnTiles(model, a, first_row, m, w, c, ldc, panel_begin, panel_end);
    EXPECT_EQ(model.error(), "");
    return model.error().empty();
  }
};
INSTANTIATE_TEST_SUITE_P(Tiles, AmxBf16Test, ::testing::Values(Tiles::kModel, Tiles::kCpu),
                         [](const ::testing::TestParamInfo<Tiles>& tiles) {
                           return tiles.param == Tiles::kModel ? "Model" : "Cpu";
                         });

// The value of bf16 pair lane `half` (0: even k, 1: odd k) of a rounded activation.
float PairValue(uint32_t pair, size_t half) {
  const uint32_t bits = (pair >> (16 * half) & 0xFFFFu) << 16;
  float value;
  std::memcpy(&value, &bits, sizeof(value));
  return value;
}

// 2·γ_K·Σ|a·w| + K·2^-125 for row r, column n (bf16_activations.h, MatMulBf16Amx).
long double SummationBound(const Bf16Activations& act, size_t r, const Bf16PairCase& w, size_t n) {
  const size_t k = w.pairs.rows;
  long double magnitude = 0;
  for (size_t i = 0; i < k; ++i) {
    const uint32_t pair = act.pairs[r * (k / 2) + i / 2];
    magnitude += std::fabs(static_cast<long double>(PairValue(pair, i % 2)) * w.pairs.at(i, n));
  }
  const long double u = std::ldexp(1.0L, -24), gamma = k * u / (1 - k * u);
  return 2 * gamma * magnitude + k * std::ldexp(1.0L, -125);
}

TEST_P(AmxBf16Test, WithinTheSummationBoundOfTheTwinForEveryShape) {
  Inputs inputs(21);
  for (size_t k : {2, 30, 32, 34, 64, 96, 770}) {
    for (size_t cols : {1, 15, 16, 17, 31, 33, 70}) {
      Bf16PairCase w(k, cols, inputs);
      for (size_t m : {1, 2, 15, 16, 17, 31, 32, 33, 47, 70}) {
        Bf16Activations act(m, k, inputs);
        const size_t panels = w.pairs.panels();
        for (const auto& [begin, end] : {std::pair<size_t, size_t>{0, panels}, {1, panels > 2 ? panels - 1 : 1}}) {
          if (begin >= end) continue;
          SCOPED_TRACE(testing::Message() << "k=" << k << " cols=" << cols << " m=" << m << " panels " << begin
                                          << ".." << end);
          const size_t ldc = cols + 3;
          std::vector<float> amx(m * ldc, -7.0f), twin(m * ldc, -7.0f);
          ASSERT_TRUE(Run(act.rows, 0, m, w.pairs, amx.data(), ldc, begin, end));
          MatMulBf16Scalar(act.rows, 0, m, w.pairs, twin.data(), ldc, begin, end);
          const size_t first = begin * kCompressedPanelWidth, last = std::min(cols, end * kCompressedPanelWidth);
          for (size_t r = 0; r < m; ++r) {
            for (size_t n = 0; n < ldc; ++n) {
              const float got = amx[r * ldc + n], want = twin[r * ldc + n];
              if (n < first || n >= last) {
                ASSERT_EQ(got, -7.0f) << "wrote outside its panels: r=" << r << " n=" << n;
                continue;
              }
              ASSERT_LE(std::fabs(static_cast<long double>(got) - want), SummationBound(act, r, w, n))
                  << "r=" << r << " n=" << n << ": " << got << " vs twin " << want;
            }
          }
        }
      }
    }
  }
}

TEST_P(AmxBf16Test, ARowsBitsDoNotDependOnTheRowsBesideItOrThePanelRange) {
  Inputs inputs(23);
  const size_t k = 98, cols = 70, m = 37;  // a padded K step; blocks of 32 and 5 rows
  Bf16PairCase w(k, cols, inputs);
  Bf16Activations act(m, k, inputs);
  const size_t panels = w.pairs.panels();
  simd_test::ExpectRowsIndependentOfTheirNeighbours(w, m, {1, 3, 17}, [&](size_t first_row, size_t rows, float* c) {
    EXPECT_TRUE(Run(act.rows, first_row, rows, w.pairs, c, cols, 0, panels));
  });
  std::vector<float> all(m * cols), by_panel(m * cols);
  ASSERT_TRUE(Run(act.rows, 0, m, w.pairs, all.data(), cols, 0, panels));
  for (size_t p = 0; p < panels; ++p) ASSERT_TRUE(Run(act.rows, 0, m, w.pairs, by_panel.data(), cols, p, p + 1));
  ExpectBitsEqual(by_panel, all, "panel by panel vs all panels");
}

// The activation-rounding bound the vector kernel is held to (bf16_activations_test.cc)
// holds for the tiles too: it allows any summation order.
TEST_P(AmxBf16Test, StaysWithinTheActivationRoundingBound) {
  Inputs inputs(29);
  const size_t k = 768, cols = 96, m = 20;
  Bf16PairCase w(k, cols, inputs);
  Bf16Activations act(m, k, inputs);
  std::vector<float> y(m * cols);
  ASSERT_TRUE(Run(act.rows, 0, m, w.pairs, y.data(), cols, 0, w.pairs.panels()));
  EXPECT_GT(simd_test::ExpectWithinActivationRoundingBound(act, w, y, m), 0u);
}

// MatMulBf16 runs the tiles when allowed on the AVX-512 target, the vector kernel when not.
TEST_P(AmxBf16Test, MatMulBf16PicksTheTilesOnlyWhenAllowed) {
  if (GetParam() == Tiles::kModel) GTEST_SKIP() << "MatMulBf16 runs the CPU's tiles, not the model";
  if (DispatchedTargetName() != "AVX3") GTEST_SKIP() << "the tiles are picked beside the AVX3 target only";
  Inputs inputs(31);
  const size_t k = 64, cols = 40, m = 9;
  Bf16PairCase w(k, cols, inputs);
  Bf16Activations act(m, k, inputs);
  std::vector<float> tiles(m * cols), vectors(m * cols), picked(m * cols);
  ASSERT_TRUE(Run(act.rows, 0, m, w.pairs, tiles.data(), cols, 0, w.pairs.panels()));
  MatMulBf16Vectors(act.rows, 0, m, w.pairs, vectors.data(), cols, 0, w.pairs.panels());
  EXPECT_TRUE(Bf16DotUsesAmx());
  MatMulBf16(act.rows, 0, m, w.pairs, picked.data(), cols, 0, w.pairs.panels());
  ExpectBitsEqual(picked, tiles, "MatMulBf16 with AMX allowed vs the tiles");
  AllowAmx(false);
  EXPECT_FALSE(Bf16DotUsesAmx());
  MatMulBf16(act.rows, 0, m, w.pairs, picked.data(), cols, 0, w.pairs.panels());
  AllowAmx(true);
  ExpectBitsEqual(picked, vectors, "MatMulBf16 with AMX not allowed vs the vector kernel");
}


// The model itself: TDPBF16PS's arithmetic on a small case, and the misuses the CPU
// would fault on are recorded, so a kernel passing on the model used its tiles as configured.
TEST(TileModelTest, DotBf16IsTheDefinitionAndMisusesAreRecorded) {
  TileModel model;
  TileConfig config;
  for (int t : {0, 4, 6}) {
    config.rows[t] = 1;
    config.bytes_per_row[t] = 4;  // one pair / one f32 column
  }
  model.Configure(config);
  const uint32_t a = 0x40003F80u;  // (1, 2): even k first
  const uint32_t b = 0xC0404040u;  // (3, -3)
  model.Load<4>(&a, 4);
  model.Load<6>(&b, 4);
  model.Zero<0>();
  model.DotBf16<0, 4, 6>();
  float c = 0;
  model.Store<0>(&c, 4);
  EXPECT_EQ(c, 1.0f * 3.0f + 2.0f * -3.0f);
  EXPECT_EQ(model.error(), "");

  model.Load<5>(&a, 4);  // tile 5 has no rows
  EXPECT_NE(model.error(), "");
  TileModel shapes;
  config.bytes_per_row[4] = 8;  // two pairs in A, one pair row in B
  shapes.Configure(config);
  shapes.DotBf16<0, 4, 6>();
  EXPECT_NE(shapes.error(), "");
  TileModel unconfigured;
  unconfigured.Zero<0>();
  EXPECT_NE(unconfigured.error(), "");
}

}  // namespace
}  // namespace kvrt::simd
