// Hostile and damaged input: every truncation, crafted headers with absurd
// counts and sizes, and random mutations with a recomputed checksum. The reader
// must return a typed error (never crash or throw) and must never turn a length
// field into a large reservation.
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "allocation_probe.h"
#include "formats_test_support.h"
#include "formats/llmcp35/checkpoint.h"
#include "kvrt/rng.h"

namespace kvrt {
namespace {

// Requests at or above this size would mean a length field was trusted; every
// legitimate allocation while parsing the ch38 sample is far smaller.
constexpr size_t kLargeAllocation = size_t{1} << 20;

std::vector<uint8_t> Fixture(const std::string& relative) {
  return testing::ReadBytes(testing::FixturePath(relative));
}

void PutU32(std::vector<uint8_t>& bytes, size_t at, uint32_t value) {
  for (int i = 0; i < 4; ++i) bytes[at + i] = static_cast<uint8_t>(value >> (8 * i));
}
void PutU64(std::vector<uint8_t>& bytes, size_t at, uint64_t value) {
  for (int i = 0; i < 8; ++i) bytes[at + i] = static_cast<uint8_t>(value >> (8 * i));
}
uint32_t GetU32(const std::vector<uint8_t>& bytes, size_t at) {
  uint32_t value = 0;
  for (int i = 3; i >= 0; --i) value = (value << 8) | bytes[at + i];
  return value;
}

void FixChecksum(std::vector<uint8_t>& bytes) { PutU64(bytes, 30, CheckpointChecksum(bytes)); }

// Field positions of a valid file, found by an independent walk of §4–§5.
struct HeaderMap {
  size_t groups_flag = 171;
  size_t decay_count = 0;  // 0 when there are no groups
  size_t counts = 0;       // M; S at +4, N at +8
  std::vector<size_t> descriptors;
};

HeaderMap MapHeader(const std::vector<uint8_t>& bytes) {
  HeaderMap map;
  size_t at = 172;
  if (bytes[map.groups_flag] == 1) {
    map.decay_count = at;
    for (int list = 0; list < 2; ++list) {
      const uint32_t count = GetU32(bytes, at);
      at += 4;
      for (uint32_t i = 0; i < count; ++i) at += 4 + GetU32(bytes, at);
    }
  }
  map.counts = at + 24;
  const uint32_t records = GetU32(bytes, at + 32);
  at += 36;
  for (uint32_t i = 0; i < records; ++i) {
    map.descriptors.push_back(at);
    at += 1;
    at += 4 + GetU32(bytes, at);
    at += 1;
    const uint32_t rank = GetU32(bytes, at);
    at += 4 + 8 * rank + 16;
  }
  return map;
}

// Positions inside descriptor `index`.
size_t NameLengthAt(const HeaderMap& map, size_t index) { return map.descriptors[index] + 1; }
size_t RankAt(const std::vector<uint8_t>& bytes, const HeaderMap& map, size_t index) {
  return NameLengthAt(map, index) + 4 + GetU32(bytes, NameLengthAt(map, index)) + 1;
}

Error ExpectRejected(const std::vector<uint8_t>& bytes, size_t* largest = nullptr) {
  testing::LargestAllocationProbe probe;
  Result<Checkpoint> parsed = ParseCheckpoint(bytes);
  if (largest != nullptr) *largest = probe.largest();
  EXPECT_FALSE(parsed.has_value());
  return parsed ? Error(ErrorCode::kInvalidArgument, {}, "accepted") : parsed.error();
}

TEST(TruncationTest, EveryPrefixOfCh38IsRejected) {
  const std::vector<uint8_t> file = Fixture("checkpoints/ch38_loaded.ckpt");
  ASSERT_EQ(file.size(), 6330u);
  for (size_t length = 0; length < file.size(); ++length) {
    const Result<Checkpoint> parsed = ParseCheckpoint(std::span(file).first(length));
    ASSERT_FALSE(parsed.has_value()) << length;
    if (length < 38) {
      ASSERT_EQ(parsed.error().Debug(), "Truncated { context: \"fixed header\" }") << length;
    } else {
      ASSERT_EQ(parsed.error().Debug(), "FileExtent { header: 2869, payload: 3461, actual: " +
                                            std::to_string(length) + " }");
    }
  }
}

TEST(TruncationTest, PrefixesOfTheDemoAreRejected) {
  const std::vector<uint8_t> file = Fixture("demo/demo.ckpt");
  ASSERT_GT(file.size(), 1000000u);
  for (const size_t length : {size_t{0}, size_t{37}, size_t{38}, size_t{39}, size_t{4096},
                              file.size() / 2, file.size() - 8, file.size() - 1}) {
    const Result<Checkpoint> parsed = ParseCheckpoint(std::span(file).first(length));
    ASSERT_FALSE(parsed.has_value()) << length;
    EXPECT_EQ(parsed.error().code(), length < 38 ? ErrorCode::kTruncated : ErrorCode::kFileExtent);
  }
}

// Cutting the header at every length and re-declaring H = length, P = 0 with a
// valid checksum drives the field reader into every truncation point.
TEST(TruncationTest, EveryHeaderCutWithConsistentExtentIsRejected) {
  for (const std::string name : {"checkpoints/ch38_loaded.ckpt", "checkpoints/ch39_trained.ckpt"}) {
    const std::vector<uint8_t> file = Fixture(name);
    const uint64_t header_bytes = file[14] | (uint64_t{file[15]} << 8);
    std::map<std::string, int> variants;
    for (size_t length = 38; length <= header_bytes; ++length) {
      std::vector<uint8_t> cut(file.begin(), file.begin() + static_cast<std::ptrdiff_t>(length));
      PutU64(cut, 14, length);
      PutU64(cut, 22, 0);
      FixChecksum(cut);
      size_t largest = 0;
      const Error error = ExpectRejected(cut, &largest);
      ASSERT_LT(largest, kLargeAllocation) << name << " " << length;
      ++variants[std::string(error.name())];
    }
    // Mostly truncations inside the variable header; at the very end the
    // directory is complete but its spans run past the file.
    EXPECT_GT(variants["Truncated"], 0) << name;
    EXPECT_GT(variants["Layout"], 0) << name;
    for (const auto& [variant, count] : variants) {
      EXPECT_TRUE(variant == "Truncated" || variant == "Layout" || variant == "NonCanonical" ||
                  variant == "AdamW")
          << name << ": " << variant << " x" << count;
    }
  }
}

class HostileHeaderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    file_ = Fixture("checkpoints/ch38_loaded.ckpt");
    map_ = MapHeader(file_);
    ASSERT_EQ(map_.counts, 528u);  // spec §4: the step is at 504, counts follow the powers
    ASSERT_EQ(map_.descriptors.size(), 38u);
    ASSERT_EQ(map_.descriptors.front(), 540u);
  }

