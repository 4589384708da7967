// operator new for executables that run on mimalloc.
//
// Debian's libmimalloc is a C build: its operator new aborts the process when memory
// runs out unless a new_handler is installed, where kvrt's executables report
// AllocationFailed and exit 2 (tests/reliability/limits_test.cc). These definitions,
// linked into the executable, come before the library's in symbol lookup: they
// allocate from mimalloc and throw std::bad_alloc as the C++ standard asks. The
// matching operator delete is mimalloc's (mi_free), or libstdc++'s, which calls free,
// also mimalloc's.
#include <mimalloc.h>

#include <cstddef>
#include <new>

namespace {

// The standard's loop: on failure, call the new_handler if there is one, else throw.
template <class Allocate>
void* AllocateOrThrow(Allocate&& allocate) {
  for (;;) {
    if (void* block = allocate()) return block;
    std::new_handler handler = std::get_new_handler();
    if (handler == nullptr) throw std::bad_alloc();
    handler();
  }
}

// The nothrow forms: the same, with nullptr for the exception.
template <class Allocate>
void* OrNull(Allocate&& allocate) noexcept {
  try {
    return allocate();
  } catch (const std::bad_alloc&) {
    return nullptr;
  }
}

// operator new(0) must return a unique pointer: mi_malloc(0) does.
void* Plain(std::size_t size) { return AllocateOrThrow([size] { return mi_malloc(size); }); }
void* Aligned(std::size_t size, std::align_val_t alignment) {
  return AllocateOrThrow([=] { return mi_malloc_aligned(size, static_cast<std::size_t>(alignment)); });
}

}  // namespace

void* operator new(std::size_t size) { return Plain(size); }
void* operator new[](std::size_t size) { return Plain(size); }
void* operator new(std::size_t size, std::align_val_t alignment) { return Aligned(size, alignment); }
void* operator new[](std::size_t size, std::align_val_t alignment) { return Aligned(size, alignment); }
void* operator new(std::size_t size, const std::nothrow_t&) noexcept {
  return OrNull([size] { return Plain(size); });
}
void* operator new[](std::size_t size, const std::nothrow_t&) noexcept {
  return OrNull([size] { return Plain(size); });
}
void* operator new(std::size_t size, std::align_val_t alignment, const std::nothrow_t&) noexcept {
  return OrNull([=] { return Aligned(size, alignment); });
}
void* operator new[](std::size_t size, std::align_val_t alignment, const std::nothrow_t&) noexcept {
  return OrNull([=] { return Aligned(size, alignment); });
}
