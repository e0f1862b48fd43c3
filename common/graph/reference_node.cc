// Graph nodes for the reference op library, and shapes computed by it.
#include "common/graph/reference_node.h"

#include <set>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/util/status.h"

namespace gtco::graph {

namespace reference = runtime::reference;

namespace {
/// The largest value the shape probe (InferShapesByReference) makes: 64 Mi elements.
constexpr int64_t kMaxShapeProbeElements = int64_t{1} << 26;
}  // namespace

absl::StatusOr<runtime::ElemType> RuntimeElemType(ElemType type) {
  switch (type) {
    case ElemType::kFloat32:
      return runtime::ElemType::kF32;
    case ElemType::kFloat16:
      return runtime::ElemType::kF16;
    case ElemType::kBFloat16:
      return runtime::ElemType::kBF16;
    case ElemType::kInt8:
      return runtime::ElemType::kI8;
    case ElemType::kUInt8:
      return runtime::ElemType::kU8;
    case ElemType::kInt32:
      return runtime::ElemType::kI32;
    case ElemType::kInt64:
      return runtime::ElemType::kI64;
    case ElemType::kBool:
      return runtime::ElemType::kBool;
    default:
      return absl::UnimplementedError(
          absl::StrCat("element type ", ElemTypeName(type), " is not one GTCO runs"));
  }
}

absl::StatusOr<reference::Value> ConstantValue(const Tensor& tensor) {
  reference::Value value;
  GTCO_ASSIGN_OR_RETURN(value.dtype, RuntimeElemType(tensor.type));
  value.shape = tensor.shape;
  const int64_t count = tensor.NumElements();
  const size_t held = IsFloating(tensor.type) ? tensor.float_data.size() : tensor.int_data.size();
  if (!tensor.has_shape || held != static_cast<size_t>(count)) {
    return absl::InvalidArgumentError(
        absl::StrCat("constant '", tensor.name, "' holds ", held, " values for ",
                     tensor.has_shape ? ShapeString(tensor.shape) : "an unknown shape"));
  }
  value.data.resize(count);
  for (int64_t i = 0; i < count; ++i) value.data[i] = tensor.ValueAsDouble(i);
  return value;
}

absl::StatusOr<reference::Node> ReferenceNode(const Node& node, int opset) {
  reference::Node out;
  out.op_type = node.op_type;
  out.domain = node.domain;
  out.name = node.name;
  out.opset = opset;
  for (const auto& [name, attr] : node.attributes) {
    reference::Attr converted;
    switch (attr.kind) {
      case Attribute::Kind::kInt:
        converted.kind = reference::Attr::Kind::kInt;
        converted.i = attr.i;
        break;
      case Attribute::Kind::kFloat:
        converted.kind = reference::Attr::Kind::kFloat;
        converted.f = attr.f;
        break;
      case Attribute::Kind::kString:
        converted.kind = reference::Attr::Kind::kString;
        converted.s = attr.s;
        break;
      case Attribute::Kind::kInts:
        converted.kind = reference::Attr::Kind::kInts;
        converted.ints = attr.ints;
        break;
      case Attribute::Kind::kFloats:
        converted.kind = reference::Attr::Kind::kFloats;
        converted.floats.assign(attr.floats.begin(), attr.floats.end());
        break;
      case Attribute::Kind::kTensor: {
        converted.kind = reference::Attr::Kind::kTensor;
        absl::StatusOr<reference::Value> value = ConstantValue(attr.tensor.at(0));
        if (!value.ok()) {
          return absl::UnimplementedError(absl::StrCat("node '", node.name, "' attribute '", name,
                                                       "': ", value.status().message()));
        }
        converted.tensor.push_back(std::move(*value));
        break;
      }
      case Attribute::Kind::kOther:
        continue;  // graphs and lists of strings: no op the reference runs reads them
    }
    out.attrs[name] = std::move(converted);
  }
  return out;
}

absl::StatusOr<std::optional<std::vector<Tensor>>> EvaluateByReference(const Node& node,
                                                                       const Graph& graph,
                                                                       int64_t max_elements) {
  if (!reference::Supports(node.domain, node.op_type)) return std::nullopt;
  std::vector<reference::Value> values;
  values.reserve(node.inputs.size());
  std::vector<const reference::Value*> args;
  for (const std::string& input : node.inputs) {
    if (input.empty()) {
      args.push_back(nullptr);
      continue;
    }
    const Tensor* tensor = graph.FindTensor(input);
    if (tensor == nullptr || !tensor->is_constant) return std::nullopt;
    absl::StatusOr<reference::Value> value = ConstantValue(*tensor);
    if (!value.ok()) return std::nullopt;  // a type artifacts lack: left to the support check
    values.push_back(std::move(*value));
    args.push_back(&values.back());
  }
  absl::StatusOr<reference::Node> ref_node = ReferenceNode(node, graph.opset);
  if (!ref_node.ok()) return std::nullopt;
  const reference::ElementLimit limit(max_elements);
  // An op the library refuses on these constants is left in place: the support check or the
  // fallback step reports it, naming the node.
  absl::StatusOr<std::vector<reference::Value>> results =
      reference::RunOp(*ref_node, args, static_cast<int>(node.outputs.size()));
  if (!results.ok()) return std::nullopt;
  std::vector<Tensor> tensors;
  for (size_t i = 0; i < node.outputs.size() && i < results->size(); ++i) {
    if (node.outputs[i].empty()) continue;
    const reference::Value& result = (*results)[i];
    if (result.NumElements() > max_elements) return std::nullopt;
    Tensor tensor;
    tensor.name = node.outputs[i];
    tensor.type = graph.HasTensor(tensor.name) ? graph.tensor(tensor.name).type : ElemType::kOther;
    absl::StatusOr<runtime::ElemType> declared = RuntimeElemType(tensor.type);
    if (!declared.ok() || *declared != result.dtype) return std::nullopt;
    tensor.has_shape = true;
    tensor.shape = result.shape;
    tensor.is_constant = true;
    if (IsFloating(tensor.type)) {
      tensor.float_data = result.data;
    } else {
      tensor.int_data.reserve(result.data.size());
      for (double v : result.data) tensor.int_data.push_back(static_cast<int64_t>(v));
    }
    tensors.push_back(std::move(tensor));
  }
  return std::optional<std::vector<Tensor>>(std::move(tensors));
}

bool SetsShape(const std::string& op_type, size_t index) {
  static const std::set<std::pair<std::string, size_t>> kShapeInputs = {{"Reshape", 1},
                                                                        {"Expand", 1},
                                                                        {"Tile", 1},
                                                                        {"Unsqueeze", 1},
                                                                        {"Squeeze", 1},
                                                                        {"Split", 1},
                                                                        {"Slice", 1},
                                                                        {"Slice", 2},
                                                                        {"Slice", 3},
                                                                        {"Slice", 4},
                                                                        {"ConstantOfShape", 0},
                                                                        {"Range", 0},
                                                                        {"Range", 1},
                                                                        {"Range", 2},
                                                                        {"Pad", 1},
                                                                        {"Pad", 3},
                                                                        {"Resize", 1},
                                                                        {"Resize", 2},
                                                                        {"Resize", 3},
                                                                        {"Upsample", 1},
                                                                        {"ReduceMean", 1},
                                                                        {"ReduceSum", 1},
                                                                        {"ReduceMax", 1},
                                                                        {"ReduceMin", 1},
                                                                        {"ReduceProd", 1},
                                                                        {"ReduceL1", 1},
                                                                        {"ReduceL2", 1},
                                                                        {"ReduceSumSquare", 1},
                                                                        {"ReduceLogSum", 1},
                                                                        {"ReduceLogSumExp", 1},
                                                                        {"TopK", 1},
                                                                        {"OneHot", 1},
                                                                        {"CumSum", 1},
                                                                        {"EyeLike", 0}};
  return kShapeInputs.count({op_type, index}) > 0;
}

absl::Status InferShapesByReference(const Node& node, Graph& graph) {
  static const std::set<std::string> kDataDependent = {"NonZero", "Compress", "Unique"};
  auto refuse = [&](const std::string& why) {
    return absl::FailedPreconditionError(
        absl::StrCat("node '", node.name, "' (", node.op_type, "): ", why));
  };
  if (kDataDependent.count(node.op_type) || !reference::Supports(node.domain, node.op_type)) {
    return refuse("its output shapes cannot be told from its input shapes");
  }
  std::vector<reference::Value> values;
  values.reserve(node.inputs.size());
  std::vector<const reference::Value*> args;
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    if (node.inputs[i].empty()) {
      args.push_back(nullptr);
      continue;
    }
    const Tensor* tensor = graph.FindTensor(node.inputs[i]);
    if (tensor == nullptr || !tensor->has_shape) return refuse("an input has no static shape");
    if (tensor->is_constant) {
      GTCO_ASSIGN_OR_RETURN(reference::Value value, ConstantValue(*tensor));
      values.push_back(std::move(value));
    } else {
      if (SetsShape(node.op_type, i)) return refuse("a computed input sets its shape");
      reference::Value zeros;
      GTCO_ASSIGN_OR_RETURN(zeros.dtype, RuntimeElemType(tensor->type));
      zeros.shape = tensor->shape;
      if (tensor->NumElements() > kMaxShapeProbeElements) return refuse("an input is too large");
      zeros.data.assign(tensor->NumElements(), 0.0);
      values.push_back(std::move(zeros));
    }
    args.push_back(&values.back());
  }
  GTCO_ASSIGN_OR_RETURN(reference::Node ref_node, ReferenceNode(node, graph.opset));
  const reference::ElementLimit limit(kMaxShapeProbeElements);
  GTCO_ASSIGN_OR_RETURN(std::vector<reference::Value> results,
                        reference::RunOp(ref_node, args, static_cast<int>(node.outputs.size())));
  for (size_t i = 0; i < node.outputs.size() && i < results.size(); ++i) {
    if (node.outputs[i].empty() || !graph.HasTensor(node.outputs[i])) continue;
    Tensor& output = graph.mutable_tensor(node.outputs[i]);
    if (output.has_shape) continue;
    output.shape = results[i].shape;
    output.has_shape = true;
  }
  return absl::OkStatus();
}

}  // namespace gtco::graph
