// Constant evaluation of shape-arithmetic and element-wise ONNX ops on constant tensors.
#include "common/graph/const_eval.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <set>

#include "absl/strings/str_cat.h"
#include "common/graph/shape_inference.h"
#include "common/util/status.h"

namespace gtco::graph {
namespace {

using Shape = std::vector<int64_t>;

const std::set<std::string>& UnaryOps() {
  static const auto* ops =
      new std::set<std::string>{"Neg", "Sqrt", "Relu",  "Sigmoid", "Tanh",       "Erf",
                                "Exp", "Abs",  "Floor", "Ceil",    "Reciprocal", "Not"};
  return *ops;
}

const std::set<std::string>& BinaryOps() {
  static const auto* ops = new std::set<std::string>{
      "Add",  "Sub",     "Mul", "Div", "Mod", "Pow", "Max",
      "Min",  "Equal",   "Less", "Greater", "And", "Or"};
  return *ops;
}

const std::set<std::string>& StructuralOps() {
  static const auto* ops = new std::set<std::string>{
      "Constant",  "Identity", "Shape",           "Size",    "Cast",    "Gather",
      "Slice",     "Concat",   "Unsqueeze",       "Squeeze", "Reshape", "Flatten",
      "Transpose", "Expand",   "ConstantOfShape", "Range",   "Where",   "DequantizeLinear"};
  return *ops;
}

/// Folding refuses to materialize constants larger than this (hostile or absurd models).
constexpr int64_t kMaxFoldedElements = int64_t{1} << 26;

absl::Status NodeError(const Node& node, const std::string& why) {
  return absl::InvalidArgumentError(
      absl::StrCat("node '", node.name, "' (", node.op_type, "): ", why));
}

absl::Status NodeUnimplemented(const Node& node, const std::string& why) {
  return absl::UnimplementedError(
      absl::StrCat("node '", node.name, "' (", node.op_type, "): ", why));
}

absl::Status TooLarge(const Node& node) {
  return absl::UnimplementedError(absl::StrCat("node '", node.name, "' (", node.op_type,
                                               "): constant result over ", kMaxFoldedElements,
                                               " elements"));
}

/// A folded result's shape must have non-negative dims and at most kMaxFoldedElements elements
/// (counted without overflow: shapes come from model data).
absl::Status CheckFoldedShape(const Node& node, const Shape& shape) {
  int64_t count = 1;
  for (int64_t dim : shape) {
    if (dim < 0) return NodeError(node, absl::StrCat("negative dimension in ", ShapeString(shape)));
    if (dim > kMaxFoldedElements) return TooLarge(node);
    count = std::min(count * dim, kMaxFoldedElements + 1);
  }
  return count > kMaxFoldedElements ? TooLarge(node) : absl::OkStatus();
}

Tensor MakeConstant(ElemType type, Shape shape) {
  Tensor tensor;
  tensor.type = type;
  tensor.shape = std::move(shape);
  tensor.has_shape = true;
  tensor.is_constant = true;
  return tensor;
}

void AppendValue(Tensor& out, double float_value, int64_t int_value) {
  if (IsFloating(out.type)) {
    out.float_data.push_back(out.type == ElemType::kFloat32 ? static_cast<float>(float_value)
                                                            : float_value);
  } else {
    out.int_data.push_back(out.type == ElemType::kBool ? (int_value != 0) : int_value);
  }
}

// Integer arithmetic of folded constants wraps around in two's complement, as the integer ops
// of ONNX runtimes do in practice, instead of overflowing (undefined behaviour in C++).
int64_t WrappingAdd(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
}
int64_t WrappingSub(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) - static_cast<uint64_t>(b));
}
int64_t WrappingMul(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
}

void AppendFrom(Tensor& out, const Tensor& src, int64_t index) {
  if (IsFloating(out.type)) {
    out.float_data.push_back(src.ValueAsDouble(index));
  } else {
    out.int_data.push_back(src.ValueAsInt(index));
  }
}

/// `src` elements at flat `indices`, laid out as `shape`.
Tensor Take(const Tensor& src, const std::vector<int64_t>& indices, Shape shape) {
  Tensor out = MakeConstant(src.type, std::move(shape));
  for (int64_t index : indices) AppendFrom(out, src, index);
  return out;
}

std::vector<int64_t> Strides(const Shape& shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (size_t i = shape.size(); i-- > 1;) strides[i - 1] = strides[i] * shape[i];
  return strides;
}

