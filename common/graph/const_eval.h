// Evaluation of one ONNX node on constant inputs (the shape arithmetic exporters emit).
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/graph/graph.h"

namespace gtco::graph {

/// True for ops EvaluateConstantNode can compute.
bool IsFoldableOp(const std::string& op_type);

/// True for ops that only read their inputs' shapes (Shape, Size): they fold as soon as the
/// input's static shape is known, constant or not.
bool IsShapeOnlyOp(const std::string& op_type);

/// Computes the outputs of `node` (one tensor per output, named like the outputs). All
/// non-empty inputs must be constant, except for shape-only ops which need static shapes.
/// UNIMPLEMENTED for unsupported attribute combinations; INVALID_ARGUMENT for malformed
/// nodes (both name the node).
absl::StatusOr<std::vector<Tensor>> EvaluateConstantNode(const Node& node, const Graph& graph);

/// Numpy broadcast of two shapes; INVALID_ARGUMENT when incompatible.
absl::StatusOr<std::vector<int64_t>> BroadcastShapes(const std::vector<int64_t>& a,
                                                     const std::vector<int64_t>& b);

}  // namespace gtco::graph
