// Op decompositions: Clip -> Min / Max; Split -> one Slice per output; Gemm weights stored in
// the layout the kernels read; strided 1x1 convolutions -> a strided Slice and a 1x1 one.
#include "common/graph/decompose.h"

#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/graph/shape_inference.h"

namespace gtco::graph {
namespace {

/// The bound of Clip `node` at input `index` (or attribute `attr` before opset 11).
absl::StatusOr<std::optional<double>> ClipBound(const Node& node, const Graph& graph, size_t index,
                                                const char* attr) {
  if (node.HasAttr(attr)) return std::optional<double>(node.FloatAttr(attr, 0.0f));
  if (node.inputs.size() <= index || node.inputs[index].empty()) return std::optional<double>();
  const Tensor& bound = graph.tensor(node.inputs[index]);
  if (!bound.is_constant || bound.NumElements() != 1) {
    return absl::UnimplementedError(absl::StrCat(
        "ONNX op 'Clip' at node '", node.name, "': bound '", bound.name,
        "' must be a constant scalar (it is ", bound.is_constant ? "not a scalar" : "computed at "
        "run time", ")"));
  }
  return std::optional<double>(bound.ValueAsDouble(0));
}

/// Split(x) -> one Slice(x, start, end, axis) per output. The sizes along the axis are those of
/// the outputs (the importer's shape inference worked them out from the `split` input or
/// attribute or `num_outputs`), so every opset's form is covered.
absl::Status DecomposeSplit(const Node& node, Graph& graph, std::vector<Node>* rewritten) {
  auto refuse = [&node](const std::string& why) {
    return absl::UnimplementedError(
        absl::StrCat("ONNX op 'Split' at node '", node.name, "': ", why));
  };
  const Tensor& x = graph.tensor(node.inputs.at(0));
  if (!x.has_shape) return refuse("the input's shape is not known");
  const int64_t rank = static_cast<int64_t>(x.shape.size());
  absl::StatusOr<int64_t> axis = NormalizeAxis(node, node.IntAttr("axis", 0), rank);
  if (!axis.ok()) return axis.status();
  int64_t start = 0;
  for (size_t index = 0; index < node.outputs.size(); ++index) {
    const std::string& out = node.outputs[index];
    if (out.empty()) continue;
    const Tensor& piece = graph.tensor(out);
    if (!piece.has_shape || static_cast<int64_t>(piece.shape.size()) != rank) {
      return refuse(absl::StrCat("the shape of output '", out, "' is not known"));
    }
    const int64_t size = piece.shape[*axis];
    const std::string base = absl::StrCat(node.name, "_part", index);
    const std::string starts =
        graph.AddIntConstant(base + "_start", ElemType::kInt64, {1}, {start});
    const std::string ends =
        graph.AddIntConstant(base + "_end", ElemType::kInt64, {1}, {start + size});
    const std::string axes = graph.AddIntConstant(base + "_axis", ElemType::kInt64, {1}, {*axis});
    Node slice;
    slice.op_type = "Slice";
    slice.name = graph.FreshName(base);
    slice.inputs = {node.inputs[0], starts, ends, axes};
    slice.outputs = {out};
    rewritten->push_back(slice);
    start += size;
  }
  if (start != x.shape[*axis]) {
    return absl::InvalidArgumentError(absl::StrCat(
        "ONNX op 'Split' at node '", node.name, "': the outputs cover ", start, " of the ",
        x.shape[*axis], " elements along axis ", *axis));
  }
  return absl::OkStatus();
}

/// Gemm(A, B, transB=1) with a constant B: B is stored transposed ([K, N], the layout the
/// matmul kernels stream) and transB cleared, so no kernel transposes or packs the weight at
/// run time.
void PrepackGemmWeight(Node& node, Graph& graph) {
  if (node.IntAttr("transB", 0) == 0 || node.inputs.size() < 2) return;
  const Tensor& b = graph.tensor(node.inputs[1]);
  if (!b.is_constant || b.shape.size() != 2 || b.type != ElemType::kFloat32 ||
      static_cast<int64_t>(b.float_data.size()) != b.NumElements()) {
    return;
  }
  for (const std::string& output : graph.outputs) {
    if (output == b.name) return;
  }
  const int64_t n = b.shape[0], k = b.shape[1];
  Tensor transposed;
  transposed.name = graph.FreshName(b.name + "_kn");
  transposed.type = b.type;
  transposed.has_shape = true;
  transposed.shape = {k, n};
  transposed.is_constant = true;
  transposed.float_data.resize(b.float_data.size());
  for (int64_t row = 0; row < n; ++row) {
    for (int64_t col = 0; col < k; ++col) {
      transposed.float_data[col * n + row] = b.float_data[row * k + col];
    }
  }
  node.inputs[1] = transposed.name;
  graph.SetTensor(std::move(transposed));
  node.attributes.erase("transB");
}

/// Conv(x, W) with a 1x1 kernel, no padding and strides > 1 (ResNet's downsample branches) ->
/// Conv(Slice(x, steps = strides), W) with unit strides. The 1x1 convolution is then a plain
/// GEMM over contiguous pixels, and the subsampling one strided copy of the input; inside the
/// convolution kernel it was a gather per element of every packed panel (ResNet-50's three
/// downsample convolutions ran at ~140 GFLOP/s against ~210 for the unit-stride 1x1 ones).
/// Anything else about the node stays as it is. Returns false when the node is not such a
/// convolution.
bool SubsampleStridedPointwiseConv(const Node& node, Graph& graph, std::vector<Node>* rewritten) {
  if (node.inputs.size() < 2) return false;
  const Tensor* x = graph.FindTensor(node.inputs[0]);
  const Tensor* w = graph.FindTensor(node.inputs[1]);
  if (x == nullptr || w == nullptr || !x->has_shape || x->shape.size() != 4 || !w->has_shape ||
      w->shape.size() != 4 || w->shape[2] != 1 || w->shape[3] != 1) {
    return false;
  }
  const std::vector<int64_t> strides = node.IntsAttr("strides");
  if (strides.size() != 2 || (strides[0] <= 1 && strides[1] <= 1) || strides[0] < 1 ||
      strides[1] < 1) {
    return false;
  }
  for (int64_t pad : node.IntsAttr("pads")) {
    if (pad != 0) return false;
  }
  if (node.HasAttr("auto_pad")) {
    const std::string& auto_pad = node.attributes.at("auto_pad").s;
    if (auto_pad != "NOTSET" && auto_pad != "VALID") return false;
  }
  const int64_t height = x->shape[2], width = x->shape[3];
  const std::string base = node.name + "_subsample";
  const std::string starts = graph.AddIntConstant(base + "_starts", ElemType::kInt64, {2}, {0, 0});
  const std::string ends =
      graph.AddIntConstant(base + "_ends", ElemType::kInt64, {2}, {height, width});
  const std::string axes = graph.AddIntConstant(base + "_axes", ElemType::kInt64, {2}, {2, 3});
  const std::string steps = graph.AddIntConstant(base + "_steps", ElemType::kInt64, {2}, strides);
  const std::string subsampled = graph.AddActivation(
      base, x->type,
      {x->shape[0], x->shape[1], (height - 1) / strides[0] + 1, (width - 1) / strides[1] + 1});
  Node slice;
  slice.op_type = "Slice";
  slice.name = subsampled;
  slice.inputs = {node.inputs[0], starts, ends, axes, steps};
  slice.outputs = {subsampled};
  Node conv = node;
  conv.inputs[0] = subsampled;
  conv.attributes.erase("strides");
  rewritten->push_back(std::move(slice));
  rewritten->push_back(std::move(conv));
  return true;
}

}  // namespace

absl::Status DecomposeOps(Graph& graph) {
  std::vector<Node> rewritten;
  rewritten.reserve(graph.nodes.size());
  for (const Node& node : graph.nodes) {
    if (node.op_type == "Gemm" && node.domain.empty()) {
      Node gemm = node;
      PrepackGemmWeight(gemm, graph);
      rewritten.push_back(gemm);
      continue;
    }
    if (node.op_type == "Conv" && node.domain.empty() &&
        SubsampleStridedPointwiseConv(node, graph, &rewritten)) {
      continue;
    }
    if (node.op_type == "Split" && node.domain.empty()) {
      absl::Status split = DecomposeSplit(node, graph, &rewritten);
      if (!split.ok()) return split;
      continue;
    }
    if (node.op_type != "Clip" || !node.domain.empty()) {
      rewritten.push_back(node);
      continue;
    }
    absl::StatusOr<std::optional<double>> lo = ClipBound(node, graph, 1, "min");
    if (!lo.ok()) return lo.status();
    absl::StatusOr<std::optional<double>> hi = ClipBound(node, graph, 2, "max");
    if (!hi.ok()) return hi.status();
    const std::string& x = node.inputs.at(0);
    const Tensor& x_tensor = graph.tensor(x);
    std::string current = x;
    // ONNX (and ONNX Runtime, numpy.clip): min(max(x, lo), hi), so hi wins when lo > hi.
    std::vector<std::pair<const char*, double>> steps;
    if (lo->has_value()) steps.push_back({"Max", **lo});
    if (hi->has_value()) steps.push_back({"Min", **hi});
    if (steps.empty()) {
      Node identity = node;
      identity.op_type = "Identity";
      identity.inputs = {x};
      identity.attributes.clear();
      rewritten.push_back(identity);
      continue;
    }
    for (size_t step = 0; step < steps.size(); ++step) {
      const bool last = step + 1 == steps.size();
      const std::string bound = graph.AddFloatConstant(
          absl::StrCat(node.name, "_", steps[step].first == std::string("Min") ? "max" : "min"),
          x_tensor.type, {}, {steps[step].second});
      std::string out = node.outputs.at(0);
      if (!last) {
        out = graph.FreshName(absl::StrCat(node.name, "_clipped_below"));
        Tensor intermediate = x_tensor;
        intermediate.name = out;
        intermediate.is_constant = false;
        intermediate.float_data.clear();
        intermediate.int_data.clear();
        graph.SetTensor(intermediate);
      }
      Node op;
      op.op_type = steps[step].first;
      op.name = last ? node.name : graph.FreshName(absl::StrCat(node.name, "_max"));
      op.inputs = {current, bound};
      op.outputs = {out};
      rewritten.push_back(op);
      current = out;
    }
  }
  graph.nodes = std::move(rewritten);
  return absl::OkStatus();
}

}  // namespace gtco::graph