  // Parses a mutated copy (checksum fixed) and returns the error, checking that
  // it came back quickly and without any large reservation.
  Error Reject(std::vector<uint8_t> bytes) {
    FixChecksum(bytes);
    const auto start = std::chrono::steady_clock::now();
    size_t largest = 0;
    Error error = ExpectRejected(bytes, &largest);
    const auto elapsed = std::chrono::steady_clock::now() - start;
    EXPECT_LT(largest, kLargeAllocation);
    EXPECT_LT(elapsed, std::chrono::seconds(1));
    return error;
  }

  std::vector<uint8_t> file_;
  HeaderMap map_;
};

TEST_F(HostileHeaderTest, HugeDescriptorCount) {
  std::vector<uint8_t> bytes = file_;
  PutU32(bytes, map_.counts + 8, 0xFFFFFFFFu);
  // All 38 real records parse, then the 39th runs out of header bytes.
  EXPECT_EQ(Reject(bytes).Debug(), "Truncated { context: \"tensor role\" }");
}

TEST_F(HostileHeaderTest, HugeStringLength) {
  std::vector<uint8_t> bytes = file_;
  PutU32(bytes, NameLengthAt(map_, 0), 0xFFFFFFFFu);
  EXPECT_EQ(Reject(bytes).Debug(), "Truncated { context: \"tensor name\" }");
}

TEST_F(HostileHeaderTest, HugeGroupNameCount) {
  std::vector<uint8_t> bytes = file_;
  PutU32(bytes, map_.decay_count, 0xFFFFFFFFu);
  EXPECT_EQ(Reject(bytes).Debug(), "Truncated { context: \"decay parameter-group names\" }");
}

TEST_F(HostileHeaderTest, HugeRank) {
  std::vector<uint8_t> bytes = file_;
  PutU32(bytes, RankAt(bytes, map_, 5), 0xFFFFFFFFu);
  EXPECT_EQ(Reject(bytes).Debug(), "Truncated { context: \"tensor dimension\" }");
}

TEST_F(HostileHeaderTest, ShapeProductThatOverflows) {
  std::vector<uint8_t> bytes = file_;
  // token_embedding.weight is [5, 4] f64; make it [2^62, 4].
  PutU64(bytes, RankAt(bytes, map_, 5) + 4, uint64_t{1} << 62);
  EXPECT_EQ(Reject(bytes).Debug(), "SizeOverflow { context: \"tensor shape times dtype width\" }");
}

