#include "core/regular_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <new>
#include <utility>

#include "core/io_error.h"

namespace kvrt {

RegularFile::RegularFile(RegularFile&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)), size_(other.size_) {}

RegularFile::~RegularFile() {
  if (fd_ >= 0) ::close(fd_);
}

int RegularFile::Release() { return std::exchange(fd_, -1); }

const char* FileKindName(unsigned mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

Result<RegularFile> OpenRegularFile(const std::string& path, std::string_view expected,
                                    std::string_view open_operation) try {
  // O_NONBLOCK: opening a FIFO without a writer returns at once instead of
  // waiting; the descriptor is closed again before anything reads a non-file.
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return Fail(IoError(open_operation, path, errno));
  struct stat status {};
  if (::fstat(fd, &status) != 0) {
    const int error = errno;
    ::close(fd);
    return Fail(IoError("stat", path, error));
  }
  if (!S_ISREG(status.st_mode)) {
    ::close(fd);
    const std::string kind = FileKindName(status.st_mode);
    return Fail(ErrorCode::kNotRegularFile, {{"path", path}, {"kind", kind}},
                path + " is " + kind + ", not " + std::string(expected));
  }
  return RegularFile(fd, static_cast<uint64_t>(status.st_size));
} catch (const std::bad_alloc&) {
  return Fail(ErrorCode::kAllocationFailed, {}, "could not allocate the error for a file open");
}

Result<void> RequireReplaceableDestination(const std::string& path) try {
  struct stat status {};
  if (::lstat(path.c_str(), &status) != 0) {
    if (errno == ENOENT) return {};
    return Fail(IoError("stat", path, errno));
  }
  const unsigned mode = status.st_mode;
  if (S_ISREG(mode) || S_ISLNK(mode) || S_ISDIR(mode)) return {};
  const std::string kind = FileKindName(mode);
  return Fail(ErrorCode::kNotRegularFile, {{"path", path}, {"kind", kind}},
              path + " is " + kind + "; kvrt writes only a new file or over a regular file");
} catch (const std::bad_alloc&) {
  return Fail(ErrorCode::kAllocationFailed, {}, "could not allocate the error for a file destination");
}

}  // namespace kvrt
