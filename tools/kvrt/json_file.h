// Reads a JSON file that a user names on the command line (a benchmark run, a
// gate file) with every failure as an error value: not a regular file, too large,
// unreadable, not JSON. Nothing throws — nlohmann parses without exceptions and
// the file is read with stdio, so `kvrt bench-compare . .` cannot abort.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>

#include "kvrt/error.h"

namespace kvrt::cli {

// Benchmark and gate files are a few hundred KiB; anything far larger is a wrong
// path, refused before a byte of it is read.
inline constexpr uint64_t kMaxJsonFileBytes = uint64_t{64} << 20;

// `what` names the file's role in messages ("benchmark results", "gate file").
Result<nlohmann::json> ReadJsonFile(const std::string& path, const std::string& what,
                                    uint64_t max_bytes = kMaxJsonFileBytes);

}  // namespace kvrt::cli
