#include "heap_hooks.h"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <new>

// g++ announces sanitizers with __SANITIZE_*__, clang through __has_feature.
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

using kvrt::testing::OnHeapRequest;

#if KVRT_HOOK_MALLOC
// glibc lets the executable replace malloc; its own implementation stays
// reachable under the __libc_ names. Operator new below calls those directly,
// so one request reaches the policy once.
extern "C" {
void* __libc_malloc(size_t);
void* __libc_calloc(size_t, size_t);
void* __libc_realloc(void*, size_t);
void* __libc_memalign(size_t, size_t);
void __libc_free(void*);

void* malloc(size_t size) { return OnHeapRequest(size) ? __libc_malloc(size) : nullptr; }
void* calloc(size_t count, size_t size) {
  size_t bytes = 0;
  if (__builtin_mul_overflow(count, size, &bytes)) bytes = SIZE_MAX;
  return OnHeapRequest(bytes) ? __libc_calloc(count, size) : nullptr;
}
void* realloc(void* pointer, size_t size) {
  return OnHeapRequest(size) ? __libc_realloc(pointer, size) : nullptr;
}
void* memalign(size_t alignment, size_t size) {
  return OnHeapRequest(size) ? __libc_memalign(alignment, size) : nullptr;
}
void* aligned_alloc(size_t alignment, size_t size) {
  return OnHeapRequest(size) ? __libc_memalign(alignment, size) : nullptr;
}
int posix_memalign(void** out, size_t alignment, size_t size) {
  void* p = OnHeapRequest(size) ? __libc_memalign(alignment, size) : nullptr;
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

void* NewOrNull(std::size_t size) noexcept {
  if (!OnHeapRequest(size)) return nullptr;
  return KVRT_RAW_MALLOC(size == 0 ? 1 : size);
}

void* AlignedNewOrNull(std::size_t size, std::align_val_t alignment) noexcept {
  if (!OnHeapRequest(size)) return nullptr;
  // aligned_alloc wants a multiple of the alignment.
  const std::size_t align = static_cast<std::size_t>(alignment);
  const std::size_t rounded = (size + align - 1) / align * align;
  return KVRT_RAW_MEMALIGN(align, rounded == 0 ? align : rounded);
}

void* NewOrThrow(std::size_t size) {
  if (void* p = NewOrNull(size)) return p;
  throw std::bad_alloc();
}

void* AlignedNewOrThrow(std::size_t size, std::align_val_t alignment) {
  if (void* p = AlignedNewOrNull(size, alignment)) return p;
  throw std::bad_alloc();
}

}  // namespace

void* operator new(std::size_t size) { return NewOrThrow(size); }
void* operator new[](std::size_t size) { return NewOrThrow(size); }
void* operator new(std::size_t size, std::align_val_t alignment) { return AlignedNewOrThrow(size, alignment); }
void* operator new[](std::size_t size, std::align_val_t alignment) { return AlignedNewOrThrow(size, alignment); }
void* operator new(std::size_t size, const std::nothrow_t&) noexcept { return NewOrNull(size); }
void* operator new[](std::size_t size, const std::nothrow_t&) noexcept { return NewOrNull(size); }
void* operator new(std::size_t size, std::align_val_t alignment, const std::nothrow_t&) noexcept {
  return AlignedNewOrNull(size, alignment);
}
void* operator new[](std::size_t size, std::align_val_t alignment, const std::nothrow_t&) noexcept {
  return AlignedNewOrNull(size, alignment);
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
