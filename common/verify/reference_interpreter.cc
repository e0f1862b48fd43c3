// The reference interpreter: graph nodes through the reference op library, in graph order.
#include "common/verify/reference_interpreter.h"

#include <set>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/graph/reference_node.h"
#include "common/util/status.h"

namespace gtco::verify {

namespace reference = runtime::reference;
using graph::ConstantValue;
using graph::ReferenceNode;

absl::StatusOr<ValueMap> Interpret(const graph::Graph& graph, const ValueMap& inputs,
                                   bool keep_all) {
  ValueMap values;
  for (const std::string& name : graph.inputs) {
    auto found = inputs.find(name);
    if (found == inputs.end()) {
      return absl::InvalidArgumentError(absl::StrCat("reference: no value for input '", name, "'"));
    }
    const graph::Tensor& tensor = graph.tensor(name);
    if (tensor.has_shape && found->second.shape != tensor.shape) {
      return absl::InvalidArgumentError(
          absl::StrCat("reference: input '", name, "' must be ", graph::ShapeString(tensor.shape)));
    }
    values[name] = found->second;
  }
  // The last node reading each tensor, so that values no later node reads are freed.
  std::map<std::string, size_t> last_reader;
  for (size_t index = 0; index < graph.nodes.size(); ++index) {
    for (const std::string& input : graph.nodes[index].inputs) last_reader[input] = index;
  }
  std::set<std::string> outputs(graph.outputs.begin(), graph.outputs.end());
  for (size_t index = 0; index < graph.nodes.size(); ++index) {
    const graph::Node& node = graph.nodes[index];
    std::vector<Value> constants;
    constants.reserve(node.inputs.size());
    std::vector<const Value*> args;
    for (const std::string& input : node.inputs) {
      if (input.empty()) {
        args.push_back(nullptr);
        continue;
      }
      auto found = values.find(input);
      if (found != values.end()) {
        args.push_back(&found->second);
        continue;
      }
      const graph::Tensor* tensor = graph.FindTensor(input);
      if (tensor == nullptr || !tensor->is_constant) {
        return absl::InvalidArgumentError(absl::StrCat("reference: node '", node.name, "' reads '",
                                                       input, "', which no earlier node computes"));
      }
      GTCO_ASSIGN_OR_RETURN(Value constant, ConstantValue(*tensor));
      constants.push_back(std::move(constant));
      args.push_back(&constants.back());
    }
    GTCO_ASSIGN_OR_RETURN(reference::Node ref_node, ReferenceNode(node, graph.opset));
    GTCO_ASSIGN_OR_RETURN(std::vector<Value> results,
                          reference::RunOp(ref_node, args, static_cast<int>(node.outputs.size())));
    for (size_t i = 0; i < node.outputs.size() && i < results.size(); ++i) {
      if (node.outputs[i].empty()) continue;
      Value& result = results[i];
      // A graph after GTCO's passes may declare another type than the op's (a MatMulInteger that
      // took in the Cast after it writes f32): the value is converted, as that Cast did.
      const graph::Tensor* declared = graph.FindTensor(node.outputs[i]);
      if (declared != nullptr) {
        absl::StatusOr<runtime::ElemType> type = RuntimeElemType(declared->type);
        if (type.ok() && *type != result.dtype) {
          for (double& element : result.data) element = runtime::reference::RoundTo(*type, element);
          result.dtype = *type;
        }
      }
      values[node.outputs[i]] = std::move(result);
    }
    if (keep_all) continue;
    for (const std::string& input : node.inputs) {
      auto last = last_reader.find(input);
      if (last != last_reader.end() && last->second == index && !outputs.count(input)) {
        values.erase(input);
      }
    }
  }
  if (keep_all) return values;
  ValueMap result;
  for (const std::string& name : graph.outputs) {
    auto found = values.find(name);
    if (found != values.end()) {
      result[name] = std::move(found->second);
    } else if (graph.IsConstant(name)) {
      GTCO_ASSIGN_OR_RETURN(result[name], ConstantValue(graph.tensor(name)));
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("reference: no node computes graph output '", name, "'"));
    }
  }
  return result;
}

}  // namespace gtco::verify
