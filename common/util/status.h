// Status helpers: absl::Status / StatusOr propagation macros and fatal checks for bugs.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"

#define GTCO_CONCAT_INNER_(a, b) a##b
#define GTCO_CONCAT_(a, b) GTCO_CONCAT_INNER_(a, b)

/// Returns from the enclosing function when `expr` (an absl::Status) is not OK.
#define GTCO_RETURN_IF_ERROR(expr)                \
  do {                                            \
    ::absl::Status gtco_status_ = (expr);         \
    if (!gtco_status_.ok()) return gtco_status_;  \
  } while (0)

#define GTCO_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, rexpr) \
  auto tmp = (rexpr);                                \
  if (!tmp.ok()) return tmp.status();                \
  lhs = std::move(*tmp)

/// `GTCO_ASSIGN_OR_RETURN(auto x, F())` binds the value of a StatusOr or returns its error.
#define GTCO_ASSIGN_OR_RETURN(lhs, rexpr) \
  GTCO_ASSIGN_OR_RETURN_IMPL_(GTCO_CONCAT_(gtco_statusor_, __LINE__), lhs, rexpr)

namespace gtco::util {
[[noreturn]] void CheckFailed(const char* file, int line, const char* condition,
                              const std::string& message);
}  // namespace gtco::util

/// Aborts with a message when `cond` is false. For programming errors only: never for user input.
#define GTCO_CHECK(cond, ...)                                                           \
  do {                                                                                 \
    if (!(cond)) ::gtco::util::CheckFailed(__FILE__, __LINE__, #cond, ::absl::StrCat(__VA_ARGS__)); \
  } while (0)
