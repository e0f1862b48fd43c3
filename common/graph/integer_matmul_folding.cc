// Integer matmul folding: MatMulInteger -> Cast(f32) into one node, the weight's scale into a
// per-column constant.
#include "common/graph/integer_matmul_folding.h"

#include <algorithm>
#include <map>
#include <optional>
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
  std::vector<int64_t> rows_by_k;
  rows_by_k.reserve(static_cast<size_t>(patch * k));
  for (int64_t row = 0; row < patch; ++row) {
    for (int64_t col = 0; col < k; ++col) rows_by_k.push_back(w.int_data[col * patch + row]);
  }
  const std::string weights_name = graph.AddIntConstant(absl::StrCat(w.name, "_patch_rows"),
                                                        w.type, {patch, k}, std::move(rows_by_k));
  const std::string blocks =
      graph.AddActivation(absl::StrCat(base, "_blocks"), x.type, {n, c, oh, r, ow, s});
  const std::string ordered =
      graph.AddActivation(absl::StrCat(base, "_patches"), x.type, {n, oh, ow, c, r, s});
  const std::string patch_rows =
      graph.AddActivation(absl::StrCat(base, "_patch_rows"), x.type, {rows, patch});
  const Tensor& out = graph.tensor(node.outputs[0]);
  const std::string products =
      graph.AddActivation(absl::StrCat(base, "_products"), out.type, {rows, k});
  const std::string nhwc =
      graph.AddActivation(absl::StrCat(base, "_nhwc"), out.type, {n, oh, ow, k});
  // A Reshape's target shape: an i64 vector constant.
  auto shape = [&](const char* suffix, std::vector<int64_t> dims) {
    const int64_t rank = static_cast<int64_t>(dims.size());
    return graph.AddIntConstant(absl::StrCat(base, suffix), ElemType::kInt64, {rank},
                                std::move(dims));
  };
  std::vector<Node> nodes;
  nodes.push_back(MakeNode(graph, "Reshape", absl::StrCat(base, "_blocks"),
                           {node.inputs[0], shape("_blocks_shape", {n, c, oh, r, ow, s})},
                           blocks));
  nodes.push_back(MakeTranspose(graph, absl::StrCat(base, "_patches"), blocks, ordered,
                                {0, 2, 4, 1, 3, 5}));
  nodes.push_back(MakeNode(graph, "Reshape", absl::StrCat(base, "_patch_rows"),
                           {ordered, shape("_rows_shape", {rows, patch})}, patch_rows));
  std::vector<std::string> matmul_inputs = {patch_rows, weights_name};
  for (size_t i = 2; i < node.inputs.size() && i < 4; ++i) matmul_inputs.push_back(node.inputs[i]);
  nodes.push_back(MakeNode(graph, "MatMulInteger", base, matmul_inputs, products));
  nodes.push_back(MakeNode(graph, "Reshape", absl::StrCat(base, "_nhwc"),
                           {products, shape("_nhwc_shape", {n, oh, ow, k})}, nhwc));
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

/// A MatMul (or a Conv without bias: --precision bf16x3's) of two bf16 inputs with a bf16
/// output.
bool IsBf16MatMul(const Graph& graph, const Node& node) {
  if ((!IsDefaultOp(node, "MatMul") && !IsDefaultOp(node, "Conv")) || node.inputs.size() != 2 ||
      node.outputs.empty()) {
    return false;
  }
  const auto bf16 = [&](const std::string& name) {
    return graph.tensor(name).type == ElemType::kBFloat16;
  };
  return bf16(node.inputs[0]) && bf16(node.inputs[1]) && bf16(node.outputs[0]);
}

