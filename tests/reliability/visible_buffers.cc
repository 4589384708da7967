// Sanitizer builds only: serves the runtime's aligned buffers (memory.cc asks
// mimalloc for them) from the sanitizer's own allocator.
//
// mimalloc is an uninstrumented shared library with its own heap, so ASan sees
// neither the bounds of a Buffer (an engine writing one row past its workspace
// would go unnoticed) nor use after free, and TSan sees neither the allocation
// nor the cross-thread free that separates two users of the same memory.
// Defining the two entry points memory.cc uses in the executable binds the
// runtime's calls here at link time; nothing else in the process calls them.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define KVRT_VISIBLE_BUFFERS 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define KVRT_VISIBLE_BUFFERS 1
#endif
#endif

#ifdef KVRT_VISIBLE_BUFFERS
#include <cstddef>
#include <cstdlib>

extern "C" {

void* mi_malloc_aligned(size_t size, size_t alignment) {
  // posix_memalign keeps the exact size, so a read one byte past a buffer is
  // reported (aligned_alloc would round the size up to the alignment).
  void* pointer = nullptr;
  return posix_memalign(&pointer, alignment, size == 0 ? 1 : size) == 0 ? pointer : nullptr;
}

void mi_free(void* pointer) { std::free(pointer); }

}  // extern "C"
#endif
