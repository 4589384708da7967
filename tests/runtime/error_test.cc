#include "kvrt/error.h"

#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <string>

#include "core/rust_format.h"

namespace kvrt {
namespace {

TEST(ErrorCodeTest, EveryCodeHasAUniqueName) {
  std::set<std::string_view> names;
  for (size_t i = 0; i < static_cast<size_t>(ErrorCode::kCount); ++i) {
    const std::string_view name = ErrorName(static_cast<ErrorCode>(i));
    EXPECT_FALSE(name.empty()) << i;
    EXPECT_NE(name, "Unknown") << i;
    EXPECT_TRUE(names.insert(name).second) << "duplicate name " << name;
  }
}

// Messages are one bounded line (error.h): what a file put into them is escaped,
// plain text (the reference's messages) is left alone.
TEST(ErrorMessageTest, IsOneBoundedLineOfText) {
  EXPECT_EQ(Error(ErrorCode::kIo, {}, "plain \"text\" with \\0 and ünïcödé").message(),
            "plain \"text\" with \\0 and ünïcödé");
  EXPECT_EQ(Error(ErrorCode::kIo, {}, std::string("a\nb\0c\x1b\x7f\xc2\x9b\xe2\x80", 11)).message(),
            "a\\nb\\0c\\x1b\\x7f\\u{9b}\\xe2\\x80");
  // Escaping is idempotent, so a message wrapped again is unchanged.
  Error once(ErrorCode::kIo, {}, "x\ny");
  EXPECT_EQ(Error(ErrorCode::kModel, {}, once.message()).message(), once.message());
  EXPECT_EQ(std::move(once).Wrap(ErrorCode::kModel, {}, "wrapped: x\ny").message(), "wrapped: x\\ny");

  const std::string exactly(1024, 'a');
  EXPECT_EQ(Error(ErrorCode::kIo, {}, exactly).message(), exactly);
  // Longer: the head and the tail around an ellipsis, cut between characters.
  std::string wide;
  for (int i = 0; i < 2000; ++i) wide += "é";
  const std::string bounded = Error(ErrorCode::kIo, {}, "head " + wide + " tail").message();
  EXPECT_LE(bounded.size(), 1024u);
  EXPECT_EQ(bounded.rfind("head éé", 0), 0u);
  EXPECT_EQ(bounded.substr(bounded.size() - 9), "éé tail");
  EXPECT_NE(bounded.find("é…é"), std::string::npos);
}

TEST(ErrorDebugTest, RendersRustDebugForNestedVariants) {
  Error leaf(ErrorCode::kNonFiniteLeaf,
             {{"operation", Identifier{"Parameter"}}, {"index", uint64_t{0}}, {"value", NAN}}, "m");
  Error wrapped = std::move(leaf).Wrap(ErrorCode::kAutodiff).Wrap(ErrorCode::kInitialization);
  EXPECT_EQ(
      wrapped.Debug(),
      "Initialization(Autodiff(NonFiniteLeaf { operation: Parameter, index: 0, value: NaN }))");
  EXPECT_EQ(wrapped.code(), ErrorCode::kInitialization);
  EXPECT_EQ(wrapped.innermost(), ErrorCode::kNonFiniteLeaf);
  EXPECT_EQ(wrapped.U64("index"), 0u);
  EXPECT_EQ(wrapped.message(), "m");

  Error layout(ErrorCode::kLayout, {{"", std::string("tensor \"0\" starts at 1")}}, "x");
  EXPECT_EQ(layout.Debug(), "Layout(\"tensor \\\"0\\\" starts at 1\")");

  Error unit(ErrorCode::kInvalidMagic, {}, "x");
  EXPECT_EQ(unit.Debug(), "InvalidMagic");

  Error with_source = Error(ErrorCode::kCacheLayerMismatch, {}, "inner")
                          .Wrap(ErrorCode::kIncrementalAttention, {{"layer", uint64_t{1}}});
  EXPECT_EQ(with_source.Debug(), "IncrementalAttention { layer: 1, source: CacheLayerMismatch }");
  EXPECT_TRUE(with_source.Has(ErrorCode::kCacheLayerMismatch));
}

TEST(RustFormatTest, DisplayAndDebugOfFloatsMatchRust) {
  EXPECT_EQ(RustDisplay(0.0), "0");
  EXPECT_EQ(RustDisplay(-0.5), "-0.5");
  EXPECT_EQ(RustDisplay(-0.01), "-0.01");
  EXPECT_EQ(RustDisplay(-1e-9), "-0.000000001");
  EXPECT_EQ(RustDisplay(1e21), "1000000000000000000000");
  EXPECT_EQ(RustDisplay(NAN), "NaN");
  EXPECT_EQ(RustDisplay(-INFINITY), "-inf");
  EXPECT_EQ(RustDebug(0.0), "0.0");
  EXPECT_EQ(RustDebug(-0.0), "-0.0");
  EXPECT_EQ(RustDebug(-10000.0), "-10000.0");
  EXPECT_EQ(RustDebug(-1e-9), "-1e-9");
  EXPECT_EQ(RustDebug(1.5), "1.5");
  EXPECT_EQ(RustDebug(1e16), "1e16");
  EXPECT_EQ(RustDebug(0.0001), "0.0001");
  EXPECT_EQ(RustDebug(0.00001), "1e-5");
  EXPECT_EQ(RustDebug(INFINITY), "inf");
  EXPECT_EQ(Hex64(0x9e3779b97f4a7c38ull), "0x9e3779b97f4a7c38");
}

}  // namespace
}  // namespace kvrt
