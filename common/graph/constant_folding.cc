// Constant folding: evaluates nodes with constant inputs and drops the dead remainder.
#include "common/graph/constant_folding.h"

#include "common/graph/const_eval.h"
#include "common/graph/shape_inference.h"
#include "common/util/status.h"

namespace gtco::graph {
namespace {

bool InputsReady(const Node& node, const Graph& graph) {
  for (const std::string& input : node.inputs) {
    if (input.empty()) continue;
    const Tensor* tensor = graph.FindTensor(input);
    if (tensor == nullptr) return false;
    if (IsShapeOnlyOp(node.op_type) ? !tensor->has_shape : !tensor->is_constant) return false;
  }
  return true;
}

/// Gives output 0 of a kept node a static shape when ONNX shape inference left it without
/// one (its data propagation stops at ops such as Expand); failures are left to the support
/// check, which names the tensor.
void CompleteOutputShape(const Node& node, Graph& graph) {
  if (node.outputs.empty() || node.outputs[0].empty()) return;
  Tensor& output = graph.mutable_tensor(node.outputs[0]);
  if (output.has_shape) return;
  absl::StatusOr<std::vector<int64_t>> shape = InferOutputShape(node, graph);
  if (!shape.ok()) return;
  output.shape = *shape;
  output.has_shape = true;
}

}  // namespace

absl::Status FoldConstants(Graph& graph) {
  std::vector<Node> remaining;
  for (Node& node : graph.nodes) {
    bool foldable = node.domain.empty() && IsFoldableOp(node.op_type) && node.outputs.size() == 1 &&
                    InputsReady(node, graph);
    if (!foldable) {
      CompleteOutputShape(node, graph);
      remaining.push_back(std::move(node));
      continue;
    }
    GTCO_ASSIGN_OR_RETURN(std::vector<Tensor> outputs, EvaluateConstantNode(node, graph));
    for (Tensor& output : outputs) graph.SetTensor(std::move(output));
  }
  graph.nodes = std::move(remaining);
  graph.RemoveDeadNodes();
  return absl::OkStatus();
}

}  // namespace gtco::graph
