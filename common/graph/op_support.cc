// Op classification and the post-folding support check.
#include "common/graph/op_support.h"

#include <algorithm>
#include <map>
#include <set>

#include "absl/strings/str_cat.h"
#include "common/graph/bf16x3_split.h"
#include "common/graph/const_eval.h"
#include "common/util/status.h"

namespace gtco::graph {
namespace {

constexpr int64_t kOnnxFloat = 1;
constexpr int64_t kOnnxBFloat16 = 16;

std::string OpLabel(const Node& node) {
  return node.domain.empty() ? node.op_type : absl::StrCat(node.domain, ".", node.op_type);
}

/// Inputs that are integer parameters rather than data (ReduceMean's axes, opset 18).
bool IsParameterInput(const Node& node, size_t input_index) {
  return node.op_type == "ReduceMean" && input_index == 1;
}

absl::Status CheckStaticShapes(const Node& node, const Graph& graph) {
  for (const auto* names : {&node.inputs, &node.outputs}) {
    for (const std::string& name : *names) {
      if (name.empty()) continue;
      const Tensor* tensor = graph.FindTensor(name);
      if (tensor == nullptr || !tensor->has_shape) {
        return absl::UnimplementedError(absl::StrCat("could not infer a static shape for tensor '",
                                                     name, "' at node '", node.name, "' (",
                                                     OpLabel(node), ")"));
      }
    }
  }
  return absl::OkStatus();
}

absl::Status DtypeUnimplemented(const Node& node, const Tensor& tensor, const std::string& why) {
  return absl::UnimplementedError(absl::StrCat("ONNX op '", OpLabel(node), "' at node '", node.name,
                                               "' computes on ", ElemTypeName(tensor.type),
                                               " tensor '", tensor.name, "'; ", why));
}

/// MatMul on a 16-bit float type (bf16, or f16 which only CUDA mappings run): both inputs and
/// the output of that type; a bf16 one's output may be f32 where FoldIntegerMatMulOutputs took in
/// the Cast after it.
absl::Status CheckHalfMatMul(const Node& node, const Graph& graph, ElemType type) {
  for (const std::string& name : {node.inputs.at(0), node.inputs.at(1), node.outputs.at(0)}) {
    const Tensor& tensor = graph.tensor(name);
    const bool folded_cast = type == ElemType::kBFloat16 && name == node.outputs.at(0) &&
                             tensor.type == ElemType::kFloat32;
    if (tensor.type != type && !folded_cast) {
      return DtypeUnimplemented(node, tensor,
                                type == ElemType::kBFloat16
                                    ? "a bf16 MatMul needs bf16 inputs and output (or a Cast "
                                      "of it to f32)"
                                    : "an f16 MatMul needs f16 inputs and output");
    }
  }
  return absl::OkStatus();
}

/// MatMulInteger: u8|i8 inputs; per-tensor zero points of the input's type, B's constant, A's
/// constant or computed at run time (DynamicQuantizeLinear's); an i32 output, or f32 where
/// FoldIntegerMatMulOutputs took in the Cast after it.
absl::Status CheckMatMulInteger(const Node& node, const Graph& graph) {
  for (size_t i = 0; i < node.inputs.size() && i < 4; ++i) {
    if (node.inputs[i].empty()) continue;
    const Tensor& tensor = graph.tensor(node.inputs[i]);
    if (tensor.type != ElemType::kUInt8 && tensor.type != ElemType::kInt8) {
      return DtypeUnimplemented(node, tensor, "MatMulInteger supports only u8 and i8 inputs");
    }
    if (i < 2) continue;
    const Tensor& data = graph.tensor(node.inputs[i - 2]);
    if (tensor.type != data.type) {
      return DtypeUnimplemented(node, tensor, "a zero point must have its input's type");
    }
    const bool run_time_ok = i == 2;  // A's zero point may be computed per run
    if ((!tensor.is_constant && !run_time_ok) || !IsUniformZeroPoint(tensor)) {
      return absl::UnimplementedError(absl::StrCat(
          "ONNX op 'MatMulInteger' at node '", node.name, "': zero point '", tensor.name,
          "' must be a ", run_time_ok ? "" : "constant ", "per-tensor scalar (",
          tensor.is_constant || run_time_ok ? "" : "not constant, ", tensor.NumElements(),
          " elements)"));
    }
  }
  const Tensor& output = graph.tensor(node.outputs.at(0));
  if (output.type != ElemType::kInt32 && output.type != ElemType::kFloat32) {
    return DtypeUnimplemented(node, output, "MatMulInteger produces i32");
  }
  return absl::OkStatus();
}

absl::Status CheckComputeTypes(const Node& node, const Graph& graph) {
  if (node.op_type == "MatMulInteger") return CheckMatMulInteger(node, graph);
  const ElemType first_type =
      node.inputs.empty() ? ElemType::kFloat32 : graph.tensor(node.inputs.at(0)).type;
  if (node.op_type == "MatMul" &&
      (first_type == ElemType::kBFloat16 || first_type == ElemType::kFloat16)) {
    return CheckHalfMatMul(node, graph, first_type);
  }
  if (node.op_type == "Conv" && node.HasAttr(kPairImageAttr)) {
    return absl::OkStatus();  // --precision bf16(x3)'s conv of the pair layout (bf16x3_split.h)
  }
  if (node.op_type == "Conv" && first_type == ElemType::kBFloat16) {
    return DtypeUnimplemented(
        node, graph.tensor(node.inputs.at(0)),
        "a bf16 Conv runs only as --precision bf16 or bf16x3 writes it: a bias-free Conv of the "
        "Cast to bf16 (or the bf16x3 split) of an f32 image, with an even number of channels, "
        "unit dilations, strides of at most 4, one group and the same pads and strides as every "
        "other Conv reading that image");
  }
  auto check = [&](const std::string& name) -> absl::Status {
    const Tensor& tensor = graph.tensor(name);
    if (tensor.type == ElemType::kFloat32) return absl::OkStatus();
    return absl::UnimplementedError(
        absl::StrCat("ONNX op '", OpLabel(node), "' at node '", node.name, "' computes on ",
                     ElemTypeName(tensor.type), " tensor '", name, "'; only f32 is supported"));
  };
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    if (node.inputs[i].empty() || IsParameterInput(node, i)) continue;
    GTCO_RETURN_IF_ERROR(check(node.inputs[i]));
  }
  return node.outputs.empty() ? absl::OkStatus() : check(node.outputs[0]);
}

/// Runtime casts GTCO runs (as a data op beside the tuned kernels): any of f32, bf16, i32, i64
/// and bool to f32 (attention masks, MatMulInteger outputs), f32 to bf16, and a cast to the
/// input's own type.
absl::Status CheckCast(const Node& node, const Graph& graph) {
  const Tensor& input = graph.tensor(node.inputs.at(0));
  int64_t to = node.IntAttr("to", 0);
  const bool to_f32 = to == kOnnxFloat;
  // ONNX TensorProto data types of the element types a cast may keep.
  static const auto* kOnnxTypes = new std::map<ElemType, int64_t>{
      {ElemType::kFloat32, 1},  {ElemType::kUInt8, 2},    {ElemType::kInt8, 3},
      {ElemType::kInt32, 6},    {ElemType::kInt64, 7},    {ElemType::kBool, 9},
      {ElemType::kFloat16, 10}, {ElemType::kBFloat16, 16}};
  if (auto same = kOnnxTypes->find(input.type); same != kOnnxTypes->end() && same->second == to) {
    return absl::OkStatus();
  }
  if (to_f32 && (input.type == ElemType::kFloat32 || input.type == ElemType::kBFloat16 ||
                 input.type == ElemType::kInt32 || input.type == ElemType::kInt64 ||
                 input.type == ElemType::kBool)) {
    return absl::OkStatus();
  }
  if (to == kOnnxBFloat16 && input.type == ElemType::kFloat32) return absl::OkStatus();
  return absl::UnimplementedError(
      absl::StrCat("ONNX op 'Cast' at node '", node.name, "' converts ", ElemTypeName(input.type),
                   " tensor '", node.inputs[0], "' to ONNX type ", to,
                   " at run time; only casts to f32 (from f32, bf16, i32, i64, bool), f32 -> bf16, "
                   "casts to the same type (or casts of constants) are supported"));
}

/// DynamicQuantizeLinear: f32 in; u8 data, f32 scale and u8 zero point out (ONNX's types).
/// DequantizeLinear: u8, i8 or i32 data; a scale of one element or, with `axis`, one per entry of
/// that axis (f32); an optional zero point of the data's type shaped as the scale.
/// QuantizeLinear: f32 data, scales as DequantizeLinear's, a u8 or i8 zero point (the output's
/// type; u8 when absent).
absl::Status CheckQuantizeOp(const Node& node, const Graph& graph) {
  auto fail = [&](const std::string& why) {
    return absl::UnimplementedError(
        absl::StrCat("ONNX op '", node.op_type, "' at node '", node.name, "': ", why));
  };
  const Tensor& x = graph.tensor(node.inputs.at(0));
  if (node.op_type == "DynamicQuantizeLinear") {
    if (x.type != ElemType::kFloat32) {
      return fail(absl::StrCat("input '", x.name, "' is ", ElemTypeName(x.type),
                               "; only f32 is supported"));
    }
    return absl::OkStatus();
  }
  const bool quantize = node.op_type == "QuantizeLinear";
  if (quantize && x.type != ElemType::kFloat32) {
    return fail(
        absl::StrCat("input '", x.name, "' is ", ElemTypeName(x.type), "; only f32 is supported"));
  }
  if (!quantize && x.type != ElemType::kUInt8 && x.type != ElemType::kInt8 &&
      x.type != ElemType::kInt32) {
    return fail(absl::StrCat("input '", x.name, "' is ", ElemTypeName(x.type),
                             "; u8, i8 and i32 are supported"));
  }
  const Tensor& scale = graph.tensor(node.inputs.at(1));
  if (scale.type != ElemType::kFloat32) {
    return fail(absl::StrCat("scale '", scale.name, "' is ", ElemTypeName(scale.type),
                             "; only f32 is supported"));
  }
  const int64_t rank = static_cast<int64_t>(x.shape.size());
  int64_t axis = node.IntAttr("axis", 1);
  if (axis < 0) axis += rank;
  if (node.IntAttr("block_size", 0) != 0) {
    return fail("blocked quantization (block_size) is not supported");
  }
  const bool per_tensor = scale.NumElements() == 1 && scale.shape.size() <= 1;
  const bool per_axis =
      scale.shape.size() == 1 && axis >= 0 && axis < rank && scale.shape[0] == x.shape[axis];
  if (!per_tensor && !per_axis) {
    return fail(absl::StrCat("scale '", scale.name, "' of shape ", ShapeString(scale.shape),
                             " is neither per tensor nor one per entry of axis ",
                             node.IntAttr("axis", 1), " of ", ShapeString(x.shape),
                             " (blocked quantization is not supported)"));
  }
  if (node.inputs.size() > 2 && !node.inputs[2].empty()) {
    const Tensor& zero_point = graph.tensor(node.inputs[2]);
    const bool type_ok =
        quantize ? (zero_point.type == ElemType::kUInt8 || zero_point.type == ElemType::kInt8)
                 : zero_point.type == x.type;
    if (!type_ok || zero_point.NumElements() != scale.NumElements()) {
      return fail(absl::StrCat("zero point '", zero_point.name, "' must have ",
                               quantize
                                   ? "type u8 or i8"
                                   : "the data's type (" + std::string(ElemTypeName(x.type)) + ")",
                               " and the scale's shape"));
    }
  }
  return absl::OkStatus();
}

/// Equal (two inputs of one type, a bool output), Where (a bool condition, two values of one
/// type) and Expand (its shape input constant) on f32, i32, i64 or bool.
absl::Status CheckMaskOp(const Node& node, const Graph& graph) {
  auto kind_ok = [](ElemType type) {
    return type == ElemType::kFloat32 || type == ElemType::kInt32 || type == ElemType::kInt64 ||
           type == ElemType::kBool;
  };
  auto fail = [&](const std::string& why) {
    return absl::UnimplementedError(
        absl::StrCat("ONNX op '", node.op_type, "' at node '", node.name, "': ", why));
  };
  const size_t first_value = node.op_type == "Where" ? 1 : 0;
  const size_t values = node.op_type == "Expand" ? 1 : node.inputs.size();
  for (size_t i = first_value; i < values; ++i) {
    const Tensor& tensor = graph.tensor(node.inputs[i]);
    if (!kind_ok(tensor.type)) {
      return fail(absl::StrCat("input '", tensor.name, "' is ", ElemTypeName(tensor.type),
                               "; f32, i32, i64 and bool are supported"));
    }
    if (tensor.type != graph.tensor(node.inputs[first_value]).type) {
      return fail("its value inputs differ in type");
    }
  }
  if (node.op_type == "Where" && graph.tensor(node.inputs.at(0)).type != ElemType::kBool) {
    return fail("the condition must be bool");
  }
  if (node.op_type == "Expand" && !graph.IsConstant(node.inputs.at(1))) {
    return fail("the shape must be constant");
  }
  return absl::OkStatus();
}

std::string FirstNonConstantInput(const Node& node, const Graph& graph) {
  for (const std::string& input : node.inputs) {
    if (!input.empty() && !graph.IsConstant(input)) return input;
  }
  return "";
}

}  // namespace

