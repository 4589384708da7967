#include "formats/llama2c/file_io.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <utility>

#include "core/regular_file.h"
#include "formats/llama2c/errors.h"
#include "core/io_error.h"

namespace kvrt::llama2c {
namespace {

std::atomic<uint64_t> next_temporary{0};

}  // namespace

Result<InputFile> InputFile::Open(const std::string& path, std::string_view what) {
  Result<RegularFile> file = OpenRegularFile(path, what);
  if (!file) return Fail(std::move(file.error()));
  const uint64_t size = file->size();
  return InputFile(path, file->Release(), size);
}

InputFile::InputFile(InputFile&& other) noexcept
    : path_(std::move(other.path_)),
      fd_(std::exchange(other.fd_, -1)),
      size_(other.size_),
      position_(other.position_) {}

InputFile::~InputFile() {
  if (fd_ >= 0) ::close(fd_);
}

Result<void> InputFile::Read(std::span<uint8_t> out, std::string_view context) {
  size_t done = 0;
  while (done < out.size()) {
    const ssize_t got = ::read(fd_, out.data() + done, out.size() - done);
    if (got < 0) {
      if (errno == EINTR) continue;
      return Fail(IoError("read", path_, errno));
    }
    if (got == 0) {  // the file shrank under us, or the caller asked past its end
      return Fail(Truncated(context, position_ + out.size(), position_ + done));
    }
    done += static_cast<size_t>(got);
  }
  position_ += out.size();
  return {};
}

Result<std::vector<uint8_t>> ReadSmallFile(const std::string& path, uint64_t limit) {
  Result<InputFile> file = InputFile::Open(path);
  if (!file) return Fail(std::move(file.error()));
  if (file->size() > limit) {
    return Fail(ErrorCode::kInvalidArgument, {},
                path + " has " + std::to_string(file->size()) + " bytes, more than the " +
                    std::to_string(limit) + " this kind of file may have");
  }
  std::vector<uint8_t> bytes(file->size());
  if (auto read = file->Read(bytes, path); !read) return Fail(std::move(read.error()));
  return bytes;
}

Result<OutputFile> OutputFile::Create(const std::string& path) {
  if (auto replaceable = RequireReplaceableDestination(path); !replaceable) return Fail(std::move(replaceable.error()));
  const std::string temporary = path + ".tmp-" + std::to_string(::getpid()) + "-" +
                                std::to_string(next_temporary.fetch_add(1));
  const int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (fd < 0) return Fail(IoError("create temporary", temporary, errno));
  return OutputFile(path, temporary, fd);
}

OutputFile::OutputFile(OutputFile&& other) noexcept
    : path_(std::move(other.path_)),
      temporary_(std::move(other.temporary_)),
      fd_(std::exchange(other.fd_, -1)),
      committed_(std::exchange(other.committed_, true)) {}

OutputFile::~OutputFile() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_) ::unlink(temporary_.c_str());
}

Result<void> OutputFile::Write(std::span<const uint8_t> bytes) {
  size_t written = 0;
  while (written < bytes.size()) {
    const ssize_t result = ::write(fd_, bytes.data() + written, bytes.size() - written);
    if (result < 0) {
      if (errno == EINTR) continue;
      return Fail(IoError("write temporary", temporary_, errno));
    }
    written += static_cast<size_t>(result);
  }
  return {};
}

Result<void> OutputFile::Commit() {
  if (::fsync(fd_) != 0) return Fail(IoError("synchronize temporary", temporary_, errno));
  ::close(std::exchange(fd_, -1));
  if (::rename(temporary_.c_str(), path_.c_str()) != 0) {
    return Fail(IoError("atomically replace", path_, errno));
  }
  committed_ = true;
  return {};
}

Result<void> WriteFileAtomically(const std::string& path, std::span<const uint8_t> bytes) {
  Result<OutputFile> file = OutputFile::Create(path);
  if (!file) return Fail(std::move(file.error()));
  if (auto written = file->Write(bytes); !written) return written;
  return file->Commit();
}

}  // namespace kvrt::llama2c
