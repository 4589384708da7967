// The mapping between kvrt::ErrorCode and the C API's stable KVRT_ERR_* numbers.
#pragma once

#include <optional>

#include "kvrt/error.h"
#include "kvrt/kvrt.h"

namespace kvrt::c_api {

int CErrorCode(ErrorCode code);
// nullopt for a number that is no KVRT_ERR_* code.
std::optional<ErrorCode> CppErrorCode(int c_code);

}  // namespace kvrt::c_api
