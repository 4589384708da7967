// Early-return helpers for Result<T> chains, so that parsers reading dozens of
// fields stay readable. Each macro returns the failed Result's Error unchanged.
#pragma once

#include <utility>

#include "kvrt/error.h"

#define KVRT_FORMATS_CONCAT_INNER(a, b) a##b
#define KVRT_FORMATS_CONCAT(a, b) KVRT_FORMATS_CONCAT_INNER(a, b)

// KVRT_ASSIGN_OR_RETURN(const uint64_t step, cursor.U64("optimizer step"));
#define KVRT_ASSIGN_OR_RETURN(lhs, expression) \
  KVRT_ASSIGN_OR_RETURN_IMPL(KVRT_FORMATS_CONCAT(kvrt_result_, __LINE__), lhs, expression)
#define KVRT_ASSIGN_OR_RETURN_IMPL(result, lhs, expression)    \
  auto result = (expression);                                  \
  if (!result) return ::kvrt::Fail(std::move(result.error())); \
  lhs = std::move(*result)

// KVRT_RETURN_IF_ERROR(ValidateAdamWConfig(config));
#define KVRT_RETURN_IF_ERROR(expression)                                   \
  do {                                                                     \
    auto kvrt_status = (expression);                                       \
    if (!kvrt_status) return ::kvrt::Fail(std::move(kvrt_status.error())); \
  } while (false)
