// XGBoost C API error conversion and handle deleters.
#include "common/costmodel/xgb_status.h"

#include <xgboost/c_api.h>

#include "absl/strings/str_cat.h"

namespace gtco::costmodel {

absl::Status XgbStatus(int return_code, absl::string_view operation, absl::StatusCode code) {
  if (return_code == 0) return absl::OkStatus();
  const char* message = XGBGetLastError();
  return absl::Status(code, absl::StrCat("XGBoost ", operation, " failed: ",
                                         message != nullptr ? message : "(no message)"));
}

void DMatrixDeleter::operator()(void* handle) const {
  if (handle != nullptr) XGDMatrixFree(handle);
}

void BoosterDeleter::operator()(void* handle) const {
  if (handle != nullptr) XGBoosterFree(handle);
}

}  // namespace gtco::costmodel
