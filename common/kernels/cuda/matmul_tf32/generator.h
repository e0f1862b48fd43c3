// The CUDA C generator of the TF32 mma.sync matmul (generator.cc), which the family's sketch names
// as its Generator().
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "common/ir/workload.h"
#include "common/kernels/family.h"

namespace gtco::kernels {

/// A CudaGenerator (common/schedule/cuda_sketch.h) for "cuda_mm_tf32/v1".
absl::StatusOr<std::string> GenerateTf32MatMul(const ir::Workload& w, const KnobValues& values,
                                               const CudaPlan& plan, const std::string& entry);

}  // namespace gtco::kernels
