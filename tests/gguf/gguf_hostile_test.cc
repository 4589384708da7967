// Hostile GGUF files: every lie a header, a metadata entry or a tensor info can
// tell gets its own typed error, and none makes the reader allocate in
// proportion to the lie.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <functional>

#include "formats/allocation_probe.h"
#include "formats/gguf/gguf_writer.h"
#include "gguf_bytes.h"
#include "gguf_rewrite.h"
#include "gguf_test_support.h"
#include "kvrt/rng.h"

namespace kvrt::gguf::testing {
namespace {

// Parses `bytes` under a heap probe: the error code, and no request above 64 KiB
// (the images here are a few hundred bytes; their lies claim exabytes).
ErrorCode ParseError(std::vector<uint8_t> bytes, size_t allowed_bytes = 64 << 10) {
  Result<std::shared_ptr<const FileMapping>> mapping = FileMapping::FromBytes(std::move(bytes));
  EXPECT_TRUE(mapping);
  kvrt::testing::LargestAllocationProbe probe;
  Result<GgufFile> file = GgufFile::Parse(std::move(*mapping));
  EXPECT_LE(probe.largest(), allowed_bytes);
  EXPECT_FALSE(file) << "parsed a hostile file";
  if (file) return ErrorCode::kCount;
  EXPECT_FALSE(file.error().message().empty());
  return file.error().code();
}

GgufBytes OneTensorFile(std::vector<uint64_t> ne, uint32_t type, uint64_t offset, size_t data_bytes = 256) {
  GgufBytes b;
  b.Header(3, 1, 0).Tensor("weights", std::move(ne), type, offset).PadTo(32).Zeros(data_bytes);
  return b;
}

TEST(GgufHostile, HeaderLies) {
  GgufBytes magic;
  magic.Raw("GGUG", 4).U32(3).U64(0).U64(0);
  EXPECT_EQ(ParseError(magic.bytes), ErrorCode::kInvalidMagic);
  for (uint32_t version : {0u, 1u, 4u, 0xFFFFFFFFu}) {
    GgufBytes b;
    b.Header(version, 0, 0);
    EXPECT_EQ(ParseError(b.bytes), ErrorCode::kUnsupportedVersion) << version;
  }
  for (uint32_t swapped : {0x02000000u, 0x03000000u}) {  // a big-endian file's version
    GgufBytes b;
    b.Header(swapped, 0, 0);
    EXPECT_EQ(ParseError(b.bytes), ErrorCode::kUnsupportedEndianness);
  }
  GgufBytes tensors, kvs;
  tensors.Header(3, uint64_t{1} << 62, 0);
  kvs.Header(3, 0, uint64_t{1} << 62);
  EXPECT_EQ(ParseError(tensors.bytes), ErrorCode::kCountExceedsFile);
  EXPECT_EQ(ParseError(kvs.bytes), ErrorCode::kCountExceedsFile);
  // Counts a little above what the remaining bytes could hold are refused too.
  GgufBytes few;
  few.Header(3, 0, 3).KvU32("a", 1).KvU32("b", 2);
  EXPECT_EQ(ParseError(few.bytes), ErrorCode::kCountExceedsFile);
  GgufBytes empty_v2;
  empty_v2.Header(2, 0, 0);
  EXPECT_TRUE(ParseBytes(empty_v2.bytes));
}

TEST(GgufHostile, MetadataLies) {
  GgufBytes long_key, long_string, long_array, long_strings, nested;
  long_key.Header(3, 0, 1).U64(uint64_t{1} << 62).Raw("k", 1);
  long_string.Header(3, 0, 1).Str("k").U32(8).U64(~uint64_t{0});
  long_array.Header(3, 0, 1).Str("k").U32(9).U32(4).U64(uint64_t{1} << 61).U32(1);
  long_strings.Header(3, 0, 1).Str("k").U32(9).U32(8).U64(uint64_t{1} << 40).Str("a");
  nested.Header(3, 0, 1).Str("k").U32(9).U32(9).U64(uint64_t{1} << 50).U32(4).U64(0);
  EXPECT_EQ(ParseError(long_key.bytes), ErrorCode::kCountExceedsFile);
  EXPECT_EQ(ParseError(long_string.bytes), ErrorCode::kCountExceedsFile);
  EXPECT_EQ(ParseError(long_array.bytes), ErrorCode::kCountExceedsFile);
  EXPECT_EQ(ParseError(long_strings.bytes), ErrorCode::kCountExceedsFile);
  EXPECT_EQ(ParseError(nested.bytes), ErrorCode::kCountExceedsFile);

  GgufBytes duplicate, unknown, bad_bool, bad_bool_array, deep;
  duplicate.Header(3, 0, 2).KvU32("llama.block_count", 1).KvU32("llama.block_count", 2);
  unknown.Header(3, 0, 1).Str("k").U32(13).U32(0);
  bad_bool.Header(3, 0, 1).Str("k").U32(7).U8(2);
  bad_bool_array.Header(3, 0, 1).Str("k").U32(9).U32(7).U64(3).U8(0).U8(1).U8(7);
  deep.Header(3, 0, 1).Str("k").U32(9);  // an array of arrays of ... of u32
  for (int level = 0; level < 6; ++level) deep.U32(9).U64(1);
  deep.U32(4).U64(0);
  EXPECT_EQ(ParseError(duplicate.bytes), ErrorCode::kDuplicateKey);
  EXPECT_EQ(ParseError(unknown.bytes), ErrorCode::kUnknownValueType);
  EXPECT_EQ(ParseError(bad_bool.bytes), ErrorCode::kInvalidBool);
  EXPECT_EQ(ParseError(bad_bool_array.bytes), ErrorCode::kInvalidBool);
  EXPECT_EQ(ParseError(deep.bytes), ErrorCode::kNestingTooDeep);

  for (uint32_t alignment : {0u, 24u, 3u}) {
    GgufBytes b;
    b.Header(3, 0, 1).KvU32("general.alignment", alignment);
    EXPECT_EQ(ParseError(b.bytes), ErrorCode::kInvalidAlignment) << alignment;
  }
  GgufBytes string_alignment;
  string_alignment.Header(3, 0, 1).KvString("general.alignment", "32");
  EXPECT_EQ(ParseError(string_alignment.bytes), ErrorCode::kInvalidAlignment);
}

TEST(GgufHostile, NestedArraysOfStringsAreReadable) {
  GgufBytes b;
  b.Header(3, 0, 1).Str("k").U32(9).U32(9).U64(2);
  b.U32(8).U64(2).Str("ab").Str("c");
  b.U32(8).U64(1).Str("");
  Result<GgufFile> file = ParseBytes(b.bytes);
  ASSERT_TRUE(file) << file.error().Debug();
  Result<std::vector<Value>> outer = file->ArrayElements(*file->Find("k"));
  ASSERT_TRUE(outer);
  ASSERT_EQ(outer->size(), 2u);
  EXPECT_EQ((*outer)[0].strings, (std::vector<std::string_view>{"ab", "c"}));
  EXPECT_EQ((*outer)[1].strings, (std::vector<std::string_view>{""}));
}

TEST(GgufHostile, TensorInfoLies) {
  EXPECT_EQ(ParseError(OneTensorFile({4, 4, 4, 4, 4}, 0, 0).bytes), ErrorCode::kTooManyDimensions);
  EXPECT_EQ(ParseError(OneTensorFile({}, 0, 0).bytes), ErrorCode::kTooManyDimensions);
  EXPECT_EQ(ParseError(OneTensorFile({0}, 0, 0).bytes), ErrorCode::kInvalidTensorShape);
  EXPECT_EQ(ParseError(OneTensorFile({~uint64_t{0}}, 0, 0).bytes), ErrorCode::kInvalidTensorShape);
  EXPECT_EQ(ParseError(OneTensorFile({48}, 8, 0).bytes), ErrorCode::kInvalidTensorShape);  // not Q8_0 blocks
  const uint64_t big = uint64_t{1} << 32;
  EXPECT_EQ(ParseError(OneTensorFile({big, big, big}, 0, 0).bytes), ErrorCode::kSizeOverflow);
  EXPECT_EQ(ParseError(OneTensorFile({uint64_t{1} << 62}, 0, 0).bytes), ErrorCode::kSizeOverflow);  // bytes
  EXPECT_EQ(ParseError(OneTensorFile({16}, 99, 0).bytes), ErrorCode::kUnknownDType);
  EXPECT_EQ(ParseError(OneTensorFile({16}, 4, 0).bytes), ErrorCode::kUnknownDType);  // removed Q4_2
  EXPECT_EQ(ParseError(OneTensorFile({16}, 0, 4).bytes), ErrorCode::kMisalignedTensor);
  EXPECT_EQ(ParseError(OneTensorFile({16}, 0, 256).bytes), ErrorCode::kFileExtent);
  EXPECT_EQ(ParseError(OneTensorFile({128}, 0, 0).bytes), ErrorCode::kFileExtent);  // 512 bytes, 256 present
  EXPECT_EQ(ParseError(OneTensorFile({16}, 0, ~uint64_t{31}).bytes), ErrorCode::kFileExtent);
  EXPECT_TRUE(ParseBytes(OneTensorFile({64}, 0, 0).bytes));  // exactly the 256 bytes

  GgufBytes overlap, duplicate;
  overlap.Header(3, 2, 0).Tensor("a", {16}, 0, 0).Tensor("b", {16}, 0, 32).PadTo(32).Zeros(256);
  duplicate.Header(3, 2, 0).Tensor("a", {8}, 0, 0).Tensor("a", {8}, 0, 32).PadTo(32).Zeros(256);
  EXPECT_EQ(ParseError(overlap.bytes), ErrorCode::kOverlappingTensors);
  EXPECT_EQ(ParseError(duplicate.bytes), ErrorCode::kDuplicateTensor);
  GgufBytes adjacent;
  adjacent.Header(3, 2, 0).Tensor("a", {8}, 0, 0).Tensor("b", {8}, 0, 32).PadTo(32).Zeros(64);
  EXPECT_TRUE(ParseBytes(adjacent.bytes));
}

TEST(GgufHostile, PathsThatAreNotRegularFiles) {
  const std::string dir = ::testing::TempDir() + "/kvrt-gguf-" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  Result<GgufFile> directory = GgufFile::Open(dir);
  ASSERT_FALSE(directory);
  EXPECT_EQ(directory.error().code(), ErrorCode::kNotRegularFile);
  EXPECT_NE(directory.error().message().find("is a directory"), std::string::npos);
  const std::string fifo = dir + "/fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  Result<GgufFile> pipe = GgufFile::Open(fifo);  // must not block waiting for a writer
  ASSERT_FALSE(pipe);
  EXPECT_EQ(pipe.error().code(), ErrorCode::kNotRegularFile);
  EXPECT_NE(pipe.error().message().find("FIFO"), std::string::npos);
  Result<GgufFile> missing = GgufFile::Open(dir + "/missing.gguf");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code(), ErrorCode::kIo);
  const std::string empty = dir + "/empty.gguf";
  { std::ofstream touch(empty); }
  Result<GgufFile> nothing = GgufFile::Open(empty);
  ASSERT_FALSE(nothing);
  EXPECT_EQ(nothing.error().code(), ErrorCode::kTruncated);
  std::filesystem::remove_all(dir);
}

TEST(GgufHostile, EveryTruncationIsATypedError) {
  const std::vector<uint8_t> whole = SmallModelFile(GgmlType::kQ8_0);
  ASSERT_TRUE(ParseBytes(whole));
  for (size_t length = 0; length < whole.size(); ++length) {
    Result<GgufFile> file = ParseBytes(std::vector<uint8_t>(whole.begin(), whole.begin() + length));
    // The last tensor's padding is not part of any tensor: cutting it is harmless.
    if (file) {
      EXPECT_GT(length, whole.size() - 32) << length;
      continue;
    }
    const ErrorCode code = file.error().code();
    EXPECT_TRUE(code == ErrorCode::kTruncated || code == ErrorCode::kCountExceedsFile || code == ErrorCode::kFileExtent)
        << length << ": " << file.error().Debug();
  }
}

TEST(GgufHostile, TruncatedFixtureFilesFailFast) {
  Result<std::shared_ptr<const FileMapping>> mapping = FileMapping::Open(FixturePath("tiny-q4_0.gguf"));
  ASSERT_TRUE(mapping);
  const std::span<const uint8_t> whole = (*mapping)->bytes();
  for (size_t length = 0; length < whole.size(); length += length < 4096 ? 13 : 7919) {
    const ErrorCode code = ParseError(std::vector<uint8_t>(whole.begin(), whole.begin() + length), 1 << 20);
    EXPECT_TRUE(code == ErrorCode::kTruncated || code == ErrorCode::kCountExceedsFile || code == ErrorCode::kFileExtent)
        << length;
  }
}

// ---- llama-level checks, on rewrites of a valid small model (gguf_rewrite.h) ----

TEST(GgufHostile, LlamaModelsKvrtCannotRun) {
  Result<GgufFile> file = ParseBytes(SmallModelFile(GgmlType::kF32));
  ASSERT_TRUE(file);
  ASSERT_TRUE(BuildLlamaModel(*file, ModelStorage::kPanelsF32));
  auto all = [](std::string_view) { return true; };
  auto without = [](std::string_view dropped) { return [dropped](std::string_view k) { return k != dropped; }; };
  auto none = [](GgufWriter&) {};

  EXPECT_EQ(ModelError(Rewrite(*file, without("general.architecture"),
                               [](GgufWriter& w) { w.AddString("general.architecture", "gemma"); }),
                       "gemma"),
            ErrorCode::kUnsupportedArchitecture);
  EXPECT_EQ(ModelError(Rewrite(*file, all, [](GgufWriter& w) { w.AddString("llama.rope.scaling.type", "yarn"); }),
                       "yarn"),
            ErrorCode::kUnsupportedRopeScaling);
  EXPECT_TRUE(BuildLlamaModel(
      *ParseBytes(Rewrite(*file, all, [](GgufWriter& w) { w.AddString("llama.rope.scaling.type", "none"); })),
      ModelStorage::kPanelsF32));
  EXPECT_EQ(ModelError(Rewrite(*file, all, [](GgufWriter& w) { w.AddU32("llama.attention.sliding_window", 8); }),
                       "sliding_window"),
            ErrorCode::kUnsupportedSlidingWindow);
  EXPECT_EQ(ModelError(Rewrite(*file, without("llama.rope.dimension_count"),
                               [](GgufWriter& w) { w.AddU32("llama.rope.dimension_count", 4); }),
                       "partial rotary dimension"),
            ErrorCode::kPartialRotaryDimension);
  EXPECT_EQ(ModelError(Rewrite(*file, without("llama.block_count"), none), "llama.block_count"),
            ErrorCode::kMissingKey);
  EXPECT_EQ(ModelError(Rewrite(*file, without("llama.block_count"),
                               [](GgufWriter& w) { w.AddString("llama.block_count", "2"); }),
                       "llama.block_count"),
            ErrorCode::kKeyTypeMismatch);
  // A huge block count finds the first missing tensor without sizing anything by it.
  EXPECT_EQ(ModelError(Rewrite(*file, without("llama.block_count"),
                               [](GgufWriter& w) { w.AddU32("llama.block_count", 0xFFFFFFFF); }),
                       "blk.2.attn_norm.weight"),
            ErrorCode::kMissingTensor);
  EXPECT_EQ(ModelError(Rewrite(*file, all, none, [](std::string_view t) { return t != "blk.1.ffn_up.weight"; }),
                       "blk.1.ffn_up.weight"),
            ErrorCode::kMissingTensor);
  const std::vector<float> bias(32, 0.0f);
  const uint64_t bias_ne[] = {32};
  EXPECT_EQ(ModelError(Rewrite(*file, all,
                               [&](GgufWriter& w) {
                                 EXPECT_TRUE(w.AddTensor("blk.0.attn_q.bias", bias_ne, GgmlType::kF32, bias));
                               }),
                       "blk.0.attn_q.bias"),
            ErrorCode::kUnexpectedTensor);
  // Llama 3.1's frequency factors: one f32 per rotated pair, nothing else.
  const std::vector<float> short_factors(3, 1.0f);
  const uint64_t short_ne[] = {3};
  EXPECT_EQ(ModelError(Rewrite(*file, all,
                               [&](GgufWriter& w) {
                                 EXPECT_TRUE(w.AddTensor("rope_freqs.weight", short_ne, GgmlType::kF32, short_factors));
                               }),
                       "one factor per rotated pair"),
            ErrorCode::kTensorShapeMismatch);
  EXPECT_EQ(ModelError(Rewrite(*file, without("general.architecture"),
                               [](GgufWriter& w) { w.AddString("general.architecture", "qwen3"); }),
                       "llama and qwen2"),
            ErrorCode::kUnsupportedArchitecture);
  EXPECT_EQ(ModelError(Rewrite(*file, all,
                               [&](GgufWriter& w) {
                                 EXPECT_TRUE(w.AddTensor("blk.01.attn_q.weight", bias_ne, GgmlType::kF32, bias));
                               }),
                       "blk.01.attn_q.weight"),
            ErrorCode::kUnexpectedTensor);
  const std::vector<float> wide(64, 0.0f);
  const uint64_t wide_ne[] = {64};
  EXPECT_EQ(ModelError(Rewrite(*file, all,
                               [&](GgufWriter& w) {
                                 EXPECT_TRUE(w.AddTensor("output_norm.weight", wide_ne, GgmlType::kF32, wide));
                               },
                               [](std::string_view t) { return t != "output_norm.weight"; }),
                       "output_norm.weight"),
            ErrorCode::kTensorShapeMismatch);
  EXPECT_EQ(ModelError(Rewrite(*file, without("tokenizer.ggml.tokens"),
                               [](GgufWriter& w) {
                                 const std::vector<std::string> three = {"a", "b", "c"};
                                 w.AddStringArray("tokenizer.ggml.tokens", three);
                               }),
                       "tokenizer.ggml.tokens"),
            ErrorCode::kVocabularyMismatch);
}

TEST(GgufHostile, UnsupportedTensorTypesAreNamed) {
  // A llama file whose blk.0.attn_q.weight type id is patched from F32 to Q8_1
  // (36 bytes per 32 values, so the smaller tensor still lies inside its old
  // extent): the reader accepts it, the model builder names it.
  Result<GgufFile> file = ParseBytes(SmallModelFile(GgmlType::kF32));
  ASSERT_TRUE(file);
  const std::span<const uint8_t> original = file->mapping()->bytes();
  std::vector<uint8_t> bytes(original.begin(), original.end());
  const TensorInfo& q = *file->FindTensor("blk.0.attn_q.weight");
  const size_t name_at = static_cast<size_t>(reinterpret_cast<const uint8_t*>(q.name.data()) - original.data());
  const size_t type_at = name_at + q.name.size() + 4 + 8 * q.n_dims;
  bytes[type_at] = static_cast<uint8_t>(GgmlType::kQ8_1);
  EXPECT_EQ(ModelError(bytes, "tensor blk.0.attn_q.weight has type Q8_1, which kvrt does not read"),
            ErrorCode::kUnsupportedTensorType);
}

}  // namespace
}  // namespace kvrt::gguf::testing
