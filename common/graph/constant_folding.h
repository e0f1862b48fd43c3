// Graph pass: constant folding of the shape arithmetic that exporters emit.
#pragma once

#include "absl/status/status.h"
#include "common/graph/graph.h"

namespace gtco::graph {

/// Replaces every foldable node (see const_eval.h) whose inputs are constant, or whose only
/// need is a static input shape (Shape, Size), by constant tensors, in topological order so
/// that whole chains (Shape -> Gather -> Unsqueeze -> Concat -> Reshape's shape) collapse.
/// Kept nodes whose output 0 has no static shape get one from shape_inference.h (ONNX's
/// data propagation does not reach every shape). Then removes nodes whose results nobody uses.
/// Errors name the node that failed.
absl::Status FoldConstants(Graph& graph);

}  // namespace gtco::graph
