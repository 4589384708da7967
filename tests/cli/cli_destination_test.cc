// kvrt synth writes a new file or replaces a regular file (through a temporary
// and rename), and refuses any other destination (issue 38): given a FIFO or a
// socket it replaced the node with a regular file, and run as root, --tokenizer
// /dev/full replaced the machine's /dev/full. Tests use nodes any user can make.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

#include "cli_runner.h"
#include "test_support.h"

namespace kvrt {
namespace {

using testing::RunKvrt;

bool IsFifo(const std::string& path) {
  struct stat status {};
  return ::lstat(path.c_str(), &status) == 0 && S_ISFIFO(status.st_mode);
}

bool IsSocket(const std::string& path) {
  struct stat status {};
  return ::lstat(path.c_str(), &status) == 0 && S_ISSOCK(status.st_mode);
}

// A bound Unix socket at `path` (closed again: the node stays).
void MakeSocket(const std::string& path) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  ASSERT_LT(path.size(), sizeof address.sun_path);
  std::memcpy(address.sun_path, path.c_str(), path.size() + 1);
  ASSERT_EQ(::bind(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address), 0) << std::strerror(errno);
  ::close(fd);
}

const std::vector<std::string> kShape = {"synth", "--dim", "32", "--layers", "1", "--heads", "4", "--ffn", "64",
                                         "--vocab", "300", "--seq-len", "16"};

TEST(CliDestination, SynthRefusesFifosAndSocketsForEveryOutput) {
  const testing::ScratchDir dir;
  for (const char* flag : {"--llama2c", "--llmcp35", "--gguf", "--tokenizer"}) {
    const std::string fifo = dir.File(std::string("fifo") + flag);
    ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
    std::vector<std::string> args = kShape;
    args.insert(args.end(), {flag, fifo});
    const testing::CliRun run = RunKvrt(args);
    EXPECT_EQ(run.status, 2) << flag;
    EXPECT_EQ(run.err, "error: NotRegularFile: " + fifo + " is a FIFO; kvrt writes only a new file or over a regular file\n")
        << flag;
    EXPECT_TRUE(IsFifo(fifo)) << flag << ": the FIFO was replaced";

    const std::string socket = dir.File(std::string("s") + flag);
    MakeSocket(socket);
    args = kShape;
    args.insert(args.end(), {flag, socket});
    const testing::CliRun socket_run = RunKvrt(args);
    EXPECT_EQ(socket_run.status, 2) << flag;
    EXPECT_TRUE(IsSocket(socket)) << flag << ": the socket was replaced";
  }
}

TEST(CliDestination, SynthStillWritesNewFilesAndReplacesRegularOnes) {
  const testing::ScratchDir dir;
  std::vector<std::string> args = kShape;
  args.insert(args.end(), {"--gguf", dir.File("m.gguf"), "--tokenizer", dir.File("t.bin")});
  ASSERT_EQ(RunKvrt(args).status, 0);
  const testing::CliRun again = RunKvrt(args);
  EXPECT_EQ(again.status, 0) << again.err;
}

}  // namespace
}  // namespace kvrt
