#include "allocation_counter.h"

#include <atomic>
#include <cstdlib>
#include <new>

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define KVRT_INTERPOSE_MALLOC 0
#else
#define KVRT_INTERPOSE_MALLOC 1
#endif

namespace {

// Static TLS of the executable: usable inside malloc, before any constructor runs.
__thread uint64_t thread_calls = 0;
std::atomic<uint64_t> process_calls{0};

void Count() {
  ++thread_calls;
  process_calls.fetch_add(1, std::memory_order_relaxed);
}

void* NewOrThrow(std::size_t size) {
#if !KVRT_INTERPOSE_MALLOC
  Count();
#endif
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}

void* AlignedNewOrThrow(std::size_t size, std::align_val_t alignment) {
#if !KVRT_INTERPOSE_MALLOC
  Count();
#endif
  const std::size_t align = static_cast<std::size_t>(alignment);
  const std::size_t rounded = (size + align - 1) / align * align;
  if (void* p = std::aligned_alloc(align, rounded == 0 ? align : rounded)) return p;
  throw std::bad_alloc();
}

}  // namespace

namespace kvrt::testing {
uint64_t HeapAllocationsInProcess() {
  return process_calls.load(std::memory_order_relaxed) + memory::AllocationCallsOnThisThread();
}
uint64_t HeapCallsOnThisThread() { return thread_calls; }
}  // namespace kvrt::testing

#if KVRT_INTERPOSE_MALLOC
// glibc lets the executable replace malloc; its own implementation stays
// reachable under the __libc_ names.
extern "C" {
void* __libc_malloc(size_t);
void* __libc_calloc(size_t, size_t);
void* __libc_realloc(void*, size_t);
void* __libc_memalign(size_t, size_t);
void __libc_free(void*);

void* malloc(size_t size) {
  Count();
  return __libc_malloc(size);
}
void* calloc(size_t count, size_t size) {
  Count();
  return __libc_calloc(count, size);
}
void* realloc(void* pointer, size_t size) {
  Count();
  return __libc_realloc(pointer, size);
}
void* memalign(size_t alignment, size_t size) {
  Count();
  return __libc_memalign(alignment, size);
}
void* aligned_alloc(size_t alignment, size_t size) {
  Count();
  return __libc_memalign(alignment, size);
}
int posix_memalign(void** out, size_t alignment, size_t size) {
  Count();
  void* p = __libc_memalign(alignment, size);
  if (p == nullptr) return 12;  // ENOMEM
  *out = p;
  return 0;
}
void free(void* pointer) { __libc_free(pointer); }
}
#endif

void* operator new(std::size_t size) { return NewOrThrow(size); }
void* operator new[](std::size_t size) { return NewOrThrow(size); }
void* operator new(std::size_t size, std::align_val_t alignment) { return AlignedNewOrThrow(size, alignment); }
void* operator new[](std::size_t size, std::align_val_t alignment) { return AlignedNewOrThrow(size, alignment); }
void* operator new(std::size_t size, const std::nothrow_t&) noexcept {
#if !KVRT_INTERPOSE_MALLOC
  Count();
#endif
  return std::malloc(size == 0 ? 1 : size);
}
void* operator new[](std::size_t size, const std::nothrow_t& tag) noexcept { return operator new(size, tag); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