std::optional<ir::EwOp> ElementwiseEwOp(const std::string& op_type) {
  static const auto* ops = new std::map<std::string, ir::EwOp>{
      {"Add", ir::EwOp::kAdd},         {"Sub", ir::EwOp::kSub},   {"Mul", ir::EwOp::kMul},
      {"Div", ir::EwOp::kDiv},         {"Pow", ir::EwOp::kPow},   {"Relu", ir::EwOp::kRelu},
      {"Sigmoid", ir::EwOp::kSigmoid}, {"Tanh", ir::EwOp::kTanh}, {"Erf", ir::EwOp::kErf},
      {"Sqrt", ir::EwOp::kSqrt},       {"Max", ir::EwOp::kMax},   {"Min", ir::EwOp::kMin},
      {"Neg", ir::EwOp::kNeg},         {"Exp", ir::EwOp::kExp}};
  auto it = ops->find(op_type);
  if (it == ops->end()) return std::nullopt;
  return it->second;
}

OpRole RoleOf(const Node& node) {
  static const std::set<std::string> kAnchors = {
      "MatMul", "MatMulInteger",     "Gemm",    "Softmax",    "LayerNormalization", "ReduceMean",
      "Conv",   "GlobalAveragePool", "MaxPool", "AveragePool"};
  // Data movement and the mask ops of attention (Equal, Where, Expand on int64/bool), run as
  // data-movement steps beside the tuned kernels; constant ones fold away first.
  static const std::set<std::string> kDataOps = {"Transpose",
                                                 "Reshape",
                                                 "Identity",
                                                 "Flatten",
                                                 "Squeeze",
                                                 "Unsqueeze",
                                                 "Slice",
                                                 "Concat",
                                                 "Gather",
                                                 "Cast",
                                                 "Equal",
                                                 "Where",
                                                 "Expand",
                                                 "DynamicQuantizeLinear",
                                                 "DequantizeLinear",
                                                 "QuantizeLinear"};
  if (node.HasAttr(kFallbackAttr)) return OpRole::kFallback;
  if (node.domain == kGtcoInternalDomain &&
      (node.op_type == kBf16x3SplitOp || node.op_type == kBf16PairsOp)) {
    return OpRole::kData;
  }
  if (!node.domain.empty()) return OpRole::kUnsupported;
  if (kAnchors.count(node.op_type)) return OpRole::kAnchor;
  if (ElementwiseEwOp(node.op_type)) return OpRole::kElementwise;
  if (kDataOps.count(node.op_type)) return OpRole::kData;
  if (IsFoldableOp(node.op_type)) return OpRole::kFoldOnly;
  return OpRole::kUnsupported;
}

