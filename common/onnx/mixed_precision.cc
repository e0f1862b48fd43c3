// The bf16 rewrite of an f32 model's weight MatMuls (mixed_precision.h).
#include "common/onnx/mixed_precision.h"

#include <cstring>
#include <algorithm>
#include <map>
#include <set>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/onnx/tensor_proto.h"
#include "common/util/status.h"
#include "onnx/onnx_pb.h"

namespace gtco::onnx {
namespace {

using ::onnx::NodeProto;
using ::onnx::TensorProto;

/// `value` rounded to the nearest bf16, ties to even (a NaN stays a quiet NaN).
uint16_t ToBf16(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, 4);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((bits >> 16) | 0x40u);
  return static_cast<uint16_t>((bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16);
}

/// A 2-D f32 initializer held in the file (raw_data or float_data): its values; empty otherwise.
std::vector<float> F32Matrix(const TensorProto& tensor) {
  if (tensor.data_type() != TensorProto::FLOAT || tensor.dims_size() != 2 ||
      tensor.data_location() == TensorProto::EXTERNAL) {
    return {};
  }
  const int64_t count = tensor.dims(0) * tensor.dims(1);
  if (count <= 0) return {};
  std::vector<float> values(count);
  if (!tensor.raw_data().empty()) {
    if (static_cast<int64_t>(tensor.raw_data().size()) != count * 4) return {};
    std::memcpy(values.data(), tensor.raw_data().data(), count * 4);
  } else if (tensor.float_data_size() == count) {
    std::copy(tensor.float_data().begin(), tensor.float_data().end(), values.begin());
  } else {
    return {};
  }
  return values;
}

/// A Gemm computing A x B (+ C): no transA, alpha 1, beta 1 (any transB).
bool IsPlainGemm(const NodeProto& node) {
  if (node.op_type() != "Gemm" || node.input_size() < 2) return false;
  for (const auto& attribute : node.attribute()) {
    if (attribute.name() == "transA" && attribute.i() != 0) return false;
    if ((attribute.name() == "alpha" || attribute.name() == "beta") && attribute.f() != 1.0f) {
      return false;
    }
  }
  return true;
}

bool GemmTransB(const NodeProto& node) {
  for (const auto& attribute : node.attribute()) {
    if (attribute.name() == "transB") return attribute.i() != 0;
  }
  return false;
}

NodeProto CastNode(const std::string& name, const std::string& input, const std::string& output,
                   int to) {
  NodeProto cast;
  cast.set_op_type("Cast");
  cast.set_name(name);
  cast.add_input(input);
  cast.add_output(output);
  ::onnx::AttributeProto* attribute = cast.add_attribute();
  attribute->set_name("to");
  attribute->set_type(::onnx::AttributeProto::INT);
  attribute->set_i(to);
  return cast;
}

}  // namespace

absl::StatusOr<Bf16Rewrite> RewriteMatMulsToBf16(std::string_view model_bytes) {
  GTCO_ASSIGN_OR_RETURN(::onnx::ModelProto model, ParseModel(model_bytes));
  for (const auto& opset : model.opset_import()) {
    if ((opset.domain().empty() || opset.domain() == "ai.onnx") && opset.version() < 13) {
      return absl::FailedPreconditionError(absl::StrCat(
          "the model imports ONNX opset ", opset.version(),
          "; bf16 MatMul and Cast need opset 13 or newer (re-export it with a newer opset)"));
    }
  }
  ::onnx::GraphProto* graph = model.mutable_graph();
  std::map<std::string, int> initializer_index;
  for (int i = 0; i < graph->initializer_size(); ++i) {
    initializer_index[graph->initializer(i).name()] = i;
  }
  // Names already used, so that the added tensors and nodes get fresh ones.
  std::set<std::string> used;
  for (const auto& [name, index] : initializer_index) used.insert(name);
  for (const auto& input : graph->input()) used.insert(input.name());
  for (const NodeProto& node : graph->node()) {
    used.insert(node.name());
    for (const std::string& name : node.input()) used.insert(name);
    for (const std::string& name : node.output()) used.insert(name);
  }
  auto fresh = [&used](const std::string& base) {
    std::string name = base;
    for (int suffix = 1; used.count(name); ++suffix) name = absl::StrCat(base, "_", suffix);
    used.insert(name);
    return name;
  };

  Bf16Rewrite result;
  std::map<std::string, std::string> bf16_weight;      // f32 initializer -> its bf16 copy
  std::map<std::string, std::string> bf16_activation;  // computed tensor -> its Cast to bf16
  std::vector<NodeProto> nodes;
  std::vector<TensorProto> added_initializers;
  for (const NodeProto& node : graph->node()) {
    const bool default_domain = node.domain().empty() || node.domain() == "ai.onnx";
    const bool matmul_like = node.op_type() == "MatMul" || node.op_type() == "Gemm";
    if (!default_domain || !matmul_like || node.input_size() < 2 || node.output_size() != 1) {
      if (matmul_like) ++result.kept_f32;
      nodes.push_back(node);
      continue;
    }
    const bool gemm = IsPlainGemm(node);
    const bool candidate = (node.op_type() == "MatMul" ? node.input_size() == 2 : gemm) &&
                           initializer_index.count(node.input(1)) &&
                           !initializer_index.count(node.input(0));
    // A transposed Gemm weight is stored [K, N] in its bf16 copy.
    const bool transposed = gemm && GemmTransB(node);
    const std::string weight_key = absl::StrCat(node.input(1), transposed ? "^T" : "");
    std::vector<float> weights;
    if (candidate && !bf16_weight.count(weight_key)) {
      weights = F32Matrix(graph->initializer(initializer_index[node.input(1)]));
    }
    if (!candidate || (weights.empty() && !bf16_weight.count(weight_key))) {
      ++result.kept_f32;
      nodes.push_back(node);
      continue;
    }
    if (!weights.empty()) {
      const TensorProto& f32 = graph->initializer(initializer_index[node.input(1)]);
      int64_t rows = f32.dims(0), cols = f32.dims(1);
      if (transposed) {
        std::vector<float> t(weights.size());
        for (int64_t r = 0; r < rows; ++r) {
          for (int64_t c = 0; c < cols; ++c) t[c * rows + r] = weights[r * cols + c];
        }
        weights = std::move(t);
        std::swap(rows, cols);
      }
      TensorProto bf16;
      bf16.set_name(fresh(absl::StrCat(f32.name(), transposed ? "_t" : "", "_bf16")));
      bf16.set_data_type(TensorProto::BFLOAT16);
      bf16.add_dims(rows);
      bf16.add_dims(cols);
      std::string raw(weights.size() * 2, '\0');
      for (size_t i = 0; i < weights.size(); ++i) {
        const uint16_t half = ToBf16(weights[i]);
        std::memcpy(raw.data() + 2 * i, &half, 2);
      }
      bf16.set_raw_data(std::move(raw));
      bf16_weight[weight_key] = bf16.name();
      added_initializers.push_back(std::move(bf16));
      ++result.weights;
    }
    const std::string& a = node.input(0);
    if (!bf16_activation.count(a)) {
      const std::string cast_out = fresh(absl::StrCat(a, "_bf16"));
      nodes.push_back(CastNode(fresh(absl::StrCat(node.name(), "_cast_a_bf16")), a, cast_out,
                               TensorProto::BFLOAT16));
      bf16_activation[a] = cast_out;
    }
    // A Gemm becomes MatMul, then Add of its C after the Cast back to f32.
    NodeProto matmul;
    matmul.set_op_type("MatMul");
    matmul.set_name(gemm ? fresh(absl::StrCat(node.name(), "_matmul")) : node.name());
    const std::string product = fresh(absl::StrCat(node.output(0), "_bf16"));
    matmul.add_input(bf16_activation[a]);
    matmul.add_input(bf16_weight[weight_key]);
    matmul.add_output(product);
    nodes.push_back(std::move(matmul));
    const bool add_c = gemm && node.input_size() > 2 && !node.input(2).empty();
    const std::string product_f32 =
        add_c ? fresh(absl::StrCat(node.output(0), "_f32")) : node.output(0);
    nodes.push_back(CastNode(fresh(absl::StrCat(node.name(), "_cast_f32")), product,
                             product_f32, TensorProto::FLOAT));
    if (add_c) {
      NodeProto add;
      add.set_op_type("Add");
      add.set_name(fresh(absl::StrCat(node.name(), "_add_c")));
      add.add_input(product_f32);
      add.add_input(node.input(2));
      add.add_output(node.output(0));
      nodes.push_back(std::move(add));
    }
    ++result.matmuls;
  }
  if (result.matmuls == 0) {
    return absl::FailedPreconditionError(
        "no MatMul or plain Gemm with a 2-D f32 weight initializer to compute in bf16 "
        "(convolutions and MatMuls of two computed tensors stay f32); nothing to rewrite");
  }
  // The f32 weights nothing reads any more go.
  std::set<std::string> read;
  for (const NodeProto& node : nodes) {
    for (const std::string& name : node.input()) read.insert(name);
  }
  for (const auto& output : graph->output()) read.insert(output.name());
  google::protobuf::RepeatedPtrField<TensorProto> kept;
  std::set<std::string> replaced;  // f32 weights that have a bf16 copy
  for (const auto& [key, copy] : bf16_weight) replaced.insert(key.substr(0, key.rfind("^T")));
  for (TensorProto& initializer : *graph->mutable_initializer()) {
    if (!replaced.count(initializer.name()) || read.count(initializer.name())) {
      *kept.Add() = std::move(initializer);
    }
  }
  for (TensorProto& added : added_initializers) *kept.Add() = std::move(added);
  graph->mutable_initializer()->Swap(&kept);
  // Graph inputs that named a removed initializer (IR < 4 models list them) go too.
  google::protobuf::RepeatedPtrField<::onnx::ValueInfoProto> inputs;
  for (auto& input : *graph->mutable_input()) {
    if (!replaced.count(input.name()) || read.count(input.name())) {
      *inputs.Add() = std::move(input);
    }
  }
  graph->mutable_input()->Swap(&inputs);
  graph->clear_node();
  for (NodeProto& node : nodes) *graph->add_node() = std::move(node);
  if (!model.SerializeToString(&result.model_bytes)) {
    return absl::InternalError("the rewritten model does not serialize (over 2 GiB?)");
  }
  return result;
}

}  // namespace gtco::onnx
