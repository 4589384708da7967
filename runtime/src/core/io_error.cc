#include "core/io_error.h"

#include <string>
#include <system_error>

namespace kvrt {

Error IoError(std::string_view operation, const std::string& path, int os_error) {
  const std::string what(operation);
  return Error(ErrorCode::kIo,
               {{"operation", what}, {"path", path}, {"os_error", int64_t{os_error}}},
               "could not " + what + " checkpoint path " + path + ": " +
                   std::error_code(os_error, std::generic_category()).message() + " (os error " +
                   std::to_string(os_error) + ")");
}

}  // namespace kvrt
