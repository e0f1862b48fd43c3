// ONNX import: ModelProto parsing, shape overrides, checker, shape inference, graph building.
#include "common/onnx/onnx_import.h"

#include <exception>
#include <set>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/graph/bf16x3_split.h"
#include "common/onnx/tensor_proto.h"
#include "common/util/status.h"
#include "onnx/checker.h"
#include "onnx/defs/schema.h"
#include "onnx/onnx_pb.h"
#include "onnx/shape_inference/implementation.h"

namespace gtco::onnx {
namespace {

using ::onnx::ModelProto;
using ::onnx::ValueInfoProto;

std::set<std::string> InitializerNames(const ModelProto& model) {
  std::set<std::string> names;
  for (const auto& initializer : model.graph().initializer()) names.insert(initializer.name());
  return names;
}

std::string DimsText(const std::vector<int64_t>& dims) { return absl::StrJoin(dims, "x"); }

/// Replaces the shapes of overridden inputs; rejects overrides of unknown inputs.
absl::Status ApplyOverrides(const ShapeOverrides& overrides, ModelProto& model) {
  std::set<std::string> initializers = InitializerNames(model);
  std::vector<std::string> input_names;
  for (const auto& input : model.graph().input()) {
    if (!initializers.count(input.name())) input_names.push_back(input.name());
  }
  for (const auto& [name, dims] : overrides) {
    ValueInfoProto* target = nullptr;
    for (auto& input : *model.mutable_graph()->mutable_input()) {
      if (input.name() == name && !initializers.count(name)) target = &input;
    }
    if (target == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("shape override names unknown input '", name,
                       "'; the model's inputs are: ", absl::StrJoin(input_names, ", ")));
    }
    auto* tensor_type = target->mutable_type()->mutable_tensor_type();
    if (tensor_type->has_shape() &&
        tensor_type->shape().dim_size() != static_cast<int>(dims.size())) {
      return absl::InvalidArgumentError(
          absl::StrCat("shape override for input '", name, "' has rank ", dims.size(),
                       " but the input has rank ", tensor_type->shape().dim_size()));
    }
    tensor_type->mutable_shape()->clear_dim();
    for (int64_t dim : dims) tensor_type->mutable_shape()->add_dim()->set_dim_value(dim);
  }
  return absl::OkStatus();
}

/// Every runtime input needs a fully static shape.
absl::Status CheckStaticInputs(const ModelProto& model) {
  std::set<std::string> initializers = InitializerNames(model);
  for (const auto& input : model.graph().input()) {
    if (initializers.count(input.name())) continue;
    if (!input.type().has_tensor_type()) {
      return absl::UnimplementedError(absl::StrCat(
          "input '", input.name(), "' is not a tensor; only tensor inputs are supported"));
    }
    const auto& tensor_type = input.type().tensor_type();
    if (!tensor_type.has_shape()) {
      return absl::InvalidArgumentError(absl::StrCat("input '", input.name(),
                                                     "' has no shape; pass one with --shape ",
                                                     input.name(), "=1x128x768 (your dims)"));
    }
    std::vector<int64_t> example;
    std::string symbolic;
    for (int i = 0; i < tensor_type.shape().dim_size(); ++i) {
      const auto& dim = tensor_type.shape().dim(i);
      bool known = dim.has_dim_value() && dim.dim_value() > 0;
      example.push_back(known ? dim.dim_value() : 1);
      if (!known && symbolic.empty()) {
        symbolic = dim.has_dim_param() ? absl::StrCat("'", dim.dim_param(), "' (dim ", i, ")")
                                       : absl::StrCat("dim ", i);
      }
    }
    if (!symbolic.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("input '", input.name(), "' has symbolic/unknown dimension ", symbolic,
                       "; pass a static shape with --shape ", input.name(), "=", DimsText(example),
                       " (e.g. --shape <input>=1x128x768)"));
    }
  }
  return absl::OkStatus();
}

bool HasCustomDomainNodes(const ModelProto& model) {
  for (const auto& node : model.graph().node()) {
    if (!node.domain().empty() && node.domain() != "ai.onnx") return true;
  }
  return false;
}

absl::Status RunShapeInference(ModelProto& model, bool strict, bool data_propagation) {
  try {
    ::onnx::ShapeInferenceOptions options(/*check_type_val=*/false, strict ? 1 : 0,
                                          data_propagation);
    ::onnx::shape_inference::InferShapes(model, ::onnx::OpSchemaRegistry::Instance(), options);
  } catch (const std::exception& error) {
    return InvalidModel(absl::StrCat("ONNX shape inference failed: ", error.what()));
  }
  return absl::OkStatus();
}