/// For each element of `out_shape` (row-major), the flat index of the `in_shape` element
/// that numpy broadcasting reads.
std::vector<int64_t> BroadcastIndices(const Shape& in_shape, const Shape& out_shape) {
  size_t rank = out_shape.size();
  size_t offset = rank - in_shape.size();
  std::vector<int64_t> in_strides = Strides(in_shape);
  std::vector<int64_t> strides(rank, 0);
  for (size_t i = 0; i < in_shape.size(); ++i) {
    strides[offset + i] = in_shape[i] == 1 ? 0 : in_strides[i];
  }
  std::vector<int64_t> indices;
  int64_t count = NumElements(out_shape);
  indices.reserve(count);
  std::vector<int64_t> counter(rank, 0);
  int64_t source = 0;
  for (int64_t n = 0; n < count; ++n) {
    indices.push_back(source);
    for (size_t d = rank; d-- > 0;) {
      ++counter[d];
      source += strides[d];
      if (counter[d] < out_shape[d]) break;
      source -= strides[d] * counter[d];
      counter[d] = 0;
    }
  }
  return indices;
}

std::vector<int64_t> IntValues(const Tensor& tensor) {
  std::vector<int64_t> values;
  for (int64_t i = 0; i < tensor.NumElements(); ++i) values.push_back(tensor.ValueAsInt(i));
  return values;
}

/// Maps an ONNX TensorProto::DataType number (Cast's `to`) to an element type.
ElemType ElemTypeFromOnnxNumber(int64_t number) {
  switch (number) {
    case 1:
      return ElemType::kFloat32;
    case 2:
      return ElemType::kUInt8;
    case 3:
      return ElemType::kInt8;
    case 6:
      return ElemType::kInt32;
    case 7:
      return ElemType::kInt64;
    case 9:
      return ElemType::kBool;
    case 10:
      return ElemType::kFloat16;
    case 11:
      return ElemType::kFloat64;
    case 16:
      return ElemType::kBFloat16;
    default:
      return ElemType::kOther;
  }
}

// ---- per-op evaluators; each returns the node's single output ------------------------------

absl::StatusOr<Tensor> EvalConstant(const Node& node) {
  auto it = node.attributes.find("value");
  if (it != node.attributes.end() && it->second.kind == Attribute::Kind::kTensor) {
    return it->second.tensor.at(0);
  }
  if ((it = node.attributes.find("value_float")) != node.attributes.end()) {
    Tensor out = MakeConstant(ElemType::kFloat32, {});
    out.float_data.push_back(it->second.f);
    return out;
  }
  if ((it = node.attributes.find("value_floats")) != node.attributes.end()) {
    Tensor out = MakeConstant(ElemType::kFloat32, {static_cast<int64_t>(it->second.floats.size())});
    out.float_data.assign(it->second.floats.begin(), it->second.floats.end());
    return out;
  }
  if ((it = node.attributes.find("value_int")) != node.attributes.end()) {
    Tensor out = MakeConstant(ElemType::kInt64, {});
    out.int_data.push_back(it->second.i);
    return out;
  }
  if ((it = node.attributes.find("value_ints")) != node.attributes.end()) {
    Tensor out = MakeConstant(ElemType::kInt64, {static_cast<int64_t>(it->second.ints.size())});
    out.int_data = it->second.ints;
    return out;
  }
  return NodeUnimplemented(node, "only value/value_float(s)/value_int(s) constants are supported");
}

absl::StatusOr<Tensor> EvalShape(const Node& node, const Tensor& input) {
  if (!input.has_shape) return NodeError(node, "input shape is unknown");
  int64_t rank = static_cast<int64_t>(input.shape.size());
  auto clamp = [rank](int64_t axis) {
    return std::clamp(axis < 0 ? axis + rank : axis, int64_t{0}, rank);
  };
  int64_t start = clamp(node.IntAttr("start", 0));
  int64_t end = clamp(node.IntAttr("end", rank));
  Shape dims;
  for (int64_t i = start; i < end; ++i) dims.push_back(input.shape[i]);
  Tensor out = MakeConstant(ElemType::kInt64, {static_cast<int64_t>(dims.size())});
  out.int_data = dims;
  return out;
}

