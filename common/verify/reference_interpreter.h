// The reference interpreter: an ONNX graph as imported (before any graph pass) evaluated node by
// node with the reference op library (runtime/reference_ops.h), which shares nothing with the
// tuned kernels, the graph passes or the exporter. It is what an exported artifact is checked
// against, and it turns graph nodes into the nodes of an artifact's fallback steps.
#pragma once

#include <map>
#include <string>

#include "absl/status/statusor.h"
#include "common/graph/graph.h"
#include "common/graph/reference_node.h"
#include "runtime/artifact.h"
#include "runtime/reference_ops.h"

namespace gtco::verify {

using Value = runtime::reference::Value;
/// Tensor name -> value.
using ValueMap = std::map<std::string, Value>;

using graph::ConstantValue;
using graph::ReferenceNode;
using graph::RuntimeElemType;

/// Evaluates every node of `graph` on `inputs` (a value per graph input, of its dtype and
/// shape). Returns the graph outputs' values and, with `keep_all`, every tensor's (constants
/// excepted); without it each value is freed after its last reader. Errors: INVALID_ARGUMENT for
/// a missing or mis-shaped input; the op library's, naming the node.
absl::StatusOr<ValueMap> Interpret(const graph::Graph& graph, const ValueMap& inputs,
                                   bool keep_all);

}  // namespace gtco::verify