/// Strict inference catches shape mismatches (often a wrong --shape). Ops from other domains
/// have no schema here; for those models inference runs lenient when strict fails, and the
/// support check reports the op instead.
absl::Status InferModelShapes(ModelProto& model, bool data_propagation) {
  ModelProto strict_model = model;
  absl::Status strict = RunShapeInference(strict_model, /*strict=*/true, data_propagation);
  if (strict.ok()) {
    model = std::move(strict_model);
    return absl::OkStatus();
  }
  if (!HasCustomDomainNodes(model)) return strict;
  return RunShapeInference(model, /*strict=*/false, data_propagation);
}

/// Whether every node input of the (type-inferred) main graph has a type, and no node has a
/// subgraph. ONNX 1.12's data propagation reads the type of a Shape node's input unchecked and
/// crashes on a value without one (an unknown op's output, a node whose inference failed).
bool SafeForDataPropagation(const ModelProto& model) {
  std::set<std::string> typed;
  for (const auto& initializer : model.graph().initializer()) typed.insert(initializer.name());
  for (const auto* values :
       {&model.graph().input(), &model.graph().value_info(), &model.graph().output()}) {
    for (const ValueInfoProto& value : *values) {
      if (value.type().value_case() != ::onnx::TypeProto::VALUE_NOT_SET) typed.insert(value.name());
    }
  }
  for (const auto& node : model.graph().node()) {
    for (const auto& attribute : node.attribute()) {
      if (attribute.has_g() || attribute.graphs_size() > 0) return false;
    }
    for (const std::string& input : node.input()) {
      if (!input.empty() && typed.count(input) == 0) return false;
    }
  }
  return true;
}

absl::Status CheckAndInferShapes(ModelProto& model) {
  // Exporters newer than the ONNX library here (torch 2.x with onnx 1.16+ writes IR 9 or 10) stamp
  // IR versions its checker refuses outright. What IR 9 and 10 add (float8 and 4-bit types,
  // function overloads) is refused later, by name, where it is read; the graph is otherwise
  // the same, so it is checked as of the newest IR the library knows.
  if (model.ir_version() > ::onnx::IR_VERSION) model.set_ir_version(::onnx::IR_VERSION);
  try {
    ::onnx::checker::check_model(model);
  } catch (const std::exception& error) {
    return InvalidModel(absl::StrCat("the ONNX checker rejected it: ", error.what()));
  }
  // Types first, without data propagation; then, when that is safe, again with it (it folds
  // shape arithmetic such as Shape -> Gather -> Concat -> Reshape into static shapes).
  ModelProto typed_model = model;
  GTCO_RETURN_IF_ERROR(InferModelShapes(typed_model, /*data_propagation=*/false));
  if (!SafeForDataPropagation(typed_model)) {
    model = std::move(typed_model);
    return absl::OkStatus();
  }
  return InferModelShapes(model, /*data_propagation=*/true);
}

absl::StatusOr<graph::Attribute> ConvertAttribute(const ::onnx::AttributeProto& proto,
                                                  const std::string& node_name) {
  graph::Attribute attribute;
  using ::onnx::AttributeProto;
  switch (proto.type()) {
    case AttributeProto::INT:
      attribute.kind = graph::Attribute::Kind::kInt;
      attribute.i = proto.i();
      break;
    case AttributeProto::FLOAT:
      attribute.kind = graph::Attribute::Kind::kFloat;
      attribute.f = proto.f();
      break;
    case AttributeProto::STRING:
      attribute.kind = graph::Attribute::Kind::kString;
      attribute.s = proto.s();
      break;
    case AttributeProto::INTS:
      attribute.kind = graph::Attribute::Kind::kInts;
      attribute.ints.assign(proto.ints().begin(), proto.ints().end());
      break;
    case AttributeProto::FLOATS:
      attribute.kind = graph::Attribute::Kind::kFloats;
      attribute.floats.assign(proto.floats().begin(), proto.floats().end());
      break;
    case AttributeProto::TENSOR: {
      attribute.kind = graph::Attribute::Kind::kTensor;
      GTCO_ASSIGN_OR_RETURN(graph::Tensor tensor,
                            TensorFromProto(proto.t(), absl::StrCat(node_name, ".", proto.name())));
      attribute.tensor.push_back(std::move(tensor));
      break;
    }
    default:
      attribute.kind = graph::Attribute::Kind::kOther;
      break;
  }
  return attribute;
}

int DefaultOpset(const ModelProto& model) {
  for (const auto& opset : model.opset_import()) {
    if (opset.domain().empty() || opset.domain() == "ai.onnx")
      return static_cast<int>(opset.version());
  }
  return 0;
}

