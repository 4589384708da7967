// The AMX tile registers, two ways behind one interface:
//   AmxTiles  — the instructions (LDTILECFG, TILEZERO, TILELOADD, TILESTORED,
//               TDPBF16PS, TILERELEASE), for CPUs with AMX (amx.h);
//   TileModel — the same instructions as the SDM defines them, on eight C++ arrays,
//               checking each use against the configuration (#UD conditions), so the
//               tile kernels' shapes, strides, tails and stores are tested on every CPU.
// A kernel is a template over the Tiles; tile numbers are template arguments because
// the instructions name their registers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

namespace kvrt::simd {

inline constexpr size_t kTileRegisters = 8;
inline constexpr size_t kTileMaxRows = 16;
inline constexpr size_t kTileRowBytes = 64;

// LDTILECFG's 64-byte operand, palette 1.
struct alignas(64) TileConfig {
  uint8_t palette = 1;
  uint8_t start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t bytes_per_row[16] = {};
  uint8_t rows[16] = {};
};
static_assert(sizeof(TileConfig) == 64, "LDTILECFG reads 64 bytes");

#if defined(__x86_64__)
// Register numbers are spelled into the instruction text (AT&T order: sources first).
// The "memory" clobbers order tile loads and stores with the ordinary accesses around
// them; the tile registers themselves are touched by nothing the compiler generates.
struct AmxTiles {
  void Configure(const TileConfig& config) { asm volatile("ldtilecfg %0" ::"m"(config) : "memory"); }
  void Release() { asm volatile("tilerelease" ::: "memory"); }

