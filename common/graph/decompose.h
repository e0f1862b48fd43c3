// Graph pass: ops rewritten as the element-wise ops the planner fuses.
#pragma once

#include "absl/status/status.h"
#include "common/graph/graph.h"

namespace gtco::graph {

/// Rewrites Clip(x, min, max) (ReLU6 in MobileNet) as Max(x, min) then Min(., max), each bound
/// only when given (inputs at opset 11+, attributes before); a Clip without bounds becomes an
/// Identity. Bounds must be constant scalars: UNIMPLEMENTED naming the node otherwise.
/// Rewrites Split as one Slice per output (sizes from the outputs' inferred shapes; a Split
/// whose shapes are unknown is UNIMPLEMENTED naming the node).
/// A Gemm with transB=1 and a constant f32 B gets B transposed into a fresh constant ([K, N]) and
/// transB cleared: exported artifacts carry the weight in the layout the kernels read.
/// A Conv with a 1x1 kernel, no padding and a stride > 1 becomes a Slice of its input with the
/// strides as steps, then the same Conv with unit strides (a plain GEMM over the pixels).
absl::Status DecomposeOps(Graph& graph);

}  // namespace gtco::graph
