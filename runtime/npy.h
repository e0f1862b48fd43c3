// NumPy .npy files (format 1.0/2.0, little-endian, C order) for gtco-run: what numpy.save writes
// and numpy.load reads. A small reader/writer of our own: the format is a short header and raw
// data, and no well-kept C++ library for it is packaged in Debian.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "runtime/artifact.h"

namespace gtco::runtime {

struct NpyArray {
  ElemType dtype = ElemType::kF32;
  std::vector<int64_t> shape;
  std::string data;  ///< raw little-endian elements
};

/// INVALID_ARGUMENT naming the file for an unreadable or unsupported array (Fortran order,
/// big-endian, or a dtype other than f4, i8, i4, i1, u1, b1).
absl::StatusOr<NpyArray> ReadNpy(const std::string& path);
/// The same for the bytes of a .npy file; `what` names it in errors.
absl::StatusOr<NpyArray> ParseNpy(const std::string& bytes, const std::string& what);
absl::Status WriteNpy(const std::string& path, const NpyArray& array);

}  // namespace gtco::runtime
