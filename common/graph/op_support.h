// Classification of graph nodes into compute (anchor / element-wise), data-movement and
// unsupported ops, and the support check that runs after constant folding.
#pragma once

#include <optional>
#include <string>

#include "absl/status/status.h"
#include "common/graph/graph.h"
#include "common/ir/workload.h"

namespace gtco::graph {

enum class OpRole {
  kAnchor,       ///< MatMul, MatMulInteger, Gemm, Softmax, LayerNormalization, ReduceMean
  kElementwise,  ///< Add, Sub, Mul, Div, Pow, Relu, Sigmoid, Tanh, Erf, Sqrt, Neg, Exp
  kData,         ///< copies, not tuned: Transpose, Reshape, Identity, Flatten, Squeeze,
                 ///< Unsqueeze, Slice, Concat, Gather, Cast (f32 -> f32, and the conversions
                 ///< around low-precision matmuls: bf16 <-> f32, i32 -> f32),
                 ///< DynamicQuantizeLinear, QuantizeLinear, DequantizeLinear
  kFoldOnly,     ///< shape arithmetic that must have been constant-folded
  kFallback,     ///< marked by MarkFallbacks (fallback.h): runs as a reference step, not tuned
  kUnsupported,
};

/// The attribute MarkFallbacks sets on a node that runs as a fallback step (its value says why).
inline constexpr char kFallbackAttr[] = "gtco_fallback";

/// The role of `node` by op type and domain (only the default ONNX domain is supported).
OpRole RoleOf(const Node& node);

/// The epilogue op of an element-wise ONNX op type; nullopt for other ops.
std::optional<ir::EwOp> ElementwiseEwOp(const std::string& op_type);

/// Checks, after FoldConstants, that every node can run: UNIMPLEMENTED naming op and node
/// ("unsupported ONNX op 'NonMaxSuppression' at node 'nms_1'") for unsupported ops and for
/// fold-only ops left on non-constant data; UNIMPLEMENTED naming dtype and node when a
/// compute op reads or writes non-f32 tensors (except MatMul on bf16 x bf16 -> bf16 and
/// MatMulInteger on u8|i8 x u8|i8 -> i32 (or f32, see integer_matmul_folding.h) with per-tensor
/// zero points, B's constant);
/// UNIMPLEMENTED when a tensor has no static shape.
absl::Status CheckSupportedOps(const Graph& graph);

/// CheckSupportedOps for one node; a fallback node needs static shapes only.
absl::Status CheckNodeSupported(const Node& node, const Graph& graph);

/// True when `zero_point` holds one value: a single element, or a constant whose elements are all
/// equal (quantize_dynamic(per_channel=True) writes B's zero points per column, all 0 for s8).
bool IsUniformZeroPoint(const Tensor& zero_point);

/// Number of kData nodes in `graph`.
int CountDataOps(const Graph& graph);

}  // namespace gtco::graph
