// The bf16x3 activation split as one node (bf16x3_split.h).
#include "common/graph/bf16x3_split.h"

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace gtco::graph {

absl::Status FuseBf16x3Splits(Graph& graph) {
  std::map<std::string, int> producer;
  for (int i = 0; i < static_cast<int>(graph.nodes.size()); ++i) {
    for (const std::string& output : graph.nodes[i].outputs) producer[output] = i;
  }
  const std::map<std::string, std::vector<int>> consumers = graph.ConsumerMap();
  const std::set<std::string> outputs(graph.outputs.begin(), graph.outputs.end());
  // The node writing `tensor` when it is a default-domain `op`, else null.
  auto made_by = [&](const std::string& tensor, const char* op) -> const Node* {
    auto found = producer.find(tensor);
    if (found == producer.end()) return nullptr;
    const Node& node = graph.nodes[found->second];
    if (node.op_type != op || !node.domain.empty() || node.inputs.empty()) return nullptr;
    return &node;
  };
  // The Cast writing `tensor` when `tensor` is of `type`, else null.
  auto cast_to = [&](const std::string& tensor, ElemType type) -> const Node* {
    const Tensor* written = graph.FindTensor(tensor);
    return written != nullptr && written->type == type ? made_by(tensor, "Cast") : nullptr;
  };
  // True when exactly the nodes `readers` (by name) read `tensor` and it is no graph output.
  auto read_only_by = [&](const std::string& tensor, std::set<std::string> readers) {
    if (outputs.count(tensor)) return false;
    auto found = consumers.find(tensor);
    std::set<std::string> actual;
    if (found != consumers.end()) {
      for (int index : found->second) actual.insert(graph.nodes[index].name);
    }
    return actual == readers;
  };
  std::set<std::string> fused;  // names of the nodes the splits replace
  for (Node& concat : graph.nodes) {
    if (concat.op_type != "Concat" || !concat.domain.empty() || concat.inputs.size() != 3 ||
        concat.outputs.size() != 1 || concat.inputs[0] != concat.inputs[2]) {
      continue;
    }
    const Node* high = cast_to(concat.inputs[0], ElemType::kBFloat16);
    const Node* low = cast_to(concat.inputs[1], ElemType::kBFloat16);
    const Node* residual = low != nullptr ? made_by(low->inputs[0], "Sub") : nullptr;
    if (high == nullptr || residual == nullptr || residual->inputs.size() != 2 ||
        residual->inputs[0] != high->inputs[0]) {
      continue;
    }
    const Node* back = cast_to(residual->inputs[1], ElemType::kFloat32);
    if (back == nullptr || back->inputs[0] != concat.inputs[0]) continue;
    const Tensor* x = graph.FindTensor(high->inputs[0]);
    if (x == nullptr || x->is_constant || !x->has_shape || x->shape.empty() ||
        x->type != ElemType::kFloat32) {
      continue;
    }
    const int64_t rank = static_cast<int64_t>(x->shape.size());
    const int64_t axis = concat.IntAttr("axis", 0);
    if (axis != -1 && axis != rank - 1) continue;
    if (!read_only_by(high->outputs[0], {back->name, concat.name}) ||
        !read_only_by(back->outputs[0], {residual->name}) ||
        !read_only_by(residual->outputs[0], {low->name}) ||
        !read_only_by(low->outputs[0], {concat.name})) {
      continue;
    }
    fused.insert(high->name);
    fused.insert(back->name);
    fused.insert(residual->name);
    fused.insert(low->name);
    concat.op_type = kBf16x3SplitOp;
    concat.domain = kGtcoInternalDomain;
    concat.inputs = {high->inputs[0]};
    concat.attributes.clear();
  }
  graph.nodes.erase(std::remove_if(graph.nodes.begin(), graph.nodes.end(),
                                   [&](const Node& node) { return fused.count(node.name) > 0; }),
                    graph.nodes.end());
  return absl::OkStatus();
}

}  // namespace gtco::graph
