// kvrt report: print the ch38 demo report.
#include <cstdio>
#include <fstream>
#include <iterator>
#include <vector>

#include "commands.h"
#include "common.h"
#include "embedded_checkpoint.h"
#include "kvrt/course.h"
#include "output.h"

namespace kvrt::cli {
namespace {

constexpr FlagSpec kFlags[] = {
    {"checkpoint", true, "the ch35 checkpoint to restore (default: the copy built into kvrt)"},
    {"help", false, "show this help"},
};

}  // namespace

int RunReport(std::span<char* const> args) {
  Result<Flags> flags = Flags::Parse(args, kFlags);
  if (!flags) return ReportError(flags.error());
  if (flags->Has("help")) {
    PrintStdout("%s", Usage("kvrt report [--checkpoint PATH]", kFlags).c_str());
    return 0;
  }
  std::vector<uint8_t> bytes;
  std::span<const uint8_t> checkpoint = EmbeddedCh35Checkpoint();
  if (std::optional<std::string> path = flags->Value("checkpoint")) {
    std::ifstream in(*path, std::ios::binary);
    if (!in) {
      return ReportError(Error(ErrorCode::kIo, {{"operation", std::string("read")}},
                               "could not read checkpoint " + *path));
    }
    bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    checkpoint = bytes;
  }
  Result<std::string> report = Ch38Report(checkpoint);
  if (!report) return ReportError(report.error());
  if (Result<void> written = WriteStdout(*report); !written) return ReportError(written.error());
  return 0;
}

}  // namespace kvrt::cli
