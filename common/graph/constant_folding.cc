// Constant folding: evaluates nodes with constant inputs and drops the dead remainder.
#include "common/graph/constant_folding.h"

#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/graph/const_eval.h"
#include "common/graph/reference_node.h"
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
  if (node.op_type == "DynamicQuantizeLinear") {  // its scale and zero point are scalars
    for (size_t i = 1; i < node.outputs.size() && i < 3; ++i) {
      if (node.outputs[i].empty()) continue;
      Tensor& scalar = graph.mutable_tensor(node.outputs[i]);
      if (!scalar.has_shape) scalar.has_shape = true, scalar.shape.clear();
    }
  }
  Tensor& output = graph.mutable_tensor(node.outputs[0]);
  if (!output.has_shape) {
    absl::StatusOr<std::vector<int64_t>> shape = InferOutputShape(node, graph);
    if (shape.ok()) {
      output.shape = *shape;
      output.has_shape = true;
    } else if (shape.status().code() != absl::StatusCode::kUnimplemented) {
      return;  // a shape function of GTCO's refused the node: the support check names it
    }
  }
  // Ops without a shape function of GTCO's (most run as fallback steps): the reference op
  // library computes the shapes where no computed input sets them.
  for (const std::string& name : node.outputs) {
    if (name.empty() || !graph.HasTensor(name) || graph.tensor(name).has_shape) continue;
    (void)InferShapesByReference(node, graph);
    break;
  }
}

/// An element-wise node whose inputs' shapes do not give its recorded output shape: ONNX shape
/// inference can leave a dimension unknown (data propagation stops at Expand) and then take the
/// other operand's, so a shape override the model cannot take would reach the planner.
absl::Status CheckElementwiseShape(const Node& node, const Graph& graph) {
  static const std::set<std::string> kElementwise = {"Add", "Sub", "Mul", "Div", "Pow"};
  if (!kElementwise.count(node.op_type) || node.outputs.empty()) return absl::OkStatus();
  const Tensor* output = graph.FindTensor(node.outputs[0]);
  if (output == nullptr || !output->has_shape) return absl::OkStatus();
  for (const std::string& input : node.inputs) {
    const Tensor* tensor = input.empty() ? nullptr : graph.FindTensor(input);
    if (tensor == nullptr || !tensor->has_shape) return absl::OkStatus();
  }
  absl::StatusOr<std::vector<int64_t>> shape = InferOutputShape(node, graph);
  if (!shape.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        shape.status().message(), " (do the input shapes, and any --shape override, fit the "
        "model?)"));
  }
  if (*shape != output->shape) {
    return absl::InvalidArgumentError(absl::StrCat(
        "node '", node.name, "' (", node.op_type, "): its inputs give shape [",
        absl::StrJoin(*shape, ","), "] but the model records [", absl::StrJoin(output->shape, ","),
        "] (do the input shapes, and any --shape override, fit the model?)"));
  }
  return absl::OkStatus();
}

/// Quantization ops on constant weights stay as they are: the integer passes and the exporter
/// keep such weights in 8 bits.
bool KeptQuantized(const std::string& op_type) {
  static const std::set<std::string> kOps = {"QuantizeLinear", "DequantizeLinear",
                                             "DynamicQuantizeLinear", "MatMulInteger",
                                             "ConvInteger", "QLinearMatMul", "QLinearConv"};
  return kOps.count(op_type) > 0;
}

/// The largest output the reference library folds (16 Mi values: masks and tables, not the
/// products of weights a kernel should compute).
constexpr int64_t kMaxFoldedElements = int64_t{1} << 24;

}  // namespace

absl::Status FoldConstants(Graph& graph) {
  std::vector<Node> remaining;
  for (Node& node : graph.nodes) {
    bool foldable = node.domain.empty() && IsFoldableOp(node.op_type) && node.outputs.size() == 1 &&
                    InputsReady(node, graph);
    if (!foldable && node.domain.empty() && !IsShapeOnlyOp(node.op_type) &&
        !KeptQuantized(node.op_type) && InputsReady(node, graph)) {
      // Ops const_eval does not fold (ScatterND building Swin-T's window masks, say), on
      // constants: the reference op library evaluates them once, here.
      GTCO_ASSIGN_OR_RETURN(std::optional<std::vector<Tensor>> folded,
                            EvaluateByReference(node, graph, kMaxFoldedElements));
      if (folded.has_value()) {
        for (Tensor& output : *folded) graph.SetTensor(std::move(output));
        continue;
      }
    }
    if (!foldable) {
      CompleteOutputShape(node, graph);
      GTCO_RETURN_IF_ERROR(CheckElementwiseShape(node, graph));
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
