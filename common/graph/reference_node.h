// Graph nodes and constants as the runtime's reference op library takes them
// (runtime/reference_ops.h), and output shapes worked out by running that library where no
// shape function of GTCO's own or ONNX's shape inference gives them.
#pragma once

#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "common/graph/graph.h"
#include "runtime/artifact.h"
#include "runtime/reference_ops.h"

namespace gtco::graph {

/// The runtime's element type of `type`; UNIMPLEMENTED for f64 and other types artifacts lack.
absl::StatusOr<runtime::ElemType> RuntimeElemType(ElemType type);

/// The values of constant `tensor`. The errors of RuntimeElemType.
absl::StatusOr<runtime::reference::Value> ConstantValue(const Tensor& tensor);

/// `node` (of a graph whose default-domain opset is `opset`) as the reference library's node.
/// UNIMPLEMENTED for a tensor attribute of a type artifacts lack.
absl::StatusOr<runtime::reference::Node> ReferenceNode(const Node& node, int opset);

/// Gives every output of `node` that has no static shape the shape the reference op library
/// computes for it on inputs of their static shapes (zeros for computed ones, the values of
/// constants). Only where the output shapes depend on no computed input's values: every input
/// that sets a shape (Pad's pads, Resize's sizes, Reshape's shape...) is constant, and the op is
/// not one whose shape follows its data (NonZero, Compress, Unique). FAILED_PRECONDITION when
/// that does not hold or an input has no static shape; the library's errors.
absl::Status InferShapesByReference(const Node& node, Graph& graph);

/// The outputs of `node`, all of whose inputs are constant, evaluated by the reference op library
/// as constant tensors (named as its outputs; unnamed optional outputs left out); nullopt when
/// the library does not run the op, refuses these inputs (the node stays, for the support check
/// or a fallback step to report), or a value would hold more than `max_elements` elements.
absl::StatusOr<std::optional<std::vector<Tensor>>> EvaluateByReference(const Node& node,
                                                                       const Graph& graph,
                                                                       int64_t max_elements);

/// Whether input `index` of an `op_type` node sets its output's shape, axes or sizes by value.
bool SetsShape(const std::string& op_type, size_t index);

}  // namespace gtco::graph
