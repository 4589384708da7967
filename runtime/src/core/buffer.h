// Owning, fixed-size, 64-byte aligned, zero-initialised buffers (libc or
// anonymous pages; see core/memory.cc).
//
// Every large allocation of the runtime goes through Buffer<T>::Allocate, which
// fails softly (std::nullopt) instead of throwing, so callers can turn an
// allocation failure into their own typed error and keep their state unchanged.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <utility>

namespace kvrt {

inline constexpr size_t kBufferAlignment = 64;

// How the pages of a large buffer are backed (see core/memory.cc).
enum class Pages {
  // Small pages, each backed when first written: a KV cache sized for the
  // longest context costs the RSS of the positions it holds.
  kOnFirstTouch,
  // Transparent huge pages where the system grants them (Linux, THP "madvise" or
  // "always"): for buffers the hot loops sweep whole, the weights and the fast
  // engine's workspace. A 2 MiB page takes one TLB entry where 4 KiB pages take
  // 512; a touched huge page is backed whole.
  kHuge,
};

namespace memory {

// Zero-filled, kBufferAlignment-aligned allocation of `bytes` (0 allowed);
// nullptr on failure. Large requests are fresh anonymous pages, so memory the
// owner never touches (the unused tail of a long context) costs no RSS; with
// Pages::kHuge they start on a huge-page boundary and ask for huge pages.
void* AllocateZeroed(size_t bytes, Pages pages = Pages::kOnFirstTouch);
// Frees what AllocateZeroed(bytes) returned (nullptr allowed).
void FreeAligned(void* pointer, size_t bytes);
// Backs the pages of [begin, begin + bytes), part of one buffer, with memory now,
// in one system call, so that the writes that follow take no page faults; their
// contents stay as they are. False when the system has no memory for them. Where
// the kernel cannot (before Linux 5.14) it does nothing and returns true: the
// writes then fault the pages in one at a time, as without it.
bool BackPagesForWriting(void* begin, size_t bytes);

}  // namespace memory

template <class T>
class Buffer {
 public:
  Buffer() = default;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  Buffer(Buffer&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}
  Buffer& operator=(Buffer&& other) noexcept {
    if (this != &other) {
      memory::FreeAligned(data_, size_ * sizeof(T));
      data_ = std::exchange(other.data_, nullptr);
      size_ = std::exchange(other.size_, 0);
    }
    return *this;
  }
  ~Buffer() { memory::FreeAligned(data_, size_ * sizeof(T)); }

  // `count` zero-initialised elements, or nullopt when the size overflows or the
  // allocation fails.
  static std::optional<Buffer> Allocate(size_t count, Pages pages = Pages::kOnFirstTouch) {
    if (count > SIZE_MAX / sizeof(T)) return std::nullopt;
    void* memory = memory::AllocateZeroed(count * sizeof(T), pages);
    if (memory == nullptr) return std::nullopt;
    Buffer buffer;
    buffer.data_ = static_cast<T*>(memory);
    buffer.size_ = count;
    return buffer;
  }

  T* data() { return data_; }
  const T* data() const { return data_; }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  T& operator[](size_t i) { return data_[i]; }
  const T& operator[](size_t i) const { return data_[i]; }
  std::span<T> span() { return {data_, size_}; }
  std::span<const T> span() const { return {data_, size_}; }

 private:
  T* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace kvrt
