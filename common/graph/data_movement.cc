// Data movement that need not move data (data_movement.h).
#include "common/graph/data_movement.h"

#include <cmath>
#include <cstdlib>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "common/graph/op_support.h"
#include "common/graph/shape_inference.h"

namespace gtco::graph {
namespace {

bool IsReshapeLike(const Node& node) {
  static const std::set<std::string> kOps = {"Reshape", "Flatten", "Squeeze", "Unsqueeze",
                                             "Identity"};
  return node.domain.empty() && kOps.count(node.op_type) > 0 && !node.inputs.empty() &&
         node.outputs.size() == 1;
}

/// Whether `shape` has an axis of size 0 (a Reshape target reads 0 as "keep this axis").
bool HasZeroDim(const std::vector<int64_t>& shape) {
  for (int64_t dim : shape) {
    if (dim == 0) return true;
  }
  return false;
}

/// A finite, non-zero power of two (its scaling of a float is exact).
bool IsPowerOfTwo(double value) {
  if (!std::isfinite(value) || value == 0.0) return false;
  int exponent = 0;
  return std::fabs(std::frexp(value, &exponent)) == 0.5;
}

/// One scan of the graph applying the first rewrite that fits; false when none does.
class Rewriter {
 public:
  explicit Rewriter(Graph& graph)
      : graph_(graph),
        consumers_(graph.ConsumerMap()),
        outputs_(graph.outputs.begin(), graph.outputs.end()) {
    for (int i = 0; i < static_cast<int>(graph.nodes.size()); ++i) {
      for (const std::string& output : graph.nodes[i].outputs) producer_[output] = i;
    }
  }

  bool RewriteOnce() {
    for (int i = 0; i < static_cast<int>(graph_.nodes.size()); ++i) {
      if (UnitTransposeToReshape(i) || CollapseReshapes(i) || MoveScaleAfterMatMul(i) ||
          SinkReshape(i)) {
        return true;
      }
    }
    return false;
  }

 private:
  /// The static-shaped, computed (non-constant) tensor named `name`, else null.
  const Tensor* Computed(const std::string& name) const {
    const Tensor* tensor = graph_.FindTensor(name);
    if (tensor == nullptr || !tensor->has_shape || tensor->is_constant) return nullptr;
    return tensor;
  }
  /// The index of the node writing `tensor`, or -1 (a graph input or a constant).
  int ProducerOf(const std::string& tensor) const {
    auto found = producer_.find(tensor);
    return found == producer_.end() ? -1 : found->second;
  }
  /// True when node `reader` alone reads `tensor` and it is no graph output.
  bool ReadOnlyBy(const std::string& tensor, int reader) const {
    if (outputs_.count(tensor)) return false;
    auto found = consumers_.find(tensor);
    if (found == consumers_.end()) return false;
    for (int index : found->second) {
      if (index != reader) return false;
    }
    return true;
  }
  /// Node `index` made a Reshape of `input` to `shape` (attributes dropped, output kept).
  void MakeReshape(int index, const std::string& input, const std::vector<int64_t>& shape) {
    Node& node = graph_.nodes[index];
    const std::string target = graph_.AddIntConstant(node.name + "_shape", ElemType::kInt64,
                                                     {static_cast<int64_t>(shape.size())}, shape);
    node.op_type = "Reshape";
    node.attributes.clear();
    node.inputs = {input, target};
  }
  /// Moves node `from` to just after node `after` (from < after).
  void MoveAfter(int from, int after) {
    Node moved = std::move(graph_.nodes[from]);
    graph_.nodes.erase(graph_.nodes.begin() + from);
    graph_.nodes.insert(graph_.nodes.begin() + after, std::move(moved));
  }

  bool UnitTransposeToReshape(int index) {
    const Node& node = graph_.nodes[index];
    if (node.op_type != "Transpose" || !node.domain.empty() || node.inputs.size() != 1 ||
        node.outputs.size() != 1) {
      return false;
    }
    const Tensor* in = Computed(node.inputs[0]);
    const Tensor* out = Computed(node.outputs[0]);
    if (in == nullptr || out == nullptr || HasZeroDim(in->shape)) return false;
    const int64_t rank = static_cast<int64_t>(in->shape.size());
    absl::StatusOr<std::vector<int64_t>> perm = TransposePerm(node, rank);
    if (!perm.ok() || static_cast<int64_t>(perm->size()) != rank) return false;
    int64_t last = -1;
    for (int64_t axis : *perm) {
      if (axis < 0 || axis >= rank) return false;
      if (in->shape[axis] == 1) continue;
      if (axis < last) return false;
      last = axis;
    }
    MakeReshape(index, node.inputs[0], out->shape);
    return true;
  }