absl::StatusOr<Tensor> EvalCast(const Node& node, const Tensor& input) {
  ElemType to = ElemTypeFromOnnxNumber(node.IntAttr("to", 0));
  if (to == ElemType::kOther) return NodeUnimplemented(node, "unsupported Cast target type");
  Tensor out = MakeConstant(to, input.shape);
  for (int64_t i = 0; i < input.NumElements(); ++i) {
    double value = input.ValueAsDouble(i);
    AppendValue(out, value, IsFloating(input.type) ? TruncateToInt64(value) : input.int_data[i]);
  }
  return out;
}

/// DequantizeLinear: (x - zero_point) * scale in f32, per tensor or per entry of `axis`.
absl::StatusOr<Tensor> EvalDequantize(const Node& node, const Graph& graph) {
  const Tensor& x = graph.tensor(node.inputs.at(0));
  const Tensor& scale = graph.tensor(node.inputs.at(1));
  const Tensor* zero_point = node.inputs.size() > 2 && !node.inputs[2].empty()
                                 ? &graph.tensor(node.inputs[2])
                                 : nullptr;
  if (scale.shape.size() > 1 || node.IntAttr("block_size", 0) != 0) {
    return NodeUnimplemented(node, "blocked quantization is not supported");
  }
  const int64_t rank = static_cast<int64_t>(x.shape.size());
  int64_t inner = 1, channels = 1;
  if (scale.NumElements() != 1) {
    GTCO_ASSIGN_OR_RETURN(int64_t axis, NormalizeAxis(node, node.IntAttr("axis", 1), rank));
    channels = x.shape[axis];
    inner = NumElements(Shape(x.shape.begin() + axis + 1, x.shape.end()));
  }
  if (scale.NumElements() != channels ||
      (zero_point != nullptr && zero_point->NumElements() != channels)) {
    return NodeUnimplemented(node, "scale and zero point must be per tensor or per axis entry");
  }
  Tensor out = MakeConstant(ElemType::kFloat32, x.shape);
  for (int64_t i = 0; i < x.NumElements(); ++i) {
    const int64_t c = channels == 1 ? 0 : (i / inner) % channels;
    const int64_t zero = zero_point == nullptr ? 0 : zero_point->ValueAsInt(c);
    const float value =
        static_cast<float>(x.ValueAsInt(i) - zero) * static_cast<float>(scale.ValueAsDouble(c));
    out.float_data.push_back(value);
  }
  return out;
}

absl::StatusOr<Tensor> EvalGather(const Node& node, const Tensor& data, const Tensor& indices) {
  int64_t rank = static_cast<int64_t>(data.shape.size());
  GTCO_ASSIGN_OR_RETURN(int64_t axis, NormalizeAxis(node, node.IntAttr("axis", 0), rank));
  int64_t outer = NumElements(Shape(data.shape.begin(), data.shape.begin() + axis));
  int64_t inner = NumElements(Shape(data.shape.begin() + axis + 1, data.shape.end()));
  int64_t axis_size = data.shape[axis];
  GTCO_ASSIGN_OR_RETURN(Shape out_shape, GatherShape(node, data.shape, indices.shape));
  std::vector<int64_t> picks = IntValues(indices);
  std::vector<int64_t> flat;
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t pick : picks) {
      int64_t index = pick < 0 ? pick + axis_size : pick;
      if (index < 0 || index >= axis_size) return NodeError(node, "gather index out of range");
      for (int64_t i = 0; i < inner; ++i) flat.push_back((o * axis_size + index) * inner + i);
    }
  }
  return Take(data, flat, out_shape);
}

absl::StatusOr<Tensor> EvalSlice(const Node& node, const Graph& graph) {
  const Tensor& data = graph.tensor(node.inputs[0]);
  GTCO_ASSIGN_OR_RETURN(SliceWindow window, ComputeSliceWindow(node, graph));
  int64_t rank = static_cast<int64_t>(data.shape.size());
  std::vector<int64_t> strides = Strides(data.shape);
  std::vector<int64_t> flat;
  std::vector<int64_t> counter(rank, 0);
  for (int64_t n = 0; n < NumElements(window.count); ++n) {
    int64_t source = 0;
    for (int64_t d = 0; d < rank; ++d) {
      source += (window.first[d] + counter[d] * window.step[d]) * strides[d];
    }
    flat.push_back(source);
    for (int64_t d = rank; d-- > 0;) {
      if (++counter[d] < window.count[d]) break;
      counter[d] = 0;
    }
  }
  return Take(data, flat, window.count);
}

