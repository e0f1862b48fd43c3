// Static shape computation for data-movement and compute ops.
#include "common/graph/shape_inference.h"

#include <algorithm>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/graph/anchor_lowering.h"
#include "common/graph/const_eval.h"
#include "common/ir/pool.h"
#include "common/util/status.h"

namespace gtco::graph {
namespace {

using Shape = std::vector<int64_t>;

absl::Status ShapeError(const Node& node, const std::string& why) {
  return absl::InvalidArgumentError(
      absl::StrCat("node '", node.name, "' (", node.op_type, "): ", why));
}

const Tensor* Input(const Node& node, const Graph& graph, size_t index) {
  if (index >= node.inputs.size() || node.inputs[index].empty()) return nullptr;
  return graph.FindTensor(node.inputs[index]);
}

/// Integer values of constant parameter input `index`; error when absent or not constant.
absl::StatusOr<std::vector<int64_t>> ConstInts(const Node& node, const Graph& graph, size_t index) {
  const Tensor* tensor = Input(node, graph, index);
  if (tensor == nullptr || !tensor->is_constant) {
    return ShapeError(node, absl::StrCat("input ", index, " must be a constant"));
  }
  std::vector<int64_t> values;
  for (int64_t i = 0; i < tensor->NumElements(); ++i) values.push_back(tensor->ValueAsInt(i));
  return values;
}

/// Axes from input `index` (opset >= 13) or the `axes` attribute (older opsets).
absl::StatusOr<std::vector<int64_t>> Axes(const Node& node, const Graph& graph, size_t index) {
  if (Input(node, graph, index) != nullptr) return ConstInts(node, graph, index);
  return node.IntsAttr("axes");
}

absl::StatusOr<Shape> ReshapeShape(const Node& node, const Graph& graph, const Shape& data) {
  GTCO_ASSIGN_OR_RETURN(Shape target, ConstInts(node, graph, 1));
  bool allow_zero = node.IntAttr("allowzero", 0) != 0;
  int64_t inferred = -1, known = 1;
  for (size_t i = 0; i < target.size(); ++i) {
    if (target[i] == 0 && !allow_zero) {
      if (i >= data.size()) return ShapeError(node, "reshape 0 beyond the input rank");
      target[i] = data[i];
    }
    if (target[i] == -1) {
      if (inferred >= 0) return ShapeError(node, "more than one -1 in the reshape target");
      inferred = static_cast<int64_t>(i);
    } else if (target[i] < 0) {
      return ShapeError(node, absl::StrCat("negative dimension ", target[i],
                                           " in the reshape target"));
    } else if (__builtin_mul_overflow(known, target[i], &known)) {
      return ShapeError(node, absl::StrCat("reshape target ", ShapeString(target),
                                           " has more elements than fit in 64 bits"));
    }
  }
  if (inferred >= 0) target[inferred] = known == 0 ? 0 : NumElements(data) / known;
  if (NumElements(target) != NumElements(data)) {
    return ShapeError(
        node, absl::StrCat("cannot reshape ", ShapeString(data), " to ", ShapeString(target)));
  }
  return target;
}

absl::StatusOr<Shape> MatMulShape(const Node& node, Shape a, Shape b) {
  if (a.empty() || b.empty()) return ShapeError(node, "scalar operand");
  bool a_vector = a.size() == 1, b_vector = b.size() == 1;
  if (a_vector) a.insert(a.begin(), 1);
  if (b_vector) b.push_back(1);
  if (a.back() != b[b.size() - 2]) return ShapeError(node, "inner dimensions differ");
  GTCO_ASSIGN_OR_RETURN(
      Shape out, BroadcastShapes(Shape(a.begin(), a.end() - 2), Shape(b.begin(), b.end() - 2)));
  if (!a_vector) out.push_back(a[a.size() - 2]);
  if (!b_vector) out.push_back(b.back());
  return out;
}

absl::StatusOr<Shape> ReduceMeanShape(const Node& node, const Graph& graph, const Shape& x) {
  GTCO_ASSIGN_OR_RETURN(std::vector<int64_t> axes, Axes(node, graph, 1));
  int64_t rank = static_cast<int64_t>(x.size());
  std::set<int64_t> reduced;
  for (int64_t axis : axes) {
    GTCO_ASSIGN_OR_RETURN(int64_t normalized, NormalizeAxis(node, axis, rank));
    reduced.insert(normalized);
  }
  bool keep = node.IntAttr("keepdims", 1) != 0;
  Shape out;
  for (int64_t d = 0; d < rank; ++d) {
    bool is_reduced = axes.empty() || reduced.count(d);
    if (!is_reduced)
      out.push_back(x[d]);
    else if (keep)
      out.push_back(1);
  }
  return out;
}

absl::StatusOr<Shape> ElementwiseShape(const Node& node, const Graph& graph) {
  Shape out;
  for (const std::string& input : node.inputs) {
    if (input.empty()) continue;
    auto merged = BroadcastShapes(out, graph.tensor(input).shape);
    if (!merged.ok()) return ShapeError(node, std::string(merged.status().message()));
    out = *merged;
  }
  return out;
}

}  // namespace

absl::StatusOr<int64_t> NormalizeAxis(const Node& node, int64_t axis, int64_t rank) {
  int64_t normalized = axis < 0 ? axis + rank : axis;
  if (normalized < 0 || normalized >= rank) {
    return ShapeError(node, absl::StrCat("axis ", axis, " out of range for rank ", rank));
  }
  return normalized;
}

absl::StatusOr<SliceWindow> ComputeSliceWindow(const Node& node, const Graph& graph) {
  const Shape& data = graph.tensor(node.inputs.at(0)).shape;
  int64_t rank = static_cast<int64_t>(data.size());
  bool from_inputs = node.inputs.size() >= 3;  // opset >= 10; attributes before
  std::vector<int64_t> starts = node.IntsAttr("starts"), ends = node.IntsAttr("ends");
  if (from_inputs) {
    GTCO_ASSIGN_OR_RETURN(starts, ConstInts(node, graph, 1));
    GTCO_ASSIGN_OR_RETURN(ends, ConstInts(node, graph, 2));
  }
  std::vector<int64_t> axes(starts.size()), steps(starts.size(), 1);
  for (size_t i = 0; i < axes.size(); ++i) axes[i] = static_cast<int64_t>(i);
  if (Input(node, graph, 3) != nullptr) {
    GTCO_ASSIGN_OR_RETURN(axes, ConstInts(node, graph, 3));
  }
  if (!from_inputs && node.HasAttr("axes")) axes = node.IntsAttr("axes");
  if (Input(node, graph, 4) != nullptr) {
    GTCO_ASSIGN_OR_RETURN(steps, ConstInts(node, graph, 4));
  }
  if (ends.size() != starts.size() || axes.size() != starts.size() ||
      steps.size() != starts.size()) {
    return ShapeError(node, "starts/ends/axes/steps differ in length");
  }
  SliceWindow window{Shape(rank, 0), Shape(rank, 1), data};
  for (size_t i = 0; i < starts.size(); ++i) {
    GTCO_ASSIGN_OR_RETURN(int64_t axis, NormalizeAxis(node, axes[i], rank));
    int64_t dim = data[axis], step = steps[i];
    if (step == 0) return ShapeError(node, "slice step 0");
    auto clamped = [dim](int64_t index, int64_t lo, int64_t hi) {
      return std::clamp(index < 0 ? index + dim : index, lo, hi);
    };
    int64_t begin = step > 0 ? clamped(starts[i], 0, dim) : clamped(starts[i], 0, dim - 1);
    int64_t end = step > 0 ? clamped(ends[i], 0, dim) : clamped(ends[i], -1, dim - 1);
    int64_t span = step > 0 ? end - begin : begin - end;
    window.first[axis] = begin;
    window.step[axis] = step;
    window.count[axis] = std::max<int64_t>(0, (span + std::abs(step) - 1) / std::abs(step));
  }
  return window;
}

absl::StatusOr<std::vector<int64_t>> ReshapeLikeShape(const Node& node, const Graph& graph) {
  const Shape& data = graph.tensor(node.inputs.at(0)).shape;
  int64_t rank = static_cast<int64_t>(data.size());
  if (node.op_type == "Identity") return data;
  if (node.op_type == "Reshape") return ReshapeShape(node, graph, data);
  if (node.op_type == "Flatten") {
    int64_t axis = node.IntAttr("axis", 1);
    if (axis < 0) axis += rank;
    if (axis < 0 || axis > rank) return ShapeError(node, "flatten axis out of range");
    int64_t outer = NumElements(Shape(data.begin(), data.begin() + axis));
    return Shape{outer, NumElements(data) / std::max<int64_t>(outer, 1)};
  }
  GTCO_ASSIGN_OR_RETURN(std::vector<int64_t> axes, Axes(node, graph, 1));
  Shape out;
  if (node.op_type == "Unsqueeze") {
    int64_t out_rank = rank + static_cast<int64_t>(axes.size());
    std::set<int64_t> inserted;
    for (int64_t axis : axes) {
      GTCO_ASSIGN_OR_RETURN(int64_t normalized, NormalizeAxis(node, axis, out_rank));
      inserted.insert(normalized);
    }
    for (int64_t d = 0, source = 0; d < out_rank; ++d) {
      out.push_back(inserted.count(d) ? 1 : data[source++]);
    }
    return out;
  }
  std::set<int64_t> removed;  // Squeeze
  for (int64_t axis : axes) {
    GTCO_ASSIGN_OR_RETURN(int64_t normalized, NormalizeAxis(node, axis, rank));
    removed.insert(normalized);
  }
  for (int64_t d = 0; d < rank; ++d) {
    bool drop = axes.empty() ? data[d] == 1 : removed.count(d) > 0;
    if (!drop) out.push_back(data[d]);
  }
  return out;
}

absl::StatusOr<std::vector<int64_t>> GatherShape(const Node& node, const std::vector<int64_t>& data,
                                                 const std::vector<int64_t>& indices) {
  GTCO_ASSIGN_OR_RETURN(int64_t axis, NormalizeAxis(node, node.IntAttr("axis", 0),
                                                    static_cast<int64_t>(data.size())));
  Shape out(data.begin(), data.begin() + axis);
  out.insert(out.end(), indices.begin(), indices.end());
  out.insert(out.end(), data.begin() + axis + 1, data.end());
  return out;
}

absl::StatusOr<std::vector<int64_t>> ConcatShape(const Node& node, const Graph& graph) {
  Shape out = graph.tensor(node.inputs.at(0)).shape;
  GTCO_ASSIGN_OR_RETURN(
      int64_t axis, NormalizeAxis(node, node.IntAttr("axis", 0), static_cast<int64_t>(out.size())));
  out[axis] = 0;
  for (const std::string& input : node.inputs) {
    const Shape& part = graph.tensor(input).shape;
    if (part.size() != out.size()) return ShapeError(node, "inputs differ in rank");
    out[axis] += part[axis];
  }
  return out;
}

absl::StatusOr<std::vector<int64_t>> TransposePerm(const Node& node, int64_t rank) {
  std::vector<int64_t> perm = node.IntsAttr("perm");
  if (perm.empty()) {
    for (int64_t axis = rank; axis-- > 0;) perm.push_back(axis);
  }
  std::vector<bool> seen(static_cast<size_t>(rank), false);
  bool valid = static_cast<int64_t>(perm.size()) == rank;
  for (size_t d = 0; valid && d < perm.size(); ++d) {
    valid = perm[d] >= 0 && perm[d] < rank && !seen[perm[d]];
    if (valid) seen[perm[d]] = true;
  }
  if (!valid) {
    return ShapeError(node, absl::StrCat("perm [", absl::StrJoin(perm, ","),
                                         "] is not a permutation of the ", rank, " input axes"));
  }
  return perm;
}

/// ONNX Conv's output shape [N, K, spatial...] (explicit pads, VALID or SAME auto_pad).
absl::StatusOr<Shape> ConvShape(const Node& node, const Shape& x, const Shape& w) {
  if (x.size() < 3 || w.size() != x.size()) {
    return ShapeError(node, "X and W need the same rank, at least 3");
  }
  const size_t spatial = x.size() - 2;
  std::vector<int64_t> strides = node.IntsAttr("strides"), dilations = node.IntsAttr("dilations");
  std::vector<int64_t> pads = node.IntsAttr("pads");
  strides.resize(spatial, 1);
  dilations.resize(spatial, 1);
  pads.resize(2 * spatial, 0);
  const std::string auto_pad =
      node.HasAttr("auto_pad") ? node.attributes.at("auto_pad").s : std::string("NOTSET");
  Shape out = {x[0], w[0]};
  for (size_t dim = 0; dim < spatial; ++dim) {
    if (strides[dim] <= 0) return ShapeError(node, "strides must be positive");
    const int64_t size = x[dim + 2];
    if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      out.push_back((size + strides[dim] - 1) / strides[dim]);
      continue;
    }
    const int64_t pad = auto_pad == "VALID" ? 0 : pads[dim] + pads[dim + spatial];
    const int64_t span = size + pad - dilations[dim] * (w[dim + 2] - 1) - 1;
    if (span < 0) return ShapeError(node, "the kernel does not fit the padded input");
    out.push_back(span / strides[dim] + 1);
  }
  return out;
}

