// A read-only view of a whole file, owned by one RAII object that every tensor
// view shares (std::shared_ptr), so the bytes stay mapped while anything refers
// to them. Files are memory-mapped; tests and fuzzers can wrap bytes they already
// hold.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "kvrt/error.h"

namespace kvrt::gguf {

class FileMapping {
 public:
  // open(O_RDONLY | O_NONBLOCK | O_CLOEXEC), fstat, then mmap(PROT_READ,
  // MAP_PRIVATE). Io{operation, path, os_error} when a call fails;
  // NotRegularFile{path, kind} for a directory, FIFO, device or socket (O_NONBLOCK
  // keeps open() of a FIFO from blocking before fstat can refuse it).
  static Result<std::shared_ptr<const FileMapping>> Open(const std::string& path);
  // Bytes already in memory, for tests and fuzzers; `name` stands in for a path.
  static Result<std::shared_ptr<const FileMapping>> FromBytes(std::vector<uint8_t> bytes,
                                                             std::string name = "<memory>");

  FileMapping(const FileMapping&) = delete;
  FileMapping& operator=(const FileMapping&) = delete;
  ~FileMapping();

  std::span<const uint8_t> bytes() const { return {data_, size_}; }
  const std::string& path() const { return path_; }

 private:
  FileMapping() = default;
  std::string path_;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
  bool mapped_ = false;          // data_ came from mmap (else from owned_)
  std::vector<uint8_t> owned_;   // FromBytes storage
};

}  // namespace kvrt::gguf
