#include "failing_allocator.h"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <new>

// Sanitizers own malloc; g++ announces them with __SANITIZE_*__, clang only
// through __has_feature.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define KVRT_HOOK_MALLOC 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define KVRT_HOOK_MALLOC 0
#endif
#endif
#ifndef KVRT_HOOK_MALLOC
#define KVRT_HOOK_MALLOC 1
#endif

namespace {

// Static TLS of the executable: usable inside malloc, before any constructor runs.
__thread bool armed = false;
__thread bool delivered = false;
__thread uint64_t fail_at = 0;
__thread uint64_t calls = 0;

// Counts one allocation; true when this one must fail.
bool ShouldFail() {
  const uint64_t index = calls++;
  if (!armed || delivered || index != fail_at) return false;
  delivered = true;
  return true;
}

}  // namespace

namespace kvrt::testing {

void FailNthHeapAllocation(uint64_t n) {
  calls = 0;
  fail_at = n;
  delivered = false;
  armed = true;
}
void ClearHeapAllocationFailure() { armed = false; }
uint64_t HeapAllocationsSinceArmed() { return calls; }
void ResetHeapAllocationCount() { calls = 0; }
bool HeapFailureDelivered() { return delivered; }

}  // namespace kvrt::testing

#if KVRT_HOOK_MALLOC
// glibc lets the executable replace malloc; its own implementation stays
// reachable under the __libc_ names. Operator new below calls those directly,
// so one allocation is counted once.
extern "C" {
void* __libc_malloc(size_t);
void* __libc_calloc(size_t, size_t);
void* __libc_realloc(void*, size_t);
void* __libc_memalign(size_t, size_t);
void __libc_free(void*);

void* malloc(size_t size) { return ShouldFail() ? nullptr : __libc_malloc(size); }
void* calloc(size_t count, size_t size) {
  return ShouldFail() ? nullptr : __libc_calloc(count, size);
}
void* realloc(void* pointer, size_t size) {
  return ShouldFail() ? nullptr : __libc_realloc(pointer, size);
}
void* memalign(size_t alignment, size_t size) {
  return ShouldFail() ? nullptr : __libc_memalign(alignment, size);
}
void* aligned_alloc(size_t alignment, size_t size) {
  return ShouldFail() ? nullptr : __libc_memalign(alignment, size);
}
int posix_memalign(void** out, size_t alignment, size_t size) {
  void* p = ShouldFail() ? nullptr : __libc_memalign(alignment, size);
  if (p == nullptr) return 12;  // ENOMEM
  *out = p;
  return 0;
}
void free(void* pointer) { __libc_free(pointer); }
}
#define KVRT_RAW_MALLOC __libc_malloc
#define KVRT_RAW_MEMALIGN __libc_memalign
#else
#define KVRT_RAW_MALLOC std::malloc
#define KVRT_RAW_MEMALIGN(alignment, size) std::aligned_alloc(alignment, size)
#endif

namespace {

void* NewOrThrow(std::size_t size) {
  if (ShouldFail()) throw std::bad_alloc();
  if (void* p = KVRT_RAW_MALLOC(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}

void* AlignedNewOrThrow(std::size_t size, std::align_val_t alignment) {
  if (ShouldFail()) throw std::bad_alloc();
  const std::size_t align = static_cast<std::size_t>(alignment);
  const std::size_t rounded = (size + align - 1) / align * align;
  if (void* p = KVRT_RAW_MEMALIGN(align, rounded == 0 ? align : rounded)) return p;
  throw std::bad_alloc();
}

void* NewOrNull(std::size_t size) noexcept {
  if (ShouldFail()) return nullptr;
  return KVRT_RAW_MALLOC(size == 0 ? 1 : size);
}

}  // namespace

void* operator new(std::size_t size) { return NewOrThrow(size); }
void* operator new[](std::size_t size) { return NewOrThrow(size); }
void* operator new(std::size_t size, std::align_val_t alignment) {
  return AlignedNewOrThrow(size, alignment);
}
void* operator new[](std::size_t size, std::align_val_t alignment) {
  return AlignedNewOrThrow(size, alignment);
}
void* operator new(std::size_t size, const std::nothrow_t&) noexcept { return NewOrNull(size); }
void* operator new[](std::size_t size, const std::nothrow_t&) noexcept { return NewOrNull(size); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
