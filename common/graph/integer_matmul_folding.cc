// Integer matmul folding: MatMulInteger -> Cast(f32) into one node, the weight's scale into a
// per-column constant.
#include "common/graph/integer_matmul_folding.h"

#include <algorithm>
#include <map>
#include <set>

#include "absl/strings/str_cat.h"
#include "common/util/status.h"

namespace gtco::graph {
namespace {

constexpr int64_t kOnnxFloat = 1;

bool IsGraphOutput(const Graph& graph, const std::string& tensor) {
  return std::find(graph.outputs.begin(), graph.outputs.end(), tensor) != graph.outputs.end();
}

bool IsDefaultOp(const Node& node, const char* op_type) {
  return node.op_type == op_type && node.domain.empty();
}

/// A fresh activation tensor (static shape, not constant) named after `base`.
std::string AddActivation(Graph& graph, const std::string& base, ElemType type,
                          std::vector<int64_t> shape) {
  Tensor tensor;
  tensor.name = graph.FreshName(base);
  tensor.type = type;
  tensor.has_shape = true;
  tensor.shape = std::move(shape);
  const std::string name = tensor.name;
  graph.SetTensor(std::move(tensor));
  return name;
}

/// A fresh constant i64 vector (a Reshape's shape).
std::string AddShape(Graph& graph, const std::string& base, const std::vector<int64_t>& values) {
  Tensor tensor;
  tensor.name = graph.FreshName(base);
  tensor.type = ElemType::kInt64;
  tensor.has_shape = true;
  tensor.shape = {static_cast<int64_t>(values.size())};
  tensor.is_constant = true;
  tensor.int_data = values;
  const std::string name = tensor.name;
  graph.SetTensor(std::move(tensor));
  return name;
}

Node MakeNode(Graph& graph, const std::string& op, const std::string& base,
              std::vector<std::string> inputs, std::string output) {
  Node node;
  node.op_type = op;
  node.name = graph.FreshName(base);
  node.inputs = std::move(inputs);
  node.outputs = {std::move(output)};
  return node;
}

Node MakeTranspose(Graph& graph, const std::string& base, const std::string& input,
                   const std::string& output, std::vector<int64_t> perm) {
  Node node = MakeNode(graph, "Transpose", base, {input}, output);
  node.attributes["perm"].kind = Attribute::Kind::kInts;
  node.attributes["perm"].ints = std::move(perm);
  return node;
}

/// The nodes computing ConvInteger `node` as patch rows times the weights, or UNIMPLEMENTED
/// saying why this ConvInteger is not a patch convolution.
absl::StatusOr<std::vector<Node>> PatchConvInteger(const Node& node, Graph& graph) {
  auto refuse = [&](const std::string& why) {
    return absl::UnimplementedError(absl::StrCat(
        "ONNX op 'ConvInteger' at node '", node.name, "': ", why,
        "; only non-overlapping patch convolutions (kernel equal to the strides, no padding, "
        "dilation 1, one group, per-tensor zero points, constant weights) are supported"));
  };
  if (node.inputs.size() < 2 || node.outputs.empty()) return refuse("missing inputs");
  const Tensor& x = graph.tensor(node.inputs[0]);
  const Tensor& w = graph.tensor(node.inputs[1]);
  if (!x.has_shape || x.shape.size() != 4 || !w.has_shape || w.shape.size() != 4) {
    return refuse("it is not a 2-D convolution with static shapes");
  }
  if (!w.is_constant) return refuse("the weights are computed at run time");
  for (size_t i = 2; i < node.inputs.size() && i < 4; ++i) {
    if (!node.inputs[i].empty() && graph.tensor(node.inputs[i]).NumElements() != 1) {
      return refuse(absl::StrCat("zero point '", node.inputs[i], "' is not per tensor"));
    }
  }
  const int64_t n = x.shape[0], c = x.shape[1], h = x.shape[2], wd = x.shape[3];
  const int64_t k = w.shape[0], r = w.shape[2], s = w.shape[3];
  const std::vector<int64_t> strides = node.IntsAttr("strides");
  const std::vector<int64_t> dilations = node.IntsAttr("dilations");
  const std::vector<int64_t> pads = node.IntsAttr("pads");
  const std::string auto_pad = node.HasAttr("auto_pad") ? node.attributes.at("auto_pad").s : "";
  const bool patches =
      w.shape[1] == c && node.IntAttr("group", 1) == 1 && strides == std::vector<int64_t>{r, s} &&
      (dilations.empty() || dilations == std::vector<int64_t>{1, 1}) &&
      std::all_of(pads.begin(), pads.end(), [](int64_t pad) { return pad == 0; }) &&
      (auto_pad.empty() || auto_pad == "NOTSET" || auto_pad == "VALID") && h % r == 0 &&
      wd % s == 0;
  if (!patches) return refuse("its windows overlap, are padded, dilated or grouped");
  const int64_t oh = h / r, ow = wd / s, patch = c * r * s, rows = n * oh * ow;
  const std::string& base = node.name;
  // The weights as [C*R*S, K]: row (c, r, s), column k.
  Tensor weights;
  weights.name = graph.FreshName(absl::StrCat(w.name, "_patch_rows"));
  weights.type = w.type;
  weights.has_shape = true;
  weights.shape = {patch, k};
  weights.is_constant = true;
  for (int64_t row = 0; row < patch; ++row) {
    for (int64_t col = 0; col < k; ++col) weights.int_data.push_back(w.int_data[col * patch + row]);
  }
  const std::string weights_name = weights.name;
  graph.SetTensor(std::move(weights));
  const std::string blocks =
      AddActivation(graph, absl::StrCat(base, "_blocks"), x.type, {n, c, oh, r, ow, s});
  const std::string ordered =
      AddActivation(graph, absl::StrCat(base, "_patches"), x.type, {n, oh, ow, c, r, s});
  const std::string patch_rows =
      AddActivation(graph, absl::StrCat(base, "_patch_rows"), x.type, {rows, patch});
  const Tensor& out = graph.tensor(node.outputs[0]);
  const std::string products =
      AddActivation(graph, absl::StrCat(base, "_products"), out.type, {rows, k});
  const std::string nhwc =
      AddActivation(graph, absl::StrCat(base, "_nhwc"), out.type, {n, oh, ow, k});
  std::vector<Node> nodes;
  nodes.push_back(MakeNode(graph, "Reshape", absl::StrCat(base, "_blocks"),
                           {node.inputs[0], AddShape(graph, absl::StrCat(base, "_blocks_shape"),
                                                     {n, c, oh, r, ow, s})},
                           blocks));
  nodes.push_back(MakeTranspose(graph, absl::StrCat(base, "_patches"), blocks, ordered,
                                {0, 2, 4, 1, 3, 5}));
  nodes.push_back(MakeNode(graph, "Reshape", absl::StrCat(base, "_patch_rows"),
                           {ordered, AddShape(graph, absl::StrCat(base, "_rows_shape"),
                                              {rows, patch})},
                           patch_rows));
  std::vector<std::string> matmul_inputs = {patch_rows, weights_name};
  for (size_t i = 2; i < node.inputs.size() && i < 4; ++i) matmul_inputs.push_back(node.inputs[i]);
  nodes.push_back(MakeNode(graph, "MatMulInteger", base, matmul_inputs, products));
  nodes.push_back(MakeNode(graph, "Reshape", absl::StrCat(base, "_nhwc"),
                           {products, AddShape(graph, absl::StrCat(base, "_nhwc_shape"),
                                               {n, oh, ow, k})},
                           nhwc));
  nodes.push_back(
      MakeTranspose(graph, absl::StrCat(base, "_nchw"), nhwc, node.outputs[0], {0, 3, 1, 2}));
  return nodes;
}

/// Every ConvInteger as a patch convolution (PatchConvInteger).
absl::Status RewriteConvIntegers(Graph& graph) {
  std::vector<Node> nodes;
  for (const Node& node : graph.nodes) {
    if (!IsDefaultOp(node, "ConvInteger")) {
      nodes.push_back(node);
      continue;
    }
    absl::StatusOr<std::vector<Node>> rewritten = PatchConvInteger(node, graph);
    if (!rewritten.ok()) return rewritten.status();
    for (Node& added : *rewritten) nodes.push_back(std::move(added));
  }
  graph.nodes = std::move(nodes);
  return absl::OkStatus();
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
  GTCO_RETURN_IF_ERROR(RewriteConvIntegers(graph));
  FoldCasts(graph);
  SplitScales(graph);
  return absl::OkStatus();
}

}  // namespace gtco::graph
