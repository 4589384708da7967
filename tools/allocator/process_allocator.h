// Which allocator serves this process's malloc and operator new: what kvrt's
// executables (the CLI, the benchmarks) report beside their results.
//
// The executables link mimalloc as the process allocator; the library never does
// (an embedder's process keeps its own malloc and operator new), and sanitizer builds
// keep libc's so that the sanitizers see every allocation.
#pragma once

#include <string>

namespace kvrt::allocator {

// "mimalloc 2.0.9" when mimalloc serves this process's malloc (checked on a live
// block, not assumed from the link), else "libc".
std::string ProcessAllocatorName();

}  // namespace kvrt::allocator