absl::StatusOr<Tensor> EvalConcat(const Node& node, const Graph& graph) {
  const Tensor& first = graph.tensor(node.inputs[0]);
  GTCO_ASSIGN_OR_RETURN(Shape out_shape, ConcatShape(node, graph));
  GTCO_ASSIGN_OR_RETURN(int64_t axis, NormalizeAxis(node, node.IntAttr("axis", 0),
                                                    static_cast<int64_t>(out_shape.size())));
  Tensor out = MakeConstant(first.type, out_shape);
  int64_t outer = NumElements(Shape(first.shape.begin(), first.shape.begin() + axis));
  for (int64_t o = 0; o < outer; ++o) {
    for (const std::string& name : node.inputs) {
      const Tensor& part = graph.tensor(name);
      int64_t block = NumElements(Shape(part.shape.begin() + axis, part.shape.end()));
      for (int64_t i = 0; i < block; ++i) AppendFrom(out, part, o * block + i);
    }
  }
  return out;
}

absl::StatusOr<Tensor> EvalTranspose(const Node& node, const Tensor& data) {
  int64_t rank = static_cast<int64_t>(data.shape.size());
  GTCO_ASSIGN_OR_RETURN(std::vector<int64_t> perm, TransposePerm(node, rank));
  Shape out_shape;
  for (int64_t axis : perm) out_shape.push_back(data.shape[axis]);
  std::vector<int64_t> in_strides = Strides(data.shape);
  std::vector<int64_t> flat;
  std::vector<int64_t> counter(rank, 0);
  for (int64_t n = 0; n < data.NumElements(); ++n) {
    int64_t source = 0;
    for (int64_t d = 0; d < rank; ++d) source += counter[d] * in_strides[perm[d]];
    flat.push_back(source);
    for (int64_t d = rank; d-- > 0;) {
      if (++counter[d] < out_shape[d]) break;
      counter[d] = 0;
    }
  }
  return Take(data, flat, out_shape);
}

absl::StatusOr<Tensor> EvalRange(const Node& node, const Tensor& start, const Tensor& limit,
                                 const Tensor& delta) {
  Tensor out = MakeConstant(start.type, {});
  double first = start.ValueAsDouble(0), step = delta.ValueAsDouble(0);
  if (step == 0) return NodeError(node, "range delta 0");
  double span = std::ceil((limit.ValueAsDouble(0) - first) / step);
  if (span > static_cast<double>(kMaxFoldedElements)) return TooLarge(node);
  int64_t count = std::max<int64_t>(0, TruncateToInt64(span));
  for (int64_t i = 0; i < count; ++i) {
    AppendValue(out, first + i * step,
                WrappingAdd(start.ValueAsInt(0), WrappingMul(i, delta.ValueAsInt(0))));
  }
  out.shape = {count};
  return out;
}

double UnaryValue(const std::string& op, double a) {
  if (op == "Neg") return -a;
  if (op == "Sqrt") return std::sqrt(a);
  if (op == "Relu") return a > 0 ? a : 0;
  if (op == "Sigmoid") return 1.0 / (1.0 + std::exp(-a));
  if (op == "Tanh") return std::tanh(a);
  if (op == "Erf") return std::erf(a);
  if (op == "Exp") return std::exp(a);
  if (op == "Abs") return std::fabs(a);
  if (op == "Floor") return std::floor(a);
  if (op == "Ceil") return std::ceil(a);
  if (op == "Reciprocal") return 1.0 / a;
  return a == 0 ? 1 : 0;  // Not
}

Tensor EvalUnary(const Node& node, const Tensor& input) {
  Tensor out = MakeConstant(input.type, input.shape);
  for (int64_t i = 0; i < input.NumElements(); ++i) {
    double value = UnaryValue(node.op_type, input.ValueAsDouble(i));
    AppendValue(out, value, TruncateToInt64(value));
  }
  return out;
}