  bool CollapseReshapes(int index) {
    const Node& outer = graph_.nodes[index];
    if (!IsReshapeLike(outer)) return false;
    const int inner_index = ProducerOf(outer.inputs[0]);
    if (inner_index < 0 || !IsReshapeLike(graph_.nodes[inner_index])) return false;
    const std::string source = graph_.nodes[inner_index].inputs[0];
    const Tensor* out = Computed(outer.outputs[0]);
    if (Computed(source) == nullptr || out == nullptr || HasZeroDim(out->shape)) return false;
    MakeReshape(index, source, out->shape);
    graph_.RemoveDeadNodes();  // the inner reshape, where nothing else reads it
    return true;
  }

  bool MoveScaleAfterMatMul(int index) {
    const Node& matmul = graph_.nodes[index];
    if (matmul.op_type != "MatMul" || !matmul.domain.empty() || matmul.inputs.size() != 2 ||
        matmul.outputs.size() != 1) {
      return false;
    }
    const Tensor* product = Computed(matmul.outputs[0]);
    if (product == nullptr || product->type != ElemType::kFloat32) return false;
    for (int operand = 0; operand < 2; ++operand) {
      const std::string& scaled = matmul.inputs[operand];
      const int scale_index = ProducerOf(scaled);
      if (scale_index < 0 || !ReadOnlyBy(scaled, index)) continue;
      const Node& scale = graph_.nodes[scale_index];
      if ((scale.op_type != "Mul" && scale.op_type != "Div") || !scale.domain.empty() ||
          scale.inputs.size() != 2 || scale.outputs.size() != 1) {
        continue;
      }
      // The constant: Div's divisor, either factor of a Mul.
      int constant_at = -1;
      for (int side = scale.op_type == "Div" ? 1 : 0; side < 2; ++side) {
        const Tensor* c = graph_.FindTensor(scale.inputs[side]);
        if (c != nullptr && c->is_constant && c->has_shape && c->NumElements() == 1 &&
            IsFloating(c->type) && c->shape.size() <= product->shape.size() &&
            IsPowerOfTwo(c->ValueAsDouble(0))) {
          constant_at = side;
          break;
        }
      }
      if (constant_at < 0) continue;
      const std::string x = scale.inputs[1 - constant_at];
      const Tensor* x_tensor = Computed(x);
      const Tensor* scaled_tensor = Computed(scaled);
      if (x_tensor == nullptr || scaled_tensor == nullptr ||
          x_tensor->type != ElemType::kFloat32 || x_tensor->shape != scaled_tensor->shape) {
        continue;
      }
      // Only a scale that would run as a kernel of its own (on a copy's output or a graph
      // input): after an anchor or element-wise node it is already a free epilogue step.
      const int x_producer = ProducerOf(x);
      if (x_producer >= 0 && RoleOf(graph_.nodes[x_producer]) != OpRole::kData) continue;
      const std::string result = matmul.outputs[0];
      const std::string unscaled =
          graph_.AddActivation(result + "_unscaled", ElemType::kFloat32, product->shape);
      graph_.nodes[index].inputs[operand] = x;
      graph_.nodes[index].outputs[0] = unscaled;
      Node& moved = graph_.nodes[scale_index];
      moved.inputs[1 - constant_at] = unscaled;
      moved.outputs[0] = result;
      MoveAfter(scale_index, index);
      return true;
    }
    return false;
  }

