// Graph pass: ONNX Runtime's dynamic-quantization pattern around MatMulInteger rewritten into
// the form one integer matmul kernel computes (the i32 result converted to f32, then scale and
// bias as its epilogue); a bf16 MatMul's Cast to f32 is taken into the kernel the same way.
#pragma once

#include "absl/status/status.h"
#include "common/graph/graph.h"

namespace gtco::graph {

/// First, each ConvInteger (ONNX Runtime's quantize_dynamic of a Conv) that is a patch
/// convolution (kernel equal to the strides, no padding, dilation 1, one group, per-tensor zero
/// points, constant weights: ViT's patch embedding) becomes Reshape + Transpose of the image into
/// patch rows [N*OH*OW, C*R*S], a MatMulInteger against the weights laid out [C*R*S, K], and
/// Reshape + Transpose back to NCHW; exact, on the integer kernels. Any other ConvInteger is
/// UNIMPLEMENTED, naming the node and what it would need.
/// Then two rewrites, each only where it applies exactly (save the bf16 case below, which
/// computes more precisely than the literal graph):
///  - MatMulInteger -> Cast(to f32), the Cast the matmul's only reader and the matmul's output
///    no graph output: the MatMulInteger writes f32 itself (its i32 result converted to the
///    nearest f32, as the Cast does; see workload.h) and the Cast goes. The same for a MatMul of
///    bf16 inputs and output followed by a Cast to f32 (what mixed-precision exports write around
///    each Linear; f16 MatMuls keep their literal rounding, whose overflow to inf the f32 sum
///    would hide): the kernel, which sums in f32, writes its f32 sum, so the bias
///    and activation after the Cast become its epilogue (a bf16 Conv without bias, as
///    --precision bf16x3 writes them, likewise). This skips the literal graph's rounding
///    of the sum to 16 bits before the Cast: the result is the more precise one, within half a
///    bf16 ulp (2^-9 relative) of what ONNX Runtime's literal run computes.
///  - Mul(that f32 result, S) where S = Mul(x_scale, w_scale) with w_scale a constant (scalar or
///    [N] per column) and x_scale a one-element tensor: becomes
///    Mul(Mul(result, x_scale), w_scale as an [N] constant). The weight's scale is then a
///    per-column kernel input instead of an immediate, so the matmuls of one shape share one
///    workload (and its tuning) whatever their scales; S's Mul goes when nothing reads it. The
///    products associate differently from ONNX Runtime's ((acc * x_scale) * w_scale against
///    acc * (x_scale * w_scale)): at most an ulp or two of f32.
absl::Status FoldIntegerMatMulOutputs(Graph& graph);

/// ONNX Runtime's static quantization (QDQ format): a MatMul (or a Gemm without transA, alpha
/// or beta) whose inputs are both DequantizeLinear outputs of u8 or i8 data with constant scales
/// and zero points (per tensor; a MatMul's B scale may be per column with one zero point) becomes
/// MatMulInteger of the quantized data (f32 out, see above) times the product of the scales per
/// column (plus the Gemm's bias), so that it runs on the integer kernels, never in float. The
/// DequantizeLinear nodes go when nothing else reads them. Runs before constant folding, which
/// would turn the weights' DequantizeLinear into f32 weights.
absl::Status FuseQdqMatMuls(Graph& graph);

}  // namespace gtco::graph