absl::StatusOr<std::vector<int64_t>> InferOutputShape(const Node& node, const Graph& graph) {
  for (const std::string& input : node.inputs) {
    if (!input.empty() && !graph.tensor(input).has_shape) {
      return ShapeError(node, absl::StrCat("input '", input, "' has no static shape"));
    }
  }
  const std::string& op = node.op_type;
  auto shape_of = [&](size_t i) -> const Shape& { return graph.tensor(node.inputs.at(i)).shape; };
  if (op == "Identity" || op == "Reshape" || op == "Flatten" || op == "Squeeze" ||
      op == "Unsqueeze") {
    return ReshapeLikeShape(node, graph);
  }
  if (op == "Cast" || op == "Softmax" || op == "LayerNormalization" ||
      op == "BatchNormalization" || op == "Clip") {
    return shape_of(0);
  }
  if (op == "GlobalAveragePool") {
    Shape out = shape_of(0);
    if (out.size() < 3) return ShapeError(node, "X needs a batch, a channel and a spatial dim");
    std::fill(out.begin() + 2, out.end(), 1);
    return out;
  }
  if (op == "Conv") return ConvShape(node, shape_of(0), shape_of(1));
  if (op == "Equal" || op == "Where") {
    Shape out = shape_of(0);
    for (size_t i = 1; i < node.inputs.size(); ++i) {
      absl::StatusOr<Shape> joined = BroadcastShapes(out, shape_of(i));
      if (!joined.ok()) return ShapeError(node, std::string(joined.status().message()));
      out = *joined;
    }
    return out;
  }
  if (op == "Expand") {
    const Tensor& target = graph.tensor(node.inputs.at(1));
    if (!target.is_constant) return ShapeError(node, "the shape input is not constant");
    absl::StatusOr<Shape> joined = BroadcastShapes(shape_of(0), target.int_data);
    if (!joined.ok()) return ShapeError(node, std::string(joined.status().message()));
    return *joined;
  }
  if (op == "MaxPool" || op == "AveragePool") {
    absl::StatusOr<ir::PoolParams> pool = PoolParamsOf(node, shape_of(0));
    if (!pool.ok()) return ShapeError(node, std::string(pool.status().message()));
    return ir::PoolOutShape(*pool);
  }
  if (op == "Gather") return GatherShape(node, shape_of(0), shape_of(1));
  if (op == "DequantizeLinear" || op == "DynamicQuantizeLinear" || op == "QuantizeLinear") {
    return shape_of(0);
  }
  if (op == "Concat") return ConcatShape(node, graph);
  if (op == "Slice") {
    GTCO_ASSIGN_OR_RETURN(SliceWindow window, ComputeSliceWindow(node, graph));
    return window.count;
  }
  if (op == "Transpose") {
    GTCO_ASSIGN_OR_RETURN(std::vector<int64_t> perm,
                          TransposePerm(node, static_cast<int64_t>(shape_of(0).size())));
    Shape out;
    for (int64_t axis : perm) out.push_back(shape_of(0)[axis]);
    return out;
  }
  if (op == "MatMul" || op == "MatMulInteger") return MatMulShape(node, shape_of(0), shape_of(1));
  if (op == "Gemm") {
    const Shape &a = shape_of(0), &b = shape_of(1);
    if (a.size() != 2 || b.size() != 2) return ShapeError(node, "Gemm operands must be 2-D");
    return Shape{node.IntAttr("transA", 0) ? a[1] : a[0], node.IntAttr("transB", 0) ? b[0] : b[1]};
  }
  if (op == "ReduceMean") return ReduceMeanShape(node, graph, shape_of(0));
  if (op == "Add" || op == "Sub" || op == "Mul" || op == "Div" || op == "Pow" || op == "Relu" ||
      op == "Sigmoid" || op == "Tanh" || op == "Erf" || op == "Sqrt" || op == "Max" ||
      op == "Min") {
    return ElementwiseShape(node, graph);
  }
  return absl::UnimplementedError(
      absl::StrCat("no shape function for op '", op, "' at node '", node.name, "'"));
}

}  // namespace gtco::graph
