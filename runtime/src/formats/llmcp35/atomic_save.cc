// SaveCheckpointAtomic: the reference's save_atomic (spec/checkpoint.md §12).
// The file is encoded in memory first, written to a fresh temporary in the same
// directory, synchronized and renamed over the destination, so readers see either
// the old file or the complete new one.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <string>
#include <utility>

#include "core/regular_file.h"
#include "formats/llmcp35/checkpoint_errors.h"
#include "formats/llmcp35/writer.h"
#include "formats/llmcp35/checkpoint.h"
#include "core/io_error.h"

namespace kvrt {
namespace {

constexpr int kTemporaryAttempts = 128;
std::atomic<uint64_t> next_temporary{0};

struct Destination {
  std::string directory;  // "." when the path has no parent
  std::string file_name;
};

// Splits like Rust's Path::parent / Path::file_name: trailing slashes do not
// count, and a path ending in "." or ".." (or nothing) names no file.
std::optional<Destination> SplitDestination(const std::string& path) {
  size_t end = path.size();
  while (end > 1 && path[end - 1] == '/') --end;
  const std::string trimmed = path.substr(0, end);
  const size_t slash = trimmed.rfind('/');
  Destination destination;
  destination.file_name = slash == std::string::npos ? trimmed : trimmed.substr(slash + 1);
  if (destination.file_name.empty() || destination.file_name == "." ||
      destination.file_name == "..") {
    return std::nullopt;
  }
  if (slash == std::string::npos) {
    destination.directory = ".";
  } else {
    size_t parent_end = slash;
    while (parent_end > 1 && trimmed[parent_end - 1] == '/') --parent_end;
    destination.directory = parent_end == 0 ? "/" : trimmed.substr(0, parent_end);
  }
  return destination;
}

std::string Join(const std::string& directory, const std::string& name) {
  return directory.back() == '/' ? directory + name : directory + "/" + name;
}

struct Temporary {
  std::string path;
  int fd = -1;
};

Result<Temporary> CreateTemporary(const Destination& destination) {
  const std::string prefix =
      "." + destination.file_name + ".tmp-" + std::to_string(::getpid()) + "-";
  for (int attempt = 0; attempt < kTemporaryAttempts; ++attempt) {
    const uint64_t serial = next_temporary.fetch_add(1, std::memory_order_relaxed);
    Temporary temporary;
    temporary.path = Join(destination.directory, prefix + std::to_string(serial));
    temporary.fd = ::open(temporary.path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (temporary.fd >= 0) return temporary;
    if (errno == EEXIST) continue;
    return Fail(IoError("create temporary", temporary.path, errno));
  }
  return Fail(IoError("create unique temporary",
                          Join(destination.directory, destination.file_name), EEXIST));
}

// Writes all of `bytes`, retrying short writes and EINTR; 0 or the errno.
int WriteAll(int fd, const std::vector<uint8_t>& bytes) {
  size_t written = 0;
  while (written < bytes.size()) {
    const ssize_t result = ::write(fd, bytes.data() + written, bytes.size() - written);
    if (result < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    written += static_cast<size_t>(result);
  }
  return 0;
}

int SyncDirectory(const std::string& directory) {
  const int fd = ::open(directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return errno;
  const int error = ::fsync(fd) == 0 ? 0 : errno;
  ::close(fd);
  return error;
}

// Steps 1–5 of §12 after the temporary exists. The descriptor is always closed.
Result<void> Publish(Temporary& temporary, const std::vector<uint8_t>& bytes,
                     const std::string& path, const Destination& destination) {
  if (const int error = WriteAll(temporary.fd, bytes); error != 0) {
    ::close(temporary.fd);
    return Fail(IoError("write temporary", temporary.path, error));
  }
  if (::fsync(temporary.fd) != 0) {
    const int error = errno;
    ::close(temporary.fd);
    return Fail(IoError("synchronize temporary", temporary.path, error));
  }
  // The data is already durable; like the reference (which drops the file), a
  // failing close is not reported.
  ::close(temporary.fd);
  if (::rename(temporary.path.c_str(), path.c_str()) != 0) {
    return Fail(IoError("atomically replace", path, errno));
  }
  if (const int error = SyncDirectory(destination.directory); error != 0) {
    return Fail(IoError("synchronize parent directory", destination.directory, error));
  }
  return {};
}

}  // namespace

Result<void> SaveCheckpointAtomic(const Checkpoint& checkpoint, const std::string& path) {
  const std::optional<Destination> destination = SplitDestination(path);
  if (!destination) return Fail(llmcp35::Layout("checkpoint destination has no file name"));
  // Every validation runs before the disk is touched.
  Result<llmcp35::EncodedCheckpoint> encoded = llmcp35::EncodeCanonical(checkpoint);
  if (!encoded) return Fail(std::move(encoded.error()));
  // Beyond the reference: a FIFO, socket or device is not replaced by the file.
  if (auto replaceable = RequireReplaceableDestination(path); !replaceable) return Fail(std::move(replaceable.error()));
  Result<Temporary> temporary = CreateTemporary(*destination);
  if (!temporary) return Fail(std::move(temporary.error()));
  Result<void> published = Publish(*temporary, encoded->bytes, path, *destination);
  if (!published) {
    // Best effort; after a successful rename the name is already gone.
    ::unlink(temporary->path.c_str());
  }
  return published;
}

}  // namespace kvrt
