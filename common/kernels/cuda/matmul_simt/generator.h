// The CUDA C generator of the SIMT FMA matmul (generator.cc), which the family's sketch names as
// its Generator().
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "common/ir/workload.h"
#include "common/kernels/cuda/matmul_common/matmul_kernel_util.h"
#include "common/kernels/family.h"

namespace gtco::kernels {

/// A CudaGenerator (common/schedule/cuda_sketch.h) for "cuda_mm_simt/v1".
absl::StatusOr<std::string> GenerateSimtMatMul(const ir::Workload& w, const KnobValues& values,
                                               const CudaPlan& plan, const std::string& entry);

/// The kernel of GenerateSimtMatMul for a GEMM whose operands `operands` locates (the implicit
/// GEMM of a convolution: `w` is then its GEMM view, see cuda/conv). `w`'s matmul params, dtypes,
/// kernel parameters and epilogue are used; its anchor shapes are not checked (the caller checks
/// its own workload). A gathered B needs f32, [K, N] storage and vw_b 1.
absl::StatusOr<std::string> EmitSimtMatMul(const ir::Workload& w, const KnobValues& values,
                                           const CudaPlan& plan, const std::string& entry,
                                           const mm::MatMulOperands& operands);

}  // namespace gtco::kernels
