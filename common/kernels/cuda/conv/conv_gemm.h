// The implicit GEMM of a convolution as the CUDA matmul kernels compute it. Per image n and group
// g (batch entry b = n * groups + g) the output planes of the group are the [K/g, C/g*R*S] weight
// matrix times the [C/g*R*S, OH*OW] patch matrix of the image (ir::ConvGemmView). The weights are
// that A matrix as stored; B is never materialized: its element (k, j) is the pixel
// X[n, g*C/g + k / (R*S), oh*stride_h - pad_top + r*dilation_h, ow*stride_w - pad_left +
// s*dilation_w] (r, s from k % (R*S), oh, ow from j), zero in the padding, gathered where the
// kernel copies its B tile into shared memory. A pointwise conv (1x1, unit strides, no padding)
// needs no gather: its B is the image's channel planes, a stored [C/g, H*W] matrix. The output
// [N, K, OH, OW] is the GEMM's [N*g, K/g, OH*OW] row-major, so the matmul stores (and their fused
// epilogue) write it unchanged.
#pragma once

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/ir/workload.h"
#include "common/kernels/cuda/matmul_common/matmul_kernel_util.h"
#include "common/kernels/family.h"

namespace gtco::kernels::cuda_conv {

/// The GEMM the matmul sketches plan and prune for conv `w`: matmul params ir::ConvGemmView(w.conv)
/// (b_batched: each batch entry has its own patch matrix), the two anchor operands (their dtypes
/// matter; their shapes stay the conv's), output [N, K, OH*OW], no epilogue.
ir::Workload GemmProblem(const ir::Workload& w);

/// GemmProblem(w) with w's epilogue: its extra inputs reshaped to broadcast over [N, K, OH*OW]
/// (those of [N|1, K|1, OH, OW] or [N|1, K|1, 1, 1] after alignment). INVALID_ARGUMENT for an
/// extra input that broadcasts over one spatial dim only.
absl::StatusOr<ir::Workload> GemmView(const ir::Workload& w);

/// How the matmul kernel finds A (the group's weights) and B (the image slice of batch entry b,
/// gathered unless pointwise) for conv params `p`.
mm::MatMulOperands GemmOperands(const ir::ConvParams& p);

/// INVALID_ARGUMENT unless `w` is a valid f32 conv whose tensors fit 32-bit kernel indices.
absl::Status CheckCudaConv(const ir::Workload& w);

}  // namespace gtco::kernels::cuda_conv
