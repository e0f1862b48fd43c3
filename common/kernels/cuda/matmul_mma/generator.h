// The CUDA C generator of the mma.sync f16/bf16 matmul (generator.cc), which the family's sketch
// names as its Generator().
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "common/ir/workload.h"
#include "common/kernels/family.h"

namespace gtco::kernels {

/// A CudaGenerator (common/schedule/cuda_sketch.h) for "cuda_mm_mma/v1".
absl::StatusOr<std::string> GenerateMmaSyncMatMul(const ir::Workload& w, const KnobValues& values,
                                                  const CudaPlan& plan, const std::string& entry);

}  // namespace gtco::kernels