absl::Status CheckSupportedOps(const Graph& graph) {
  for (const Node& node : graph.nodes) GTCO_RETURN_IF_ERROR(CheckNodeSupported(node, graph));
  return absl::OkStatus();
}

absl::Status CheckNodeSupported(const Node& node, const Graph& graph) {
  {
    OpRole role = RoleOf(node);
    if (role == OpRole::kFallback) return CheckStaticShapes(node, graph);
    if (role == OpRole::kUnsupported) {
      return absl::UnimplementedError(
          absl::StrCat("unsupported ONNX op '", OpLabel(node), "' at node '", node.name, "'"));
    }
    if (role == OpRole::kFoldOnly) {
      return absl::UnimplementedError(
          absl::StrCat("ONNX op '", node.op_type, "' at node '", node.name,
                       "' is only supported on constant inputs (shape arithmetic), but its input '",
                       FirstNonConstantInput(node, graph), "' is computed at run time"));
    }
    GTCO_RETURN_IF_ERROR(CheckStaticShapes(node, graph));
    if ((node.op_type == "Max" || node.op_type == "Min") && node.inputs.size() != 2) {
      return absl::UnimplementedError(absl::StrCat("ONNX op '", node.op_type, "' at node '",
                                                   node.name, "' has ", node.inputs.size(),
                                                   " inputs; only two are supported"));
    }
    if (role == OpRole::kAnchor || role == OpRole::kElementwise) {
      GTCO_RETURN_IF_ERROR(CheckComputeTypes(node, graph));
    } else if (node.op_type == "Cast") {
      GTCO_RETURN_IF_ERROR(CheckCast(node, graph));
    } else if (node.op_type == "Equal" || node.op_type == "Where" || node.op_type == "Expand") {
      GTCO_RETURN_IF_ERROR(CheckMaskOp(node, graph));
    } else if (node.op_type == "DynamicQuantizeLinear" || node.op_type == "DequantizeLinear" ||
               node.op_type == "QuantizeLinear") {
      GTCO_RETURN_IF_ERROR(CheckQuantizeOp(node, graph));
    }
  }
  return absl::OkStatus();
}

bool IsUniformZeroPoint(const Tensor& zero_point) {
  if (zero_point.NumElements() == 1) return true;
  if (!zero_point.is_constant ||
      static_cast<int64_t>(zero_point.int_data.size()) != zero_point.NumElements()) {
    return false;
  }
  return std::all_of(zero_point.int_data.begin(), zero_point.int_data.end(),
                     [&](int64_t value) { return value == zero_point.int_data[0]; });
}

int CountDataOps(const Graph& graph) {
  int count = 0;
  for (const Node& node : graph.nodes) count += RoleOf(node) == OpRole::kData ? 1 : 0;
  return count;
}

}  // namespace gtco::graph
