// Intel AMX (Advanced Matrix Extensions: eight 1 KiB tile registers and a tile
// matrix unit, Sapphire Rapids and later), found at run time.
//
// A process may run AMX instructions only when the CPU has them (CPUID), its tile
// palette is the one the kernels are written for (8 tiles of 16 rows × 64 bytes),
// the OS saves the tile state (XCR0), and, on Linux, the process has asked for the
// tile data permission (arch_prctl ARCH_REQ_XCOMP_PERM; without it the first tile
// instruction raises SIGILL). AmxBf16Available asks once, on first call, and says
// why not when it cannot. Highway has no AMX ops: the kernels that use it are small
// hand-written ones (bf16_activations.h, MatMulBf16Amx), each checked against a
// scalar twin by tests that run where AMX exists and are skipped, with this reason,
// where it does not.
#pragma once

#include <cstddef>
#include <string_view>

namespace kvrt::simd {

// AMX-TILE and AMX-BF16 usable in this process.
bool AmxBf16Available();

// Why AmxBf16Available() is false ("" when it is true), one line.
std::string_view AmxBf16UnavailableReason();

// Whether the dispatching kernels (MatMulBf16) may pick an AMX kernel where one is
// available; on by default. The benchmarks turn it off to measure the vector kernels
// beside the tiles. Like RestrictDispatchTo, call it before any kernel runs: a
// session's rows would otherwise mix the two kernels' roundings.
void AllowAmx(bool allowed);
bool AmxAllowed();

// The tiles' bf16 peak probe: `rounds` rounds of four independent TDPBF16PS on full
// 16 × 16 × 32 tiles held in registers; returns the FLOPs executed (2 per product),
// 0 where AmxBf16Available() is false. Adds a result to *sink.
size_t RunAmxBf16DotProbe(size_t rounds, float* sink);

}  // namespace kvrt::simd
