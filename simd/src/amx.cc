// AMX availability (amx.h): CPUID, the tile palette, XCR0 and the Linux permission.
#include "kvrt/simd/amx.h"

#include <atomic>
#include <cstdint>
#include <string_view>

#if defined(__x86_64__)
#include <cpuid.h>
#endif
#if defined(__x86_64__) && defined(__linux__)
#include <asm/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace kvrt::simd {
namespace {

struct Registers {
  uint32_t eax = 0, ebx = 0, ecx = 0, edx = 0;
};

#if defined(__x86_64__)
bool Cpuid(uint32_t leaf, uint32_t subleaf, Registers& r) {
  if (__get_cpuid_max(0, nullptr) < leaf) return false;
  __cpuid_count(leaf, subleaf, r.eax, r.ebx, r.ecx, r.edx);
  return true;
}

uint64_t Xcr0() {
  uint32_t low = 0, high = 0;
  asm volatile("xgetbv" : "=a"(low), "=d"(high) : "c"(0));
  return (uint64_t{high} << 32) | low;
}
#endif

// "" when the tiles may be used, else the first missing piece.
std::string_view FindAmxBf16() {
#if !defined(__x86_64__)
  return "not an x86-64 CPU";
#else
  Registers r;
  if (!Cpuid(7, 0, r)) return "the CPU has no AMX (CPUID has no leaf 7)";
  constexpr uint32_t kAmxBf16 = 1u << 22, kAmxTile = 1u << 24;
  if ((r.edx & kAmxTile) == 0) return "the CPU has no AMX tiles (CPUID.7.0:EDX[24] AMX-TILE clear)";
  if ((r.edx & kAmxBf16) == 0) return "the CPU has no AMX-BF16 (CPUID.7.0:EDX[22] clear)";
  // Palette 1 as the kernels use it: 8 tiles of up to 16 rows of 64 bytes.
  if (!Cpuid(0x1D, 1, r)) return "the CPU describes no tile palette (CPUID leaf 0x1D)";
  const uint32_t bytes_per_row = r.ebx & 0xFFFF, names = r.ebx >> 16, rows = r.ecx & 0xFFFF;
  if (bytes_per_row < 64 || names < 8 || rows < 16) return "the CPU's tile palette 1 is smaller than 8 tiles of 16 rows x 64 bytes";
  Registers features;
  Cpuid(1, 0, features);
  if ((features.ecx & (1u << 27)) == 0) return "the OS has not enabled XSAVE (CPUID.1:ECX[27] OSXSAVE clear)";
  constexpr uint64_t kTileConfig = 1ull << 17, kTileData = 1ull << 18;
  if ((Xcr0() & (kTileConfig | kTileData)) != (kTileConfig | kTileData)) return "the OS does not save the tile state (XCR0 bits 17-18)";
#if defined(__linux__)
  // Linux enables tile data per process, on request (kernel 5.16+).
  constexpr unsigned long kXfeatureTileData = 18;
  if (syscall(SYS_arch_prctl, ARCH_REQ_XCOMP_PERM, kXfeatureTileData) != 0) {
    return "Linux refused the AMX tile data permission (arch_prctl ARCH_REQ_XCOMP_PERM)";
  }
#endif
  return "";
#endif
}

std::string_view AmxBf16Status() {
  static const std::string_view missing = FindAmxBf16();
  return missing;
}

std::atomic<bool> amx_allowed{true};

}  // namespace

bool AmxBf16Available() { return AmxBf16Status().empty(); }
std::string_view AmxBf16UnavailableReason() { return AmxBf16Status(); }

void AllowAmx(bool allowed) { amx_allowed.store(allowed, std::memory_order_relaxed); }
bool AmxAllowed() { return amx_allowed.load(std::memory_order_relaxed); }

}  // namespace kvrt::simd
