// The bytes of a whole GGUF file, owned by one RAII object that every tensor view
// shares (std::shared_ptr), so they stay valid while anything refers to them.
//
// Open() reads the file into memory the runtime owns instead of mapping it. A
// mapped file that another process truncates (a model updated or downloaded in
// place) turns the next read of a vanished page into SIGBUS, which kills the
// host process wherever it happens: at load, or much later when a session first
// packs the stored compressed tensors (StoredWeights keeps these bytes alive for
// that). A library may not install signal handlers in its host, so the only way
// to make that impossible is to never touch file pages through a mapping: with
// read(), a file that shrinks is a short read, reported as Truncated. The cost is
// one copy from the page cache at load; peak RSS does not change, because the
// pages of a mapping that the loader reads count as resident too.
//
// (The name is historical: the bytes used to be mmap'ed.)
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/buffer.h"
#include "kvrt/error.h"

namespace kvrt::gguf {

class FileMapping {
 public:
  // open(O_RDONLY | O_NONBLOCK | O_CLOEXEC), fstat, then the whole file read into
  // a private buffer. Io{operation, path, os_error} when a call fails;
  // NotRegularFile{path, kind} for a directory, FIFO, device or socket (O_NONBLOCK
  // keeps open() of a FIFO from blocking before fstat can refuse it);
  // Truncated{context, expected, actual} when the file ends before the size fstat
  // gave (it shrank while being read); AllocationFailed. A file that grows while
  // being read is read up to its size at open.
  static Result<std::shared_ptr<const FileMapping>> Open(const std::string& path);
  // Bytes already in memory, for tests and fuzzers; `name` stands in for a path.
  static Result<std::shared_ptr<const FileMapping>> FromBytes(std::vector<uint8_t> bytes,
                                                             std::string name = "<memory>");

  FileMapping(const FileMapping&) = delete;
  FileMapping& operator=(const FileMapping&) = delete;

  std::span<const uint8_t> bytes() const { return {data_, size_}; }
  const std::string& path() const { return path_; }

 private:
  FileMapping() = default;
  std::string path_;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
  Buffer<uint8_t> read_;        // Open's storage
  std::vector<uint8_t> given_;  // FromBytes storage
};

}  // namespace kvrt::gguf
