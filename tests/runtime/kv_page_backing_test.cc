// The K/V cache backs the pages a step writes before the engine writes them
// (DecoderKvCache::BackRows): a block of rows a lane at a time, never the whole
// capacity, and a step whose pages the system refuses fails with nothing changed.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "core/allocation_faults.h"
#include "engine_test_support.h"
#include "kv/decoder_kv_cache.h"
#include "model/decoder_model.h"
#include "session/decoder_kv_session.h"

namespace kvrt {
namespace {

// Two layers of two 32-wide heads and 8,192 positions: each layer's key and value
// buffers are 2 MiB, fresh anonymous pages (core/memory.cc), and an f32 lane's
// backed block (32 KiB) is 256 rows.
constexpr size_t kCapacity = 8192;
constexpr size_t kBlockRows = 256;

DecoderModel LongContextModel() {
  SplitMix64 rng(44);
  return *DecoderModel::FromSeed(ModelConfig::Create(50, 64, 2, 96, 2, kCapacity, 10000.0, 1e-5), rng);
}

EngineOptions FastF32() {
  EngineOptions options;
  options.precision = Precision::kF32;
  return options;
}

DecoderKvCache LongCache(const DecoderModel& model) {
  CacheOptions options;
  options.capacity = kCapacity;
  options.precision = Precision::kF32;
  return *DecoderKvCache::Create(model, options);
}

// Whether every page (all == true) or no page (all == false) of the rows [from, to)
// of every lane of every layer, keys and values, is resident.
bool RowsResident(const DecoderKvCache& cache, size_t from, size_t to, bool all) {
  const auto page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  for (size_t l = 0; l < cache.layer_count(); ++l) {
    const LayerKvCache& layer = *cache.layer(l);
    const size_t row_bytes = layer.head_width() * sizeof(float);
    for (const void* base : {layer.key_address(), layer.value_address()}) {
      for (size_t lane = 0; lane < layer.lanes(); ++lane) {
        const auto first = reinterpret_cast<uintptr_t>(base) + (lane * kCapacity + from) * row_bytes;
        const uintptr_t last = reinterpret_cast<uintptr_t>(base) + (lane * kCapacity + to) * row_bytes;
        // Whole pages inside the rows only: a page shared with a neighbouring
        // range may be resident for the neighbour's sake.
        const uintptr_t start = all ? first / page * page : (first + page - 1) / page * page;
        const uintptr_t end = all ? (last + page - 1) / page * page : last / page * page;
        if (end <= start) continue;
        std::vector<unsigned char> resident((end - start) / page);
        if (mincore(reinterpret_cast<void*>(start), end - start, resident.data()) != 0) return false;
        for (unsigned char flag : resident) {
          if (((flag & 1) != 0) != all) return false;
        }
      }
    }
  }
  return true;
}

// Why residency cannot show the backing here, or empty when it can: a kernel
// without MADV_POPULATE_WRITE (before 5.14) backs nothing ahead, and with
// transparent huge pages "always" one touch backs 2 MiB.
std::string WhyBackingIsUnobservable() {
  const size_t bytes = size_t{1} << 16;
  void* probe = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (probe == MAP_FAILED) return "no memory for a probe mapping";
  const bool populates = madvise(probe, bytes, 23 /* MADV_POPULATE_WRITE */) == 0;
  munmap(probe, bytes);
  if (!populates) return "the kernel has no MADV_POPULATE_WRITE";
  std::ifstream thp("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string mode((std::istreambuf_iterator<char>(thp)), std::istreambuf_iterator<char>());
  if (mode.find("[always]") != std::string::npos) return "transparent huge pages are \"always\"";
  return "";
}

TEST(KvPageBackingTest, AStepBacksTheBlocksItsRowsEnterAndNoMore) {
  if (const std::string why = WhyBackingIsUnobservable(); !why.empty()) GTEST_SKIP() << why;
  const DecoderModel model = LongContextModel();
  DecoderKvCache cache = LongCache(model);
  if (!RowsResident(cache, kBlockRows, kCapacity, /*all=*/false)) {
    GTEST_SKIP() << "the cache's pages are resident before any step (heap buffers, as in a sanitizer build): "
                    "backing cannot be observed";
  }
  DecoderKvSession session = *Bind(cache, model, FastF32());
  ASSERT_TRUE(session.Prefill(testing::SeededTokens(3, 1, 50)));
  // Three rows written; the first block of every lane is backed, the rest of the
  // capacity untouched.
  EXPECT_TRUE(RowsResident(cache, 0, kBlockRows, /*all=*/true));
  EXPECT_TRUE(RowsResident(cache, kBlockRows, kCapacity, /*all=*/false));

  // Decoding up to the block's end backs nothing more; the first row past it
  // backs the next block.
  for (uint32_t token : testing::SeededTokens(kBlockRows - 3, 2, 50)) ASSERT_TRUE(session.Decode(token));
  EXPECT_TRUE(RowsResident(cache, kBlockRows, kCapacity, /*all=*/false));
  ASSERT_TRUE(session.Decode(7));
  EXPECT_TRUE(RowsResident(cache, kBlockRows, 2 * kBlockRows, /*all=*/true));
  EXPECT_TRUE(RowsResident(cache, 2 * kBlockRows, kCapacity, /*all=*/false));
}

TEST(KvPageBackingTest, AStepWhosePagesCannotBeBackedFailsAndChangesNothing) {
  const DecoderModel model = LongContextModel();
  DecoderKvCache cache = LongCache(model);
  DecoderKvSession session = *Bind(cache, model, FastF32());
  ASSERT_TRUE(session.Prefill(testing::SeededTokens(kBlockRows, 3, 50)));
  const DecoderKvCache before = *cache.Clone();

  // The next row enters a new block, whose pages the system refuses.
  memory::FailPageBackingAfter(0);
  Result<StepOutput> refused = session.Decode(5);
  memory::ClearPageBackingFailures();
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code(), ErrorCode::kAllocationFailed) << refused.error().message();
  EXPECT_TRUE(cache == before);  // lengths, counters and storage

  // A row inside a backed block needs no backing: the same refusal changes nothing.
  ASSERT_TRUE(session.Decode(5));
  memory::FailPageBackingAfter(0);
  Result<StepOutput> inside = session.Decode(6);
  memory::ClearPageBackingFailures();
  ASSERT_TRUE(inside) << inside.error().message();
  EXPECT_EQ(cache.len(), kBlockRows + 2);
}

}  // namespace
}  // namespace kvrt
