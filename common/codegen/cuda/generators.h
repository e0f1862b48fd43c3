// The CUDA C generators, one per CUDA sketch (the table is generators.def).
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "common/ir/workload.h"
#include "common/schedule/cuda_sketch.h"

namespace gtco::codegen::cuda {

/// Generates the complete kernel source (Prelude() first) for (w, values) whose plan is `plan`,
/// with the __global__ function named `entry`. `values` are in the sketch's knob order and come
/// from its Knobs(); INVALID_ARGUMENT when `w`'s shapes do not fit them.
using Generator = absl::StatusOr<std::string> (*)(const ir::Workload& w,
                                                  const schedule::KnobValues& values,
                                                  const schedule::CudaPlan& plan,
                                                  const std::string& entry);

#define GTCO_CUDA_GENERATOR(sketch_name, function)                                     \
  absl::StatusOr<std::string> function(const ir::Workload& w,                          \
                                       const schedule::KnobValues& values,             \
                                       const schedule::CudaPlan& plan, const std::string& entry);
#include "common/codegen/cuda/generators.def"
#undef GTCO_CUDA_GENERATOR

}  // namespace gtco::codegen::cuda
