// The one place where XGBoost's C API error style (int return codes + XGBGetLastError) becomes
// absl::Status, plus owning handles for its opaque DMatrix and Booster objects.
#pragma once

#include <memory>
#include <type_traits>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace gtco::costmodel {

/// OK when `return_code` is 0; otherwise an error of `code` (default INTERNAL) naming
/// `operation` with XGBoost's last error message (thread-local in XGBoost, so call this right
/// after the failing call).
absl::Status XgbStatus(int return_code, absl::string_view operation,
                       absl::StatusCode code = absl::StatusCode::kInternal);

/// Frees a DMatrixHandle (void*); never throws.
struct DMatrixDeleter {
  void operator()(void* handle) const;
};
/// Frees a BoosterHandle (void*); never throws.
struct BoosterDeleter {
  void operator()(void* handle) const;
};

/// Owning XGBoost handles (the C API's handles are `void*`).
using DMatrixPtr = std::unique_ptr<void, DMatrixDeleter>;
using BoosterPtr = std::unique_ptr<void, BoosterDeleter>;

}  // namespace gtco::costmodel