/// One binary op on doubles (floating inputs) and on int64 (integer inputs).
void BinaryValue(const std::string& op, const Tensor& a, int64_t ia, const Tensor& b, int64_t ib,
                 Tensor& out) {
  double x = a.ValueAsDouble(ia), y = b.ValueAsDouble(ib);
  if (op == "Equal") return AppendValue(out, 0, x == y);
  if (op == "Less") return AppendValue(out, 0, x < y);
  if (op == "Greater") return AppendValue(out, 0, x > y);
  if (op == "And") return AppendValue(out, 0, x != 0 && y != 0);
  if (op == "Or") return AppendValue(out, 0, x != 0 || y != 0);
  int64_t p = IsFloating(a.type) ? 0 : a.int_data[ia], q = IsFloating(b.type) ? 0 : b.int_data[ib];
  if (op == "Add") return AppendValue(out, x + y, WrappingAdd(p, q));
  if (op == "Sub") return AppendValue(out, x - y, WrappingSub(p, q));
  if (op == "Mul") return AppendValue(out, x * y, WrappingMul(p, q));
  // INT64_MIN / -1 wraps to INT64_MIN like the other overflows (the division itself traps).
  if (op == "Div") {
    return AppendValue(out, x / y, q == 0 ? 0 : q == -1 ? WrappingSub(0, p) : p / q);
  }
  if (op == "Max") return AppendValue(out, std::max(x, y), std::max(p, q));
  if (op == "Min") return AppendValue(out, std::min(x, y), std::min(p, q));
  // Mod (fmod = 0): integers only, the result takes the divisor's sign (Python's %). FMod (Mod
  // with fmod = 1): C's fmod and %, the dividend's sign. EvalBinary refused zero divisors.
  if (op == "Mod" || op == "FMod") {
    int64_t r = q == 0 || q == -1 ? 0 : p % q;  // q is 0 for floating-point operands
    if (op == "Mod" && r != 0 && ((r < 0) != (q < 0))) r += q;
    return AppendValue(out, std::fmod(x, y), r);
  }
  double power = std::pow(x, y);  // Pow
  return AppendValue(out, power, TruncateToInt64(power));
}

absl::StatusOr<Tensor> EvalBinary(const Node& node, const Tensor& a, const Tensor& b) {
  auto out_shape = BroadcastShapes(a.shape, b.shape);
  if (!out_shape.ok()) return NodeError(node, std::string(out_shape.status().message()));
  GTCO_RETURN_IF_ERROR(CheckFoldedShape(node, *out_shape));
  static const std::set<std::string> kLogical = {"Equal", "Less", "Greater", "And", "Or"};
  Tensor out = MakeConstant(kLogical.count(node.op_type) ? ElemType::kBool : a.type, *out_shape);
  std::vector<int64_t> index_a = BroadcastIndices(a.shape, *out_shape);
  std::vector<int64_t> index_b = BroadcastIndices(b.shape, *out_shape);
  std::string op = node.op_type;
  if (op == "Mod") {
    if (node.IntAttr("fmod", 0) == 1) {
      op = "FMod";
    } else if (IsFloating(a.type) || IsFloating(b.type)) {
      return NodeError(node, "Mod of floating-point values needs fmod=1 (ONNX)");
    }
    if (!IsFloating(b.type)) {
      for (int64_t divisor : b.int_data) {
        if (divisor == 0) return NodeError(node, "integer Mod by zero");
      }
    }
  }
  for (size_t i = 0; i < index_a.size(); ++i) {
    BinaryValue(op, a, index_a[i], b, index_b[i], out);
  }
  return out;
}

absl::StatusOr<Tensor> EvalWhere(const Node& node, const Tensor& cond, const Tensor& x,
                                 const Tensor& y) {
  GTCO_ASSIGN_OR_RETURN(Shape partial, BroadcastShapes(cond.shape, x.shape));
  GTCO_ASSIGN_OR_RETURN(Shape out_shape, BroadcastShapes(partial, y.shape));
  GTCO_RETURN_IF_ERROR(CheckFoldedShape(node, out_shape));
  std::vector<int64_t> ic = BroadcastIndices(cond.shape, out_shape);
  std::vector<int64_t> ix = BroadcastIndices(x.shape, out_shape);
  std::vector<int64_t> iy = BroadcastIndices(y.shape, out_shape);
  Tensor out = MakeConstant(x.type, out_shape);
  for (size_t i = 0; i < ic.size(); ++i) {
    AppendFrom(out, cond.ValueAsInt(ic[i]) != 0 ? x : y,
               cond.ValueAsInt(ic[i]) != 0 ? ix[i] : iy[i]);
  }
  return out;
}

absl::StatusOr<Tensor> EvalConstantOfShape(const Node& node, const Tensor& shape) {
  Tensor value = MakeConstant(ElemType::kFloat32, {1});
  value.float_data = {0.0};
  auto it = node.attributes.find("value");
  if (it != node.attributes.end() && it->second.kind == Attribute::Kind::kTensor) {
    value = it->second.tensor.at(0);
  }
  Shape out_shape = IntValues(shape);
  GTCO_RETURN_IF_ERROR(CheckFoldedShape(node, out_shape));
  return Take(value, std::vector<int64_t>(NumElements(out_shape), 0), out_shape);
}

