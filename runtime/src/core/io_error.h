// The error of a failed file operation, shared by every reader and writer.
#pragma once

#include <string>
#include <string_view>

#include "kvrt/error.h"

namespace kvrt {

// Io{operation, path, os_error}, with the OS error's text as Rust's io::Error
// displays it. The message says "checkpoint path" for every file, as the
// reference crate's checkpoint errors do (the CLI's goldens hold that text).
Error IoError(std::string_view operation, const std::string& path, int os_error);

}  // namespace kvrt
