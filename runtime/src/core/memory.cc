#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "core/allocation_faults.h"
#include "core/buffer.h"

// Buffers come from the C library's posix_memalign.
//
// kvrt used to serve them from mimalloc, but the only mimalloc Debian 12 ships
// (libmimalloc2.0, a shared object; there is no libmimalloc.a and no build
// without MI_OVERRIDE) exports malloc, free and operator new itself: linking it
// replaced the allocator of the whole host process (libc, TBB and Highway all
// bound malloc to libmimalloc.so.2), and its operator new calls abort() on
// exhaustion instead of throwing std::bad_alloc, which no caller can turn into
// an AllocationFailed. Hiding the override would need a static archive to
// localise symbols in (objcopy --localize-symbol, --exclude-libs), which the
// distribution does not provide, so the runtime uses libc: its buffers are few
// and large (weights, caches, workspaces), allocated once per model or session,
// where a general-purpose allocator's speed does not matter. posix_memalign also
// keeps the exact size, so a sanitizer reports a read one byte past a buffer
// (aligned_alloc would round the size up to the alignment). kvrt's own
// executables, which own their process, do link mimalloc as its allocator
// (tools/allocator/), so there these calls land in mimalloc; the library never
// chooses.
//
// Requests of kMappedBytes or more are anonymous mappings instead: the kernel
// hands them out zeroed and backs a page only when it is first written, so a
// KV cache or workspace sized for a context of a million positions costs the
// RSS of the positions actually used, and no memset touches it all up front.
//
// Pages::kHuge mappings of at least one huge page (weights, the fast engine's
// workspace) start on a 2 MiB boundary and are madvise(MADV_HUGEPAGE)d. Debian's
// kernels grant transparent huge pages only to regions that ask ("madvise"
// mode), and on 4 KiB pages a large prefill's matrix products fall well short of
// the FMA-peak fraction the same kernel reaches on cache-resident operands; the
// hint wins most of it back (figures in docs/performance/design_measurements.md).
// The hint is advisory: where huge pages are off the buffer keeps small pages. The
// mapping is trimmed to the request (rounded to a small page), so an untouched tail
// still costs no RSS.
// Under a sanitizer every buffer stays on the (instrumented) heap.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define KVRT_SANITIZER_HEAP 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define KVRT_SANITIZER_HEAP 1
#endif
#endif

namespace kvrt::memory {
namespace {

#if defined(KVRT_SANITIZER_HEAP)
constexpr size_t kMappedBytes = SIZE_MAX;
#else
constexpr size_t kMappedBytes = size_t{1} << 18;  // 256 KiB
#endif
constexpr size_t kHugePageBytes = size_t{1} << 21;  // x86-64 and arm64 (4 KiB base pages)

void* MapPages(size_t size) {
  void* pages = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  return pages == MAP_FAILED ? nullptr : pages;
}

// `size` bytes of anonymous pages starting on a huge-page boundary, advised to be
// backed by huge pages: map a huge page more than asked, then unmap the slack
// before the boundary and after the request.
void* MapHugePages(size_t size) {
  const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  if (size > SIZE_MAX - kHugePageBytes - page) return nullptr;
  const size_t kept = (size + page - 1) / page * page;
  auto* raw = static_cast<std::byte*>(MapPages(kept + kHugePageBytes));
  if (raw == nullptr) return nullptr;
  // mmap returns page-aligned addresses, so the head and the tail are whole pages.
  const auto address = reinterpret_cast<uintptr_t>(raw);
  const size_t head = (kHugePageBytes - address % kHugePageBytes) % kHugePageBytes;
  if (head != 0) ::munmap(raw, head);
  ::munmap(raw + head + kept, kHugePageBytes - head);
#ifdef MADV_HUGEPAGE
  ::madvise(raw + head, kept, MADV_HUGEPAGE);  // advisory: small pages where refused
#endif
  return raw + head;
}

struct FaultInjection {
  bool armed = false;
  uint64_t successes_left = 0;
  uint64_t calls = 0;

  // Counts a call; false when it is to fail.
  bool Pass() {
    ++calls;
    if (!armed) return true;
    if (successes_left == 0) return false;
    --successes_left;
    return true;
  }
};
thread_local FaultInjection fault_injection;
thread_local FaultInjection page_backing_faults;

}  // namespace

void* AllocateZeroed(size_t bytes, Pages pages) {
  if (!fault_injection.Pass()) return nullptr;
  // A zero-byte request still gets a unique pointer, so that an empty buffer
  // stays distinguishable from a failed allocation.
  const size_t size = bytes == 0 ? 1 : bytes;
  if (size >= kMappedBytes) {  // page-aligned, hence kBufferAlignment-aligned
    const bool huge = pages == Pages::kHuge && size >= kHugePageBytes;
    return huge ? MapHugePages(size) : MapPages(size);
  }
  void* pointer = nullptr;
  if (posix_memalign(&pointer, kBufferAlignment, size) != 0) return nullptr;
  std::memset(pointer, 0, size);
  return pointer;
}

void FreeAligned(void* pointer, size_t bytes) {
  if (pointer == nullptr) return;
  const size_t size = bytes == 0 ? 1 : bytes;
  if (size >= kMappedBytes) {
    ::munmap(pointer, size);
  } else {
    std::free(pointer);
  }
}

// Without it, each first write to a page of a growing KV cache traps into the
// kernel on its own: 12 us a 4 KiB page on the 2-vCPU VM the figures in
// docs/performance/ come from, against about 1 us a page for the same pages backed
// by one MADV_POPULATE_WRITE call of 32 KiB or more (pages already backed cost
// only the call). A decode step writes a new row in every lane of every layer, so
// the traps came to 10-25 % of a fresh session's decode.
bool BackPagesForWriting(void* begin, size_t bytes) {
  if (!page_backing_faults.Pass()) return false;
  if (bytes == 0) return true;
#ifdef __linux__
  constexpr int kPopulateWrite = 23;  // MADV_POPULATE_WRITE (Linux 5.14), absent from older headers
  const auto page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  const auto first = reinterpret_cast<uintptr_t>(begin);
  const uintptr_t start = first / page * page;
  const uintptr_t end = (first + bytes + page - 1) / page * page;
  // The range lies in one buffer, whose first and last pages are mapped, so
  // ENOMEM can only mean that memory ran out. Anything else (EINVAL from an
  // older kernel) leaves the pages to the writes.
  if (::madvise(reinterpret_cast<void*>(start), end - start, kPopulateWrite) != 0 && errno == ENOMEM) {
    return false;
  }
#endif
  return true;
}

void FailPageBackingAfter(uint64_t successes) {
  page_backing_faults.armed = true;
  page_backing_faults.successes_left = successes;
}

void ClearPageBackingFailures() { page_backing_faults.armed = false; }

void FailAllocationsAfter(uint64_t successes) {
  fault_injection.armed = true;
  fault_injection.successes_left = successes;
}

void ClearAllocationFailures() { fault_injection.armed = false; }

uint64_t AllocationCallsOnThisThread() { return fault_injection.calls; }

}  // namespace kvrt::memory