TEST_F(HostileHeaderTest, HugeShapeProductThatFits) {
  std::vector<uint8_t> bytes = file_;
  // [2^40, 4] f64 needs 2^45 bytes: the declared byte_len no longer matches.
  PutU64(bytes, RankAt(bytes, map_, 5) + 4, uint64_t{1} << 40);
  const Error error = Reject(bytes);
  EXPECT_EQ(error.code(), ErrorCode::kLayout);
  EXPECT_EQ(error.message(),
            "invalid checkpoint layout: tensor \"token_embedding.weight\" declares 160 bytes, but "
            "shape [1099511627776, 4] and dtype f64 require 35184372088832");
}

TEST_F(HostileHeaderTest, HugeByteLengthAndOffsetOverflow) {
  std::vector<uint8_t> bytes = file_;
  // A u8 record of shape [2^64 - 1] with a matching byte_len: the end offset overflows.
  const size_t rank_at = RankAt(bytes, map_, 0);
  PutU64(bytes, rank_at + 4, ~uint64_t{0});
  PutU64(bytes, rank_at + 4 + 8 + 8, ~uint64_t{0});
  EXPECT_EQ(Reject(bytes).Debug(), "Layout(\"tensor end offset overflows u64\")");
}

TEST_F(HostileHeaderTest, HugeHeaderAndPayloadSizes) {
  std::vector<uint8_t> bytes = file_;
  PutU64(bytes, 14, ~uint64_t{0});
  EXPECT_EQ(Reject(bytes).code(), ErrorCode::kFileExtent);
  bytes = file_;
  PutU64(bytes, 22, ~uint64_t{0} - 100);  // H + P overflows
  EXPECT_EQ(Reject(bytes).Debug(),
            "FileExtent { header: 2869, payload: 18446744073709551515, actual: 6330 }");
  bytes = file_;
  PutU64(bytes, 14, 6330);  // H = file length, P unchanged
  EXPECT_EQ(Reject(bytes).code(), ErrorCode::kFileExtent);
}

TEST_F(HostileHeaderTest, HugeTokenizerVocabulary) {
  std::vector<uint8_t> bytes = file_;
  PutU64(bytes, 59, ~uint64_t{0});
  EXPECT_EQ(Reject(bytes).Debug(), "SizeOverflow { context: \"model descriptor boundary\" }");
  bytes = file_;
  PutU64(bytes, 59, uint64_t{1} << 40);
  EXPECT_EQ(Reject(bytes).Debug(),
            "Layout(\"descriptor table has 38 records, expected 1099511627809\")");
}

TEST_F(HostileHeaderTest, HugeDecoderVocabulary) {
  std::vector<uint8_t> bytes = file_;
  PutU64(bytes, 67, uint64_t{1} << 40);
  EXPECT_EQ(Reject(bytes).Debug(),
            "Model(EmbeddingVocabularyMismatch { expected: 1099511627776, actual: 5 })");
}

TEST_F(HostileHeaderTest, HugeLayerCount) {
  // The expected parameter list is never materialised for a layer count the
  // directory cannot hold.
  std::vector<uint8_t> bytes = file_;
  PutU64(bytes, 99, uint64_t{1} << 23);
  EXPECT_EQ(Reject(bytes).Debug(),
            "Model(ParameterCountMismatch { expected: 75497474, actual: 11 })");
  bytes = file_;
  PutU64(bytes, 99, uint64_t{1} << 62);  // 2 + 9L overflows
  EXPECT_EQ(Reject(bytes).Debug(), "Model(SizeOverflow { context: \"parameter count\" })");
  bytes = file_;
  PutU64(bytes, 99, uint64_t{1} << 23);
  PutU64(bytes, 83, 3);  // a config error still comes first
  EXPECT_EQ(Reject(bytes).Debug(), "Model(ModelWidthNotDivisible { model_width: 4, heads: 3 })");
}

TEST_F(HostileHeaderTest, HugeParameterAndOptimizerCounts) {
  std::vector<uint8_t> bytes = file_;
  PutU32(bytes, map_.counts, 0xFFFFFFFFu);
  EXPECT_EQ(Reject(bytes).Debug(),
            "Layout(\"descriptor table has 38 records, expected 4294967322\")");
  bytes = file_;
  PutU32(bytes, map_.counts + 4, 0xFFFFFFFFu);
  EXPECT_EQ(Reject(bytes).Debug(),
            "Layout(\"descriptor table has 38 records, expected 8589934606\")");
}

