// Graph pass: inference-mode BatchNormalization folded away.
#pragma once

#include "absl/status/status.h"
#include "common/graph/graph.h"

namespace gtco::graph {

/// Folds every BatchNormalization (inference mode: constant scale, bias, mean and variance;
/// y = (x - mean) / sqrt(var + epsilon) * scale + bias per channel, channel = dim 1):
///  - into the Conv that produces its input, when that Conv's weights (and bias, if any) are
///    constant and nothing else reads the Conv's output: W'[k] = W[k] * a[k], B' = B * a + b with
///    a = scale / sqrt(var + epsilon), b = bias - mean * a (new constant tensors; shared weights
///    are left as they were);
///  - otherwise into Mul(x, a) then Add(., b) with a and b constants of shape [C, 1, ...] (an
///    element-wise chain the fusion planner fuses like any other).
/// UNIMPLEMENTED naming the node for training mode, non-constant statistics or a used
/// running-mean/variance output; INVALID_ARGUMENT for parameters of the wrong size.
absl::Status FoldBatchNorm(Graph& graph);

/// Test only: while set, FoldBatchNorm scales every folded channel by 1.5 too many, a broken
/// rewrite that the exporter's whole-model check must catch and name. Off by default.
void BreakBatchNormFoldingForTesting(bool broken);

}  // namespace gtco::graph