absl::Status AddTensors(const ModelProto& model, graph::Graph& graph) {
  const auto& proto = model.graph();
  for (const auto& initializer : proto.initializer()) {
    GTCO_ASSIGN_OR_RETURN(graph::Tensor tensor, TensorFromProto(initializer, ""));
    graph.SetTensor(std::move(tensor));
  }
  auto add_info = [&graph](const ValueInfoProto& info) -> absl::Status {
    if (graph.IsConstant(info.name())) return absl::OkStatus();
    graph::Tensor tensor;
    if (const graph::Tensor* known = graph.FindTensor(info.name())) tensor = *known;
    tensor.name = info.name();
    ApplyValueInfo(info, tensor);
    if (tensor.has_shape) {
      GTCO_RETURN_IF_ERROR(CheckedElementCount(tensor.shape, tensor.name).status());
    }
    graph.SetTensor(std::move(tensor));
    return absl::OkStatus();
  };
  for (const auto& info : proto.input()) {
    GTCO_RETURN_IF_ERROR(add_info(info));
    if (!graph.IsConstant(info.name())) graph.inputs.push_back(info.name());
  }
  for (const auto& info : proto.value_info()) GTCO_RETURN_IF_ERROR(add_info(info));
  for (const auto& info : proto.output()) {
    GTCO_RETURN_IF_ERROR(add_info(info));
    graph.outputs.push_back(info.name());
  }
  return absl::OkStatus();
}

absl::Status AddNodes(const ModelProto& model, graph::Graph& graph) {
  const auto& proto = model.graph();
  std::set<std::string> names;  // node names are unique in the graph IR (ONNX does not require it)
  for (int node_index = 0; node_index < proto.node_size(); ++node_index) {
    const auto& node_proto = proto.node(node_index);
    graph::Node node;
    node.op_type = node_proto.op_type();
    node.domain = node_proto.domain() == "ai.onnx" ? "" : node_proto.domain();
    if (node.domain == graph::kGtcoInternalDomain) {
      return absl::InvalidArgumentError(absl::StrCat(
          "node '", node_proto.name(), "' is in domain '", graph::kGtcoInternalDomain,
          "', which only GTCO's own graph passes use; a model may not contain it"));
    }
    node.name =
        node_proto.name().empty() ? absl::StrCat(node.op_type, "_", node_index) : node_proto.name();
    for (int suffix = 1; !names.insert(node.name).second; ++suffix) {
      node.name = absl::StrCat(node_proto.name().empty() ? node.op_type : node_proto.name(), "_",
                               node_index, suffix > 1 ? absl::StrCat("_", suffix) : "");
    }
    node.inputs.assign(node_proto.input().begin(), node_proto.input().end());
    node.outputs.assign(node_proto.output().begin(), node_proto.output().end());
    for (const auto& attribute : node_proto.attribute()) {
      GTCO_ASSIGN_OR_RETURN(node.attributes[attribute.name()],
                            ConvertAttribute(attribute, node.name));
    }
    for (const std::string& output : node.outputs) {
      if (!output.empty() && !graph.HasTensor(output)) {
        graph::Tensor tensor;
        tensor.name = output;
        graph.SetTensor(std::move(tensor));
      }
    }
    graph.nodes.push_back(std::move(node));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<graph::Graph> ImportOnnx(std::string_view model_bytes,
                                        const ShapeOverrides& overrides) {
  GTCO_ASSIGN_OR_RETURN(ModelProto model, ParseModel(model_bytes));
  for (const auto& initializer : model.graph().initializer()) {
    if (initializer.data_location() == ::onnx::TensorProto::EXTERNAL) {
      return absl::UnimplementedError(
          absl::StrCat("initializer '", initializer.name(),
                       "' is stored as external data, which is not "
                       "supported; save the model with its weights inside the .onnx file"));
    }
  }
  GTCO_RETURN_IF_ERROR(ApplyOverrides(overrides, model));
  GTCO_RETURN_IF_ERROR(CheckStaticInputs(model));
  GTCO_RETURN_IF_ERROR(CheckAndInferShapes(model));
  graph::Graph graph;
  graph.name = model.graph().name().empty() ? "model" : model.graph().name();
  graph.opset = DefaultOpset(model);
  GTCO_RETURN_IF_ERROR(AddTensors(model, graph));
  GTCO_RETURN_IF_ERROR(AddNodes(model, graph));
  return graph;
}

absl::StatusOr<std::pair<std::string, std::vector<int64_t>>> ParseShapeOverride(
    std::string_view text_view) {
  std::string text(text_view);  // absl::string_view is not std::string_view on this abseil
  std::vector<std::string> parts = absl::StrSplit(text, absl::MaxSplits('=', 1));
  if (parts.size() != 2 || parts[0].empty() || parts[1].empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "bad shape override '", text, "': expected <input>=<dims>, e.g. input=1x128x768"));
  }
  std::vector<int64_t> dims;
  for (const auto& dim_text : absl::StrSplit(parts[1], 'x')) {
    int64_t dim = 0;
    if (!absl::SimpleAtoi(dim_text, &dim) || dim <= 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "bad shape override '", text, "': dims must be positive integers joined by 'x'"));
    }
    dims.push_back(dim);
  }
  return std::make_pair(parts[0], dims);
}

}  // namespace gtco::onnx