  template <int kTile>
  void Zero() {
#define KVRT_AMX_CASE(t) \
  if constexpr (kTile == t) asm volatile("tilezero %%tmm" #t ::);
    KVRT_AMX_CASE(0) KVRT_AMX_CASE(1) KVRT_AMX_CASE(2) KVRT_AMX_CASE(3)
    KVRT_AMX_CASE(4) KVRT_AMX_CASE(5) KVRT_AMX_CASE(6) KVRT_AMX_CASE(7)
#undef KVRT_AMX_CASE
  }

  template <int kTile>
  void Load(const void* base, size_t stride) {
    const int64_t step = static_cast<int64_t>(stride);
#define KVRT_AMX_CASE(t) \
  if constexpr (kTile == t) asm volatile("tileloadd (%0,%1,1), %%tmm" #t ::"r"(base), "r"(step) : "memory");
    KVRT_AMX_CASE(0) KVRT_AMX_CASE(1) KVRT_AMX_CASE(2) KVRT_AMX_CASE(3)
    KVRT_AMX_CASE(4) KVRT_AMX_CASE(5) KVRT_AMX_CASE(6) KVRT_AMX_CASE(7)
#undef KVRT_AMX_CASE
  }

  template <int kTile>
  void Store(void* base, size_t stride) {
    const int64_t step = static_cast<int64_t>(stride);
#define KVRT_AMX_CASE(t) \
  if constexpr (kTile == t) asm volatile("tilestored %%tmm" #t ", (%0,%1,1)" ::"r"(base), "r"(step) : "memory");
    KVRT_AMX_CASE(0) KVRT_AMX_CASE(1) KVRT_AMX_CASE(2) KVRT_AMX_CASE(3)
    KVRT_AMX_CASE(4) KVRT_AMX_CASE(5) KVRT_AMX_CASE(6) KVRT_AMX_CASE(7)
#undef KVRT_AMX_CASE
  }

  // C += A·B, C: kC, A: kA, B: kB, for the register triples the kernels use.
  template <int kC, int kA, int kB>
  void DotBf16() {
#define KVRT_AMX_CASE(c, a, b) \
  if constexpr (kC == c && kA == a && kB == b) asm volatile("tdpbf16ps %%tmm" #b ", %%tmm" #a ", %%tmm" #c ::);
    KVRT_AMX_CASE(0, 4, 6) KVRT_AMX_CASE(1, 4, 7) KVRT_AMX_CASE(2, 5, 6) KVRT_AMX_CASE(3, 5, 7)
#undef KVRT_AMX_CASE
    static_assert((kC == 0 && kA == 4 && kB == 6) || (kC == 1 && kA == 4 && kB == 7) ||
                      (kC == 2 && kA == 5 && kB == 6) || (kC == 3 && kA == 5 && kB == 7),
                  "add the register triple to AmxTiles::DotBf16");
  }
};
#endif

// The instructions on arrays. Each tile holds kTileMaxRows × kTileRowBytes bytes; a use
// of a tile outside its configuration, or a dot product whose shapes disagree, records
// the first such error (error()) and does nothing, where the CPU would raise #UD.
class TileModel {
 public:
  void Configure(const TileConfig& config) {
    if (config.palette != 1) return Fail("LDTILECFG: palette is not 1");
    for (size_t t = 0; t < kTileRegisters; ++t) {
      if (config.rows[t] > kTileMaxRows || config.bytes_per_row[t] > kTileRowBytes) {
        return Fail("LDTILECFG: tile " + std::to_string(t) + " larger than 16 x 64 bytes");
      }
    }
    config_ = config;
    configured_ = true;
    std::memset(tiles_, 0, sizeof(tiles_));  // LDTILECFG zeroes the tiles
  }
  void Release() {
    configured_ = false;
    std::memset(tiles_, 0, sizeof(tiles_));
  }

  template <int kTile>
  void Zero() {
    if (Usable(kTile, "TILEZERO")) std::memset(tiles_[kTile], 0, sizeof(tiles_[kTile]));
  }

  template <int kTile>
  void Load(const void* base, size_t stride) {
    if (!Usable(kTile, "TILELOADD")) return;
    std::memset(tiles_[kTile], 0, sizeof(tiles_[kTile]));  // rows and bytes past the shape read as zero
    for (size_t r = 0; r < config_.rows[kTile]; ++r) {
      std::memcpy(tiles_[kTile][r], static_cast<const uint8_t*>(base) + r * stride, config_.bytes_per_row[kTile]);
    }
  }

  template <int kTile>
  void Store(void* base, size_t stride) {
    if (!Usable(kTile, "TILESTORED")) return;
    for (size_t r = 0; r < config_.rows[kTile]; ++r) {
      std::memcpy(static_cast<uint8_t*>(base) + r * stride, tiles_[kTile][r], config_.bytes_per_row[kTile]);
    }
  }

  // TDPBF16PS as the Intrinsics Guide writes it: for each row m, pair k and column n,
  // c += a.even·b.even, then c += a.odd·b.odd, each sum rounded to f32 (products of two
  // bf16 are exact in f32); sums below 2^-126 flushed to zero.
  template <int kC, int kA, int kB>
  void DotBf16() {
    if (!Usable(kC, "TDPBF16PS") || !Usable(kA, "TDPBF16PS") || !Usable(kB, "TDPBF16PS")) return;
    const size_t rows = config_.rows[kC], columns = config_.bytes_per_row[kC] / 4;
    const size_t pairs = config_.bytes_per_row[kA] / 4;
    if (config_.rows[kA] != rows || config_.rows[kB] != pairs || config_.bytes_per_row[kB] != config_.bytes_per_row[kC]) {
      return Fail("TDPBF16PS: tile shapes disagree");
    }
    for (size_t m = 0; m < rows; ++m) {
      for (size_t n = 0; n < columns; ++n) {
        float acc = Float(tiles_[kC][m], n);
        for (size_t k = 0; k < pairs; ++k) {
          for (size_t half = 0; half < 2; ++half) {
            acc = Flush(acc + Bf16(tiles_[kA][m], 2 * k + half) * Bf16(tiles_[kB][k], 2 * n + half));
          }
        }
        std::memcpy(tiles_[kC][m] + 4 * n, &acc, sizeof(acc));
      }
    }
  }

  // The first misuse, "" when there was none.
  const std::string& error() const { return error_; }

 private:
  bool Usable(size_t tile, const char* instruction) {
    if (!configured_) return Fail(std::string(instruction) + ": tiles not configured"), false;
    if (config_.rows[tile] == 0 || config_.bytes_per_row[tile] == 0) {
      return Fail(std::string(instruction) + ": tile " + std::to_string(tile) + " not configured"), false;
    }
    return true;
  }
  void Fail(const std::string& what) {
    if (error_.empty()) error_ = what;
  }
  static float Float(const uint8_t* row, size_t i) {
    float value;
    std::memcpy(&value, row + 4 * i, sizeof(value));
    return value;
  }
  static float Bf16(const uint8_t* row, size_t i) {
    uint16_t half;
    std::memcpy(&half, row + 2 * i, sizeof(half));
    const uint32_t bits = uint32_t{half} << 16;
    float value;
    std::memcpy(&value, &bits, sizeof(value));
    return (bits & 0x7F800000u) == 0 ? 0.0f * value : value;  // input denormals read as zero
  }
  static float Flush(float x) { return (x != 0 && x > -0x1p-126f && x < 0x1p-126f) ? 0.0f * x : x; }

  TileConfig config_;
  bool configured_ = false;
  alignas(64) uint8_t tiles_[kTileRegisters][kTileMaxRows][kTileRowBytes] = {};
  std::string error_;
};

}  // namespace kvrt::simd
