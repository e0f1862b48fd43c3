// The CUDA C generators of the conv family: implicit GEMM on the SIMT and TF32 matmul kernels
// (generator.cc) and depthwise convolutions directly (depthwise.cc).
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "common/ir/workload.h"
#include "common/kernels/family.h"

namespace gtco::kernels {

/// CudaGenerators (common/schedule/cuda_sketch.h) for "cuda_conv_simt/v1" (knobs of
/// "cuda_mm_simt/v1") and "cuda_conv_tf32/v1" (knobs of "cuda_mm_tf32/v1").
absl::StatusOr<std::string> GenerateSimtConv(const ir::Workload& w, const KnobValues& values,
                                             const CudaPlan& plan, const std::string& entry);
absl::StatusOr<std::string> GenerateTf32Conv(const ir::Workload& w, const KnobValues& values,
                                             const CudaPlan& plan, const std::string& entry);

}  // namespace gtco::kernels