/// Ops whose output is the first input with a new shape (no data movement).
absl::StatusOr<Tensor> EvalReshapeLike(const Node& node, const Graph& graph) {
  Tensor out = graph.tensor(node.inputs[0]);
  GTCO_ASSIGN_OR_RETURN(out.shape, ReshapeLikeShape(node, graph));
  return out;
}

absl::StatusOr<Tensor> EvalSingleOutput(const Node& node, const Graph& graph) {
  const std::string& op = node.op_type;
  if (op == "Constant") return EvalConstant(node);
  auto input = [&](size_t i) -> const Tensor& { return graph.tensor(node.inputs.at(i)); };
  if (op == "Shape") return EvalShape(node, input(0));
  if (op == "Size") {
    Tensor out = MakeConstant(ElemType::kInt64, {});
    out.int_data.push_back(input(0).NumElements());
    return out;
  }
  if (op == "Identity" || op == "Reshape" || op == "Flatten" || op == "Unsqueeze" ||
      op == "Squeeze") {
    return EvalReshapeLike(node, graph);
  }
  if (op == "Cast") return EvalCast(node, input(0));
  if (op == "Gather") return EvalGather(node, input(0), input(1));
  if (op == "Slice") return EvalSlice(node, graph);
  if (op == "Concat") return EvalConcat(node, graph);
  if (op == "Transpose") return EvalTranspose(node, input(0));
  if (op == "Expand") {
    GTCO_ASSIGN_OR_RETURN(Shape out_shape, BroadcastShapes(input(0).shape, IntValues(input(1))));
    GTCO_RETURN_IF_ERROR(CheckFoldedShape(node, out_shape));
    return Take(input(0), BroadcastIndices(input(0).shape, out_shape), out_shape);
  }
  if (op == "ConstantOfShape") return EvalConstantOfShape(node, input(0));
  if (op == "Range") return EvalRange(node, input(0), input(1), input(2));
  if (op == "Where") return EvalWhere(node, input(0), input(1), input(2));
  if (op == "DequantizeLinear") return EvalDequantize(node, graph);
  if (UnaryOps().count(op)) return EvalUnary(node, input(0));
  if (BinaryOps().count(op)) {
    if (node.inputs.size() != 2) return NodeUnimplemented(node, "only two inputs are supported");
    return EvalBinary(node, input(0), input(1));
  }
  return NodeUnimplemented(node, "cannot be constant-folded");
}

}  // namespace

bool IsFoldableOp(const std::string& op_type) {
  return UnaryOps().count(op_type) || BinaryOps().count(op_type) || StructuralOps().count(op_type);
}

bool IsShapeOnlyOp(const std::string& op_type) { return op_type == "Shape" || op_type == "Size"; }

absl::StatusOr<std::vector<int64_t>> BroadcastShapes(const std::vector<int64_t>& a,
                                                     const std::vector<int64_t>& b) {
  size_t rank = std::max(a.size(), b.size());
  std::vector<int64_t> out(rank, 1);
  for (size_t i = 0; i < rank; ++i) {
    int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("shapes ", ShapeString(a), " and ", ShapeString(b), " do not broadcast"));
    }
    out[i] = da == 1 ? db : da;
  }
  return out;
}

absl::StatusOr<std::vector<Tensor>> EvaluateConstantNode(const Node& node, const Graph& graph) {
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    if (node.inputs[i].empty()) continue;
    const Tensor* input = graph.FindTensor(node.inputs[i]);
    bool ready =
        input != nullptr && (IsShapeOnlyOp(node.op_type) ? input->has_shape : input->is_constant);
    if (!ready)
      return NodeError(node, absl::StrCat("input '", node.inputs[i], "' is not constant"));
  }
  if (node.outputs.size() != 1) {
    return NodeUnimplemented(node, "only single-output nodes can be constant-folded");
  }
  GTCO_ASSIGN_OR_RETURN(Tensor out, EvalSingleOutput(node, graph));
  out.name = node.outputs[0];
  out.has_shape = true;
  out.is_constant = true;
  return std::vector<Tensor>{std::move(out)};
}

}  // namespace gtco::graph
