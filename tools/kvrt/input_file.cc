#include "input_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>
#include <utility>

#include "flags.h"

namespace kvrt::cli {
namespace {

const char* KindName(unsigned mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

Error IoError(const std::string& operation, const std::string& path, int os_error) {
  return Error(ErrorCode::kIo, {{"operation", operation}, {"path", path}, {"os_error", int64_t{os_error}}},
               "could not " + operation + " " + path + ": " +
                   std::error_code(os_error, std::generic_category()).message());
}

}  // namespace

Result<InputFile> InputFile::Open(const std::string& path, const std::string& what) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return std::unexpected(IoError("open", path, errno));
  InputFile file(path, fd, 0);
  struct stat status {};
  if (::fstat(fd, &status) != 0) return std::unexpected(IoError("stat", path, errno));
  if (!S_ISREG(status.st_mode)) {
    const std::string kind = KindName(status.st_mode);
    return std::unexpected(Error(ErrorCode::kNotRegularFile, {{"path", path}, {"kind", kind}},
                                 path + " is " + kind + ", not " + what));
  }
  file.size_ = static_cast<uint64_t>(status.st_size);
  return file;
}

InputFile::InputFile(InputFile&& other) noexcept
    : path_(std::move(other.path_)), fd_(std::exchange(other.fd_, -1)), size_(other.size_) {}

InputFile::~InputFile() {
  if (fd_ >= 0) ::close(fd_);
}

Result<size_t> InputFile::ReadAt(uint64_t offset, std::span<char> out) {
  while (true) {
    const ssize_t got = ::pread(fd_, out.data(), out.size(), static_cast<off_t>(offset));
    if (got >= 0) return static_cast<size_t>(got);
    if (errno != EINTR) return std::unexpected(IoError("read", path_, errno));
  }
}

Result<std::string> ReadInputFile(InputFile& file, const std::string& what, uint64_t max_bytes) {
  auto too_large = [&](uint64_t bytes) {
    return std::unexpected(InvalidArgument(file.path() + " has " + std::to_string(bytes) +
                                           " bytes, more than the " + std::to_string(max_bytes) + " " + what +
                                           " may have"));
  };
  if (file.size() > max_bytes) return too_large(file.size());
  // Room for one byte beyond the size seen: a file that grew since is refused
  // rather than read without bound.
  std::string bytes(static_cast<size_t>(file.size()) + 1, '\0');
  size_t done = 0;
  while (done < bytes.size()) {
    Result<size_t> got = file.ReadAt(done, std::span<char>(bytes.data() + done, bytes.size() - done));
    if (!got) return std::unexpected(got.error());
    if (*got == 0) break;
    done += *got;
  }
  if (done > max_bytes) return too_large(done);
  bytes.resize(done);
  return bytes;
}

Result<std::string> ReadInputFile(const std::string& path, const std::string& what, uint64_t max_bytes) {
  Result<InputFile> file = InputFile::Open(path, what);
  if (!file) return std::unexpected(file.error());
  return ReadInputFile(*file, what, max_bytes);
}

}  // namespace kvrt::cli
