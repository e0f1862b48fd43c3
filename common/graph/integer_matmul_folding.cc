// Integer matmul folding: MatMulInteger -> Cast(f32) into one node, the weight's scale into a
// per-column constant.
#include "common/graph/integer_matmul_folding.h"

#include <algorithm>
#include <map>
#include <set>

#include "absl/strings/str_cat.h"

namespace gtco::graph {
namespace {

constexpr int64_t kOnnxFloat = 1;

bool IsGraphOutput(const Graph& graph, const std::string& tensor) {
  return std::find(graph.outputs.begin(), graph.outputs.end(), tensor) != graph.outputs.end();
}

bool IsDefaultOp(const Node& node, const char* op_type) {
  return node.op_type == op_type && node.domain.empty();
}

/// MatMulInteger -> Cast(f32): the matmul writes the Cast's output.
void FoldCasts(Graph& graph) {
  const std::map<std::string, std::vector<int>> consumers = graph.ConsumerMap();
  std::set<int> folded;
  for (Node& node : graph.nodes) {
    if (!IsDefaultOp(node, "MatMulInteger") || node.outputs.empty()) continue;
    const std::string& out = node.outputs[0];
    auto readers = consumers.find(out);
    if (IsGraphOutput(graph, out) || readers == consumers.end() || readers->second.size() != 1) {
      continue;
    }
    const Node& cast = graph.nodes[readers->second[0]];
    if (!IsDefaultOp(cast, "Cast") || cast.IntAttr("to", 0) != kOnnxFloat) continue;
    node.outputs[0] = cast.outputs.at(0);
    folded.insert(readers->second[0]);
  }
  if (folded.empty()) return;
  std::vector<Node> kept;
  for (size_t index = 0; index < graph.nodes.size(); ++index) {
    if (!folded.count(static_cast<int>(index))) kept.push_back(std::move(graph.nodes[index]));
  }
  graph.nodes = std::move(kept);
}

/// The one-element f32 tensor and the constant f32 scale (1 or `columns` elements) that `mul`
/// (a two-input Mul) multiplies, in that order; false when it is not such a product.
bool SplitScaleProduct(const Graph& graph, const Node& mul, int64_t columns, std::string* x_scale,
                       std::string* w_scale) {
  if (!IsDefaultOp(mul, "Mul") || mul.inputs.size() != 2) return false;
  for (int side = 0; side < 2; ++side) {
    const Tensor& x = graph.tensor(mul.inputs[side]);
    const Tensor& w = graph.tensor(mul.inputs[1 - side]);
    const bool w_ok = w.is_constant && w.type == ElemType::kFloat32 && w.shape.size() <= 1 &&
                      (w.NumElements() == 1 || w.NumElements() == columns) &&
                      static_cast<int64_t>(w.float_data.size()) == w.NumElements();
    if (w_ok && x.type == ElemType::kFloat32 && x.has_shape && x.NumElements() == 1) {
      *x_scale = x.name;
      *w_scale = w.name;
      return true;
    }
  }
  return false;
}

/// Mul(f32 MatMulInteger output, Mul(x_scale, w_scale)) -> Mul(Mul(output, x_scale), w_scale
/// per column).
void SplitScales(Graph& graph) {
  const std::map<std::string, std::vector<int>> consumers = graph.ConsumerMap();
  std::map<std::string, int> producer;
  for (size_t index = 0; index < graph.nodes.size(); ++index) {
    for (const std::string& output : graph.nodes[index].outputs) producer[output] = index;
  }
  std::map<int, Node> before;  // Mul node index -> the node inserted before it
  for (const Node& node : graph.nodes) {
    if (!IsDefaultOp(node, "MatMulInteger") || node.outputs.empty()) continue;
    const Tensor& out = graph.tensor(node.outputs[0]);
    auto readers = consumers.find(out.name);
    if (out.type != ElemType::kFloat32 || !out.has_shape || out.shape.empty() ||
        IsGraphOutput(graph, out.name) || readers == consumers.end() ||
        readers->second.size() != 1) {
      continue;
    }
    const int mul_index = readers->second[0];
    Node& mul = graph.nodes[mul_index];
    if (!IsDefaultOp(mul, "Mul") || mul.inputs.size() != 2 || mul.inputs[0] == mul.inputs[1] ||
        before.count(mul_index)) {
      continue;
    }
    const std::string& scale = mul.inputs[0] == out.name ? mul.inputs[1] : mul.inputs[0];
    auto made = producer.find(scale);
    const int64_t columns = out.shape.back();
    std::string x_scale, w_scale;
    if (made == producer.end() ||
        !SplitScaleProduct(graph, graph.nodes[made->second], columns, &x_scale, &w_scale)) {
      continue;
    }
    Tensor scaled = out;
    scaled.name = graph.FreshName(absl::StrCat(out.name, "_x_scaled"));
    Tensor per_column;
    per_column.name = graph.FreshName(absl::StrCat(w_scale, "_per_column"));
    per_column.type = ElemType::kFloat32;
    per_column.has_shape = true;
    per_column.shape = {columns};
    per_column.is_constant = true;
    const Tensor& w = graph.tensor(w_scale);
    for (int64_t col = 0; col < columns; ++col) {
      per_column.float_data.push_back(w.float_data[w.NumElements() == 1 ? 0 : col]);
    }
    Node x_mul;
    x_mul.op_type = "Mul";
    x_mul.name = graph.FreshName(absl::StrCat(mul.name, "_x_scale"));
    x_mul.inputs = {out.name, x_scale};
    x_mul.outputs = {scaled.name};
    mul.inputs = {scaled.name, per_column.name};
    graph.SetTensor(std::move(scaled));
    graph.SetTensor(std::move(per_column));
    before.emplace(mul_index, std::move(x_mul));
  }
  if (before.empty()) return;
  std::vector<Node> nodes;
  for (size_t index = 0; index < graph.nodes.size(); ++index) {
    auto inserted = before.find(static_cast<int>(index));
    if (inserted != before.end()) nodes.push_back(std::move(inserted->second));
    nodes.push_back(std::move(graph.nodes[index]));
  }
  graph.nodes = std::move(nodes);
  graph.RemoveDeadNodes();  // the x_scale * w_scale products nothing reads any more
}

}  // namespace

absl::Status FoldIntegerMatMulOutputs(Graph& graph) {
  FoldCasts(graph);
  SplitScales(graph);
  return absl::OkStatus();
}

}  // namespace gtco::graph
