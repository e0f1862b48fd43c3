// The CUDA C generator of the TF32 mma.sync matmul (generator.cc), which the family's sketch names
// as its Generator().
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "common/ir/workload.h"
#include "common/kernels/cuda/matmul_common/matmul_kernel_util.h"
#include "common/kernels/family.h"

namespace gtco::kernels {

/// A CudaGenerator (common/schedule/cuda_sketch.h) for "cuda_mm_tf32/v1".
absl::StatusOr<std::string> GenerateTf32MatMul(const ir::Workload& w, const KnobValues& values,
                                               const CudaPlan& plan, const std::string& entry);

/// The kernel of GenerateTf32MatMul for a GEMM whose operands `operands` locates (see
/// EmitSimtMatMul): `w` may be a GEMM view whose anchor shapes are not checked here. A gathered
/// B (f32, [K, N]) is copied one element per cp.async.
absl::StatusOr<std::string> EmitTf32MatMul(const ir::Workload& w, const KnobValues& values,
                                           const CudaPlan& plan, const std::string& entry,
                                           const mm::MatMulOperands& operands);

}  // namespace gtco::kernels
