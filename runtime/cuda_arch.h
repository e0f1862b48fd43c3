// CUDA architecture names ("sm_86", "sm_90a") and which GPUs run their SASS: shared by the
// worker (which architecture to compile a candidate for), the exporter (--arch) and the runtime
// (whether this GPU runs an artifact). Header-only; needs no CUDA header.
#pragma once

#include <cctype>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace gtco::runtime {

struct CudaArch {
  int version = 0;        ///< 10 * major + minor, e.g. 86
  bool specific = false;  ///< "sm_90a": architecture-specific features (wgmma)
};

/// "sm_XY" or "sm_XYa" (also "f"); INVALID_ARGUMENT naming `name` otherwise.
inline absl::StatusOr<CudaArch> ParseCudaArch(std::string_view name) {
  std::string digits(name.size() > 3 ? name.substr(3) : std::string_view());
  std::string suffix;
  while (!digits.empty() && std::isalpha(static_cast<unsigned char>(digits.back()))) {
    suffix.insert(suffix.begin(), digits.back());
    digits.pop_back();
  }
  CudaArch arch;
  if (name.substr(0, 3) != "sm_" || !absl::SimpleAtoi(digits, &arch.version) ||
      arch.version < 10 || suffix.size() > 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown CUDA architecture '", std::string(name), "' (expected sm_XY or sm_XYa)"));
  }
  arch.specific = !suffix.empty();
  return arch;
}

/// Whether SASS for `arch` runs on a GPU of compute capability major.minor: plain targets on the
/// same major version with a minor at least theirs, architecture-specific ones only on exactly
/// their version.
inline bool CudaArchRunsOn(const CudaArch& arch, int major, int minor) {
  if (arch.specific) return arch.version == 10 * major + minor;
  return arch.version / 10 == major && arch.version % 10 <= minor;
}

}  // namespace gtco::runtime