/// MatMulInteger -> Cast(f32), and a bf16 MatMul -> Cast(f32): the matmul writes the Cast's
/// output.
void FoldCasts(Graph& graph) {
  const std::map<std::string, std::vector<int>> consumers = graph.ConsumerMap();
  std::set<int> folded;
  for (Node& node : graph.nodes) {
    if ((!IsDefaultOp(node, "MatMulInteger") && !IsBf16MatMul(graph, node)) ||
        node.outputs.empty()) {
      continue;
    }
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
    const Tensor& w = graph.tensor(w_scale);
    std::vector<double> scales;
    for (int64_t col = 0; col < columns; ++col) {
      scales.push_back(w.float_data[w.NumElements() == 1 ? 0 : col]);
    }
    const std::string per_column = graph.AddFloatConstant(
        absl::StrCat(w_scale, "_per_column"), ElemType::kFloat32, {columns}, std::move(scales));
    Node x_mul;
    x_mul.op_type = "Mul";
    x_mul.name = graph.FreshName(absl::StrCat(mul.name, "_x_scale"));
    x_mul.inputs = {out.name, x_scale};
    x_mul.outputs = {scaled.name};
    mul.inputs = {scaled.name, per_column};
    graph.SetTensor(std::move(scaled));
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

/// A DequantizeLinear's parts: the quantized tensor, its scales (one, or one per entry of the
/// axis) and its zero points (0 when absent); only constant scales and zero points qualify.
struct Dequantized {
  std::string data, zero_point;  ///< zero_point "" when absent
  std::vector<double> scales;
  int64_t zero = 0;              ///< the zero point's value (all entries equal)
};

/// `tensor` as the output of a DequantizeLinear of u8 or i8 data whose scale is constant (one
/// element, or `columns` elements along the last axis when `per_column_ok`) and whose zero points
/// are constant and all equal; nullopt otherwise.
std::optional<Dequantized> DequantizedInput(const Graph& graph,
                                            const std::map<std::string, int>& producer,
                                            const std::string& tensor, bool per_column_ok,
                                            int64_t columns) {
  auto made = producer.find(tensor);
  if (made == producer.end()) return std::nullopt;
  const Node& dq = graph.nodes[made->second];
  if (!IsDefaultOp(dq, "DequantizeLinear") || dq.inputs.size() < 2) return std::nullopt;
  const Tensor& data = graph.tensor(dq.inputs[0]);
  const Tensor& scale = graph.tensor(dq.inputs[1]);
  if ((data.type != ElemType::kUInt8 && data.type != ElemType::kInt8) || !scale.is_constant || scale.type != ElemType::kFloat32 ||
      static_cast<int64_t>(scale.float_data.size()) != scale.NumElements()) {
    return std::nullopt;
  }
  const int64_t rank = static_cast<int64_t>(data.shape.size());
  int64_t axis = dq.IntAttr("axis", 1);
  if (axis < 0) axis += rank;
  const bool per_tensor = scale.NumElements() == 1;
  const bool per_column = per_column_ok && data.has_shape && scale.shape.size() == 1 &&
                          axis == rank - 1 && scale.NumElements() == columns;
  if (!per_tensor && !per_column) return std::nullopt;
  Dequantized out;
  out.data = dq.inputs[0];
  out.scales = scale.float_data;
  if (dq.inputs.size() > 2 && !dq.inputs[2].empty()) {
    const Tensor& zero = graph.tensor(dq.inputs[2]);
    if (!zero.is_constant || zero.type != data.type || zero.NumElements() != scale.NumElements() ||
        static_cast<int64_t>(zero.int_data.size()) != zero.NumElements()) {
      return std::nullopt;
    }
    for (int64_t value : zero.int_data) {
      if (value != zero.int_data[0]) return std::nullopt;  // one zero point for the matmul
    }
    out.zero = zero.int_data[0];
    out.zero_point = dq.inputs[2];
    if (zero.NumElements() != 1) out.zero_point.clear();  // replaced by a scalar below
  }
  return out;
}

}  // namespace

absl::Status FuseQdqMatMuls(Graph& graph) {
  std::map<std::string, int> producer;
  for (size_t index = 0; index < graph.nodes.size(); ++index) {
    for (const std::string& output : graph.nodes[index].outputs) producer[output] = index;
  }
  std::map<int, std::vector<Node>> replaced;  // MatMul / Gemm node index -> its nodes
  for (size_t index = 0; index < graph.nodes.size(); ++index) {
    const Node& node = graph.nodes[index];
    const bool gemm = IsDefaultOp(node, "Gemm");
    if ((!IsDefaultOp(node, "MatMul") && !gemm) || node.inputs.size() < 2 ||
        node.outputs.empty()) {
      continue;
    }
    // Shapes may not be known yet (constant folding completes them): N from B's data when it
    // has one (the weights always do), else the product's scale stays a scalar.
    const Tensor& out = graph.tensor(node.outputs[0]);
    if (out.type != ElemType::kFloat32) continue;
    if (gemm && (node.IntAttr("transA", 0) != 0 || node.FloatAttr("alpha", 1.0f) != 1.0f ||
                 node.FloatAttr("beta", 1.0f) != 1.0f)) {
      continue;
    }
    int64_t columns = 0;
    if (auto made = producer.find(node.inputs[1]); made != producer.end()) {
      const Node& dq = graph.nodes[made->second];
      const Tensor* data = dq.inputs.empty() ? nullptr : graph.FindTensor(dq.inputs[0]);
      if (data != nullptr && data->has_shape && data->shape.size() >= 2) {
        const bool trans_b = gemm && node.IntAttr("transB", 0) != 0;
        columns = trans_b ? data->shape.front() : data->shape.back();
      }
    }
    std::optional<Dequantized> a = DequantizedInput(graph, producer, node.inputs[0], false, 0);
    std::optional<Dequantized> b =
        DequantizedInput(graph, producer, node.inputs[1], !gemm, columns);
    if (!a.has_value() || !b.has_value()) continue;
    const std::string& base = node.name;
    std::string b_data = b->data;
    if (gemm && node.IntAttr("transB", 0) != 0) {  // the weights as [K, N]
      const Tensor& weights = graph.tensor(b_data);
      if (!weights.is_constant || weights.shape.size() != 2) continue;
      Tensor transposed = weights;
      transposed.name = graph.FreshName(absl::StrCat(weights.name, "_kn"));
      transposed.shape = {weights.shape[1], weights.shape[0]};
      transposed.int_data.clear();
      for (int64_t row = 0; row < weights.shape[1]; ++row) {
        for (int64_t col = 0; col < weights.shape[0]; ++col) {
          transposed.int_data.push_back(weights.int_data[col * weights.shape[1] + row]);
        }
      }
      b_data = transposed.name;
      graph.SetTensor(std::move(transposed));
    }
    std::vector<std::string> zero_points;
    for (const Dequantized* side : {&*a, &*b}) {
      std::string zero = side->zero_point;
      if (zero.empty()) {
        zero = graph.AddIntConstant(absl::StrCat(base, "_zero_point"),
                                    graph.tensor(side->data).type, {}, {side->zero});
      }
      zero_points.push_back(zero);
    }
    // The product's scale per output column: a's scale times b's (one or per column); a vector,
    // so that the matmuls of one shape share a workload whatever their scales.
    std::vector<double> products;
    for (int64_t col = 0; col < std::max<int64_t>(columns, 1); ++col) {
      products.push_back(static_cast<float>(a->scales[0]) *
                         static_cast<float>(b->scales[b->scales.size() == 1 ? 0 : col]));
    }
    const std::string scale_name = graph.AddFloatConstant(
        absl::StrCat(base, "_scale"), ElemType::kFloat32,
        columns > 0 ? std::vector<int64_t>{columns} : std::vector<int64_t>{}, std::move(products));
    Tensor integer_tensor = out;
    integer_tensor.name = graph.FreshName(absl::StrCat(base, "_integer"));
    const std::string integer = integer_tensor.name;
    graph.SetTensor(std::move(integer_tensor));
    std::vector<Node> nodes;
    nodes.push_back(MakeNode(graph, "MatMulInteger", absl::StrCat(base, "_integer"),
                             {a->data, b_data, zero_points[0], zero_points[1]}, integer));
    const bool bias = gemm && node.inputs.size() > 2 && !node.inputs[2].empty();
    std::string scaled = node.outputs[0];
    if (bias) {
      Tensor scaled_tensor = out;
      scaled_tensor.name = graph.FreshName(absl::StrCat(base, "_scaled"));
      scaled = scaled_tensor.name;
      graph.SetTensor(std::move(scaled_tensor));
    }
    nodes.push_back(MakeNode(graph, "Mul", absl::StrCat(base, "_scale"), {integer, scale_name},
                             scaled));
    if (bias) {
      nodes.push_back(MakeNode(graph, "Add", absl::StrCat(base, "_bias"),
                               {scaled, node.inputs[2]}, node.outputs[0]));
    }
    replaced.emplace(static_cast<int>(index), std::move(nodes));
  }
  if (replaced.empty()) return absl::OkStatus();
  std::vector<Node> nodes;
  for (size_t index = 0; index < graph.nodes.size(); ++index) {
    auto it = replaced.find(static_cast<int>(index));
    if (it == replaced.end()) {
      nodes.push_back(std::move(graph.nodes[index]));
      continue;
    }
    for (Node& added : it->second) nodes.push_back(std::move(added));
  }
  graph.nodes = std::move(nodes);
  graph.RemoveDeadNodes();  // the DequantizeLinear nodes only the matmuls read
  return absl::OkStatus();
}

absl::Status FoldIntegerMatMulOutputs(Graph& graph) {
  GTCO_RETURN_IF_ERROR(RewriteConvIntegers(graph));
  FoldCasts(graph);
  SplitScales(graph);
  return absl::OkStatus();
}

}  // namespace gtco::graph