  bool SinkReshape(int index) {
    const Node& node = graph_.nodes[index];
    if (!node.domain.empty() || !ElementwiseEwOp(node.op_type) || node.outputs.size() != 1 ||
        node.inputs.empty()) {
      return false;
    }
    const Tensor* out = Computed(node.outputs[0]);
    if (out == nullptr) return false;
    // The one reshaped input: a reshape of an anchor's or element-wise node's output, each of the
    // two tensors read by the one node.
    std::string reshaped;
    int reshape_index = -1;
    for (const std::string& input : node.inputs) {
      const int producer = ProducerOf(input);
      if (producer < 0 || !IsReshapeLike(graph_.nodes[producer])) continue;
      if (!reshaped.empty() && input != reshaped) return false;  // two different reshapes
      reshaped = input;
      reshape_index = producer;
    }
    if (reshape_index < 0 || !ReadOnlyBy(reshaped, index)) return false;
    const std::string source = graph_.nodes[reshape_index].inputs[0];
    const Tensor* source_tensor = Computed(source);
    const Tensor* reshaped_tensor = Computed(reshaped);
    const int source_producer = ProducerOf(source);
    if (source_tensor == nullptr || reshaped_tensor == nullptr || source_producer < 0 ||
        !ReadOnlyBy(source, reshape_index) || reshaped_tensor->shape != out->shape ||
        source_tensor->shape == out->shape) {
      return false;
    }
    const OpRole role = RoleOf(graph_.nodes[source_producer]);
    if ((role != OpRole::kAnchor && role != OpRole::kElementwise) || HasZeroDim(out->shape)) {
      return false;
    }
    const std::vector<int64_t> shape = source_tensor->shape;
    // The other inputs: of the output's shape (reshaped alike) or single values that broadcast
    // to the source's shape as they did to the output's.
    std::vector<std::pair<int, const Tensor*>> to_reshape;
    for (int i = 0; i < static_cast<int>(node.inputs.size()); ++i) {
      if (node.inputs[i] == reshaped) continue;
      const Tensor* other = graph_.FindTensor(node.inputs[i]);
      if (other == nullptr || !other->has_shape) return false;
      if (other->shape == out->shape) {
        to_reshape.push_back({i, other});
      } else if (other->NumElements() != 1 || other->shape.size() > shape.size()) {
        return false;
      }
    }
    // Rewrite: the other inputs reshaped (constants re-shaped in place of a node), the node on
    // the source, the reshape moved after it.
    std::vector<Node> added;
    std::vector<std::string> inputs = graph_.nodes[index].inputs;
    for (const auto& [i, other] : to_reshape) {
      if (other->is_constant) {
        inputs[i] = IsFloating(other->type)
                        ? graph_.AddFloatConstant(other->name + "_reshaped", other->type, shape,
                                                  other->float_data)
                        : graph_.AddIntConstant(other->name + "_reshaped", other->type, shape,
                                                other->int_data);
        continue;
      }
      Node reshape;
      reshape.op_type = "Reshape";
      reshape.name = graph_.FreshName(graph_.nodes[index].name + "_reshape_input");
      const std::string target =
          graph_.AddIntConstant(reshape.name + "_shape", ElemType::kInt64,
                                {static_cast<int64_t>(shape.size())}, shape);
      const std::string result = graph_.AddActivation(other->name + "_reshaped", other->type, shape);
      reshape.inputs = {other->name, target};
      reshape.outputs = {result};
      inputs[i] = result;
      added.push_back(std::move(reshape));
    }
    for (std::string& input : inputs) {
      if (input == reshaped) input = source;
    }
    const std::string result = graph_.nodes[index].outputs[0];
    const std::vector<int64_t> out_shape = out->shape;
    const std::string computed = graph_.AddActivation(result + "_unreshaped", out->type, shape);
    graph_.nodes[index].inputs = inputs;
    graph_.nodes[index].outputs[0] = computed;
    MakeReshape(reshape_index, computed, out_shape);
    graph_.nodes[reshape_index].outputs[0] = result;
    // Order: the added reshapes right before the node, the moved reshape right after it.
    MoveAfter(reshape_index, index);  // the node is now at index - 1
    graph_.nodes.insert(graph_.nodes.begin() + (index - 1), added.begin(), added.end());
    return true;
  }

  Graph& graph_;
  std::map<std::string, std::vector<int>> consumers_;
  std::set<std::string> outputs_;
  std::map<std::string, int> producer_;
};

}  // namespace

bool KeepCopies() { return std::getenv("GTCO_KEEP_COPIES") != nullptr; }

absl::Status SimplifyDataMovement(Graph& graph) {
  // Each rewrite removes a copy, moves a scale past its MatMul or a reshape past a node, so the
  // scans end; the bound only guards against a rewrite undoing another.
  const size_t limit = 4 * graph.nodes.size() + 16;
  for (size_t round = 0; round < limit; ++round) {
    if (!Rewriter(graph).RewriteOnce()) return absl::OkStatus();
  }
  return absl::InternalError("SimplifyDataMovement did not settle");
}

}  // namespace gtco::graph