TEST_F(HostileHeaderTest, BpeDoublingChainInASmallFileIsRefused) {
  // ch39 with its eight pairs rewritten into a doubling chain would need 2^9
  // bytes at most; the same chain with 60 ranks is exercised in tokenizer_test.
  std::vector<uint8_t> bytes = Fixture("checkpoints/ch39_trained.ckpt");
  const HeaderMap map = MapHeader(bytes);
  const size_t pairs_at = 2418;  // H: the pairs tensor is the first payload
  ASSERT_EQ(map.descriptors.size(), 34u);
  PutU32(bytes, pairs_at, 97);
  PutU32(bytes, pairs_at + 4, 97);
  for (uint32_t rank = 1; rank < 8; ++rank) {
    PutU32(bytes, pairs_at + 8 * rank, 255 + rank);
    PutU32(bytes, pairs_at + 8 * rank + 4, 255 + rank);
  }
  FixChecksum(bytes);
  const Result<Checkpoint> parsed = ParseCheckpoint(bytes);
  ASSERT_TRUE(parsed) << parsed.error().Debug();
  const Result<std::string_view> longest = parsed->tokenizer.TokenBytes(265);
  ASSERT_TRUE(longest);
  EXPECT_EQ(longest->size(), 256u);
}

TEST(HostileBpeTest, DoublingChainBeyondTheExpansionBudgetIsRefused) {
  // A 28-merge tokenizer over variant_bpe0, then its pairs rewritten into
  // (a,a), (256,256), (257,257), ...: rank 27 alone would expand to 2^28 bytes.
  Result<Checkpoint> base =
      LoadCheckpoint(testing::FixturePath("checkpoints/variant_bpe0_groups_step0.ckpt"));
  ASSERT_TRUE(base) << base.error().Debug();
  Checkpoint checkpoint = std::move(*base);
  std::vector<std::pair<uint32_t, uint32_t>> merges;
  for (uint32_t rank = 0; rank < 28; ++rank) merges.push_back({97, rank});
  checkpoint.tokenizer = *Tokenizer::ByteBpe(merges);
  checkpoint.config.vocabulary_size = 258 + merges.size();
  checkpoint.parameters[0].shape = {checkpoint.config.vocabulary_size,
                                    checkpoint.config.model_width};
  checkpoint.parameters[0].values.resize(
      checkpoint.config.vocabulary_size * checkpoint.config.model_width, 0.125);
  Result<std::vector<uint8_t>> encoded = EncodeCheckpoint(checkpoint);
  ASSERT_TRUE(encoded) << encoded.error().Debug();
  ASSERT_TRUE(ParseCheckpoint(*encoded));

  std::vector<uint8_t> bytes = *encoded;
  const size_t pairs_at = bytes[14] | (size_t{bytes[15]} << 8);  // the first payload
  PutU32(bytes, pairs_at, 97);
  PutU32(bytes, pairs_at + 4, 97);
  for (uint32_t rank = 1; rank < 28; ++rank) {
    PutU32(bytes, pairs_at + 8 * rank, 255 + rank);
    PutU32(bytes, pairs_at + 8 * rank + 4, 255 + rank);
  }
  FixChecksum(bytes);
  size_t largest = 0;
  const Error error = ExpectRejected(bytes, &largest);
  EXPECT_EQ(error.Debug(), "Allocation { context: \"BPE token expansions\" }");
  EXPECT_LT(largest, kLargeAllocation);
}

// Random byte changes anywhere in the header (checksum recomputed) must give a
// typed error or a file that re-encodes to itself; never a crash.
TEST(MutationTest, RandomHeaderMutationsNeverCrash) {
  SplitMix64 rng(0x6b767274);
  size_t accepted = 0;
  for (const std::string name : {"checkpoints/ch38_loaded.ckpt", "checkpoints/ch39_trained.ckpt",
                                 "checkpoints/variant_bpe0_groups_step0.ckpt"}) {
    const std::vector<uint8_t> file = Fixture(name);
    const uint64_t header_bytes = file[14] | (uint64_t{file[15]} << 8);
    for (int trial = 0; trial < 1500; ++trial) {
      std::vector<uint8_t> bytes = file;
      const int changes = 1 + static_cast<int>(rng.NextU64() % 3);
      for (int c = 0; c < changes; ++c) {
        const size_t at = 38 + rng.NextU64() % (header_bytes - 38);
        bytes[at] = static_cast<uint8_t>(rng.NextU64());
      }
      FixChecksum(bytes);
      testing::LargestAllocationProbe probe;
      const Result<Checkpoint> parsed = ParseCheckpoint(bytes);
      ASSERT_LT(probe.largest(), kLargeAllocation) << name << " trial " << trial;
      if (parsed) {
        ++accepted;
        const Result<std::vector<uint8_t>> again = EncodeCheckpoint(*parsed);
        ASSERT_TRUE(again);
        ASSERT_EQ(*again, bytes);
      }
    }
  }
  // Mutations that still describe the same canonical state (for example a
  // changed RNG state or selected/optimizer step pair) are legitimately accepted.
  EXPECT_LT(accepted, 4500u);
}

}  // namespace
}  // namespace kvrt
