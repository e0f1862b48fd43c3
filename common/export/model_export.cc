// Model export: plan -> steps (kernels and data movement) -> memory plan -> AOT code -> artifact.
#include "common/export/model_export.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <map>
#include <optional>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#ifdef GTCO_EXPORT_HAS_LLVM
#include "common/codegen/llvm/aot.h"
#include "common/codegen/llvm/llvm_codegen.h"
#endif
#include "common/codegen/cuda/nvrtc.h"
#include "common/graph/bf16x3_split.h"
#include "common/graph/data_movement.h"
#include "common/graph/fusion_planner.h"
#include "common/graph/op_support.h"
#include "common/graph/reference_node.h"
#include "common/graph/shape_inference.h"
#include "common/kernels/build_program.h"
#include "common/kernels/prepack.h"
#include "common/kernels/registry.h"
#include "common/onnx/model_analysis.h"
#include "common/util/status.h"
#include "common/verify/model_verification.h"
#include "runtime/artifact.h"
#include "runtime/cuda_arch.h"
#include "runtime/cuda_steps.h"
#include "runtime/reference_ops.h"
#include "runtime/strides.h"

namespace gtco::exporter {
namespace {

using graph::Graph;
using graph::Node;
using runtime::ElemType;

constexpr int64_t kAlign = 64;

/// What a build without the LLVM code generator answers a CPU export.
[[maybe_unused]] absl::Status NoLlvm() {
  return absl::FailedPreconditionError(
      "this build has no LLVM code generator: it exports CUDA artifacts only (--target cuda)");
}

int64_t RoundUp(int64_t value, int64_t align) { return (value + align - 1) / align * align; }

absl::StatusOr<ElemType> RuntimeType(graph::ElemType type, const std::string& tensor) {
  switch (type) {
    case graph::ElemType::kFloat32:
      return ElemType::kF32;
    case graph::ElemType::kBFloat16:
      return ElemType::kBF16;
    case graph::ElemType::kInt8:
      return ElemType::kI8;
    case graph::ElemType::kUInt8:
      return ElemType::kU8;
    case graph::ElemType::kInt32:
      return ElemType::kI32;
    case graph::ElemType::kInt64:
      return ElemType::kI64;
    case graph::ElemType::kBool:
      return ElemType::kBool;
    default:
      return absl::UnimplementedError(absl::StrCat("tensor '", tensor, "' has element type ",
                                                   graph::ElemTypeName(type),
                                                   ", which the runtime does not store"));
  }
}

/// The bytes of constant `tensor` in its element type.
std::string WeightBytes(const graph::Tensor& tensor, ElemType type) {
  const int64_t count = tensor.NumElements();
  std::string bytes(count * runtime::ElemSize(type), '\0');
  for (int64_t i = 0; i < count; ++i) {
    char* at = bytes.data() + i * runtime::ElemSize(type);
    switch (type) {
      case ElemType::kF32: {
        const float value = static_cast<float>(tensor.ValueAsDouble(i));
        std::memcpy(at, &value, 4);
        break;
      }
      case ElemType::kBF16: {
        // Stored exactly as f32 first; the top half of an f32 holding a bf16 value is the bf16.
        const float value = static_cast<float>(tensor.ValueAsDouble(i));
        uint32_t bits;
        std::memcpy(&bits, &value, 4);
        const uint16_t half = static_cast<uint16_t>(bits >> 16);
        std::memcpy(at, &half, 2);
        break;
      }
      case ElemType::kI32: {
        const int32_t value = static_cast<int32_t>(tensor.ValueAsInt(i));
        std::memcpy(at, &value, 4);
        break;
      }
      case ElemType::kI64: {
        const int64_t value = tensor.ValueAsInt(i);
        std::memcpy(at, &value, 8);
        break;
      }
      default:
        *at = static_cast<char>(tensor.ValueAsInt(i));
        break;
    }
  }
  return bytes;
}

/// A step before ordering: what it reads and writes by graph tensor name.
struct PendingStep {
  runtime::StepSpec spec;
  std::vector<std::string> inputs;
  std::vector<std::string> outputs;  ///< one, except DynamicQuantizeLinear's three
};

class Exporter {
 public:
  Exporter(const Graph& graph, const ExportOptions& options, const ScheduleLookup& lookup)
      : graph_(graph), options_(options), lookup_(lookup) {}

  absl::StatusOr<ExportResult> Run(const std::vector<graph::PlannedWorkload>& planned);

 private:
  void Progress(const std::string& message) const {
    if (options_.progress) options_.progress(message);
  }
  std::string Root(const std::string& name) const {
    auto it = alias_of_.find(name);
    return it == alias_of_.end() ? name : Root(it->second);
  }
  absl::Status AddDataStep(const Node& node);
  /// A "reference" step running `node` (marked by graph::MarkFallbacks) through the runtime's
  /// reference op library. UNIMPLEMENTED for CUDA artifacts and for an unnamed output before a
  /// named one.
  absl::Status AddFallbackStep(const Node& node);
  /// Pairs QuantizeLinear -> DequantizeLinear of the same scale and zero point (a QDQ model's
  /// "fake quantization" of an f32 tensor): such a DequantizeLinear becomes one fake_quantize
  /// step from the QuantizeLinear's input, and a QuantizeLinear all of whose readers are such
  /// DequantizeLinears gets no step.
  void FindFakeQuantization();
  std::map<std::string, const Node*> fake_quantize_;  ///< DequantizeLinear -> its QuantizeLinear
  std::set<std::string> quantize_unneeded_;           ///< QuantizeLinear nodes with no step
  absl::Status AddKernels(const std::vector<graph::PlannedWorkload>& planned);
  /// CPU: each Slice step whose output (through reshapes) one Transpose step alone reads becomes
  /// part of that step, one "strided" copy from the slice's input (ViT's Q, K and V, sliced out
  /// of the QKV projection, reshaped into heads and transposed: one copy each instead of two).
  void MergeSliceTransposes();
  /// Stores each matmul's constant B (f32; bf16 and 8-bit for the AMX kernels), and each
  /// channel-vectorized conv's weights, in the panels its kernel streams
  /// (kernels::PrepackConstantB) when every weight that kernel reads is read by it alone; the
  /// kernel's trace then says so.
  absl::Status PrepackWeights();
  absl::StatusOr<std::vector<PendingStep>> Ordered() const;
  absl::Status BuildTensors(const std::vector<PendingStep>& steps);
  absl::StatusOr<std::string> CompileCode();
  /// CUDA: every kernel's cubin and the data-movement module's, back to back (64-byte aligned),
  /// their slices recorded in the manifest.
  absl::StatusOr<std::string> CompileCudaCode(const target::HardwareInfo& hw);
  bool cuda() const { return options_.target == target::Target::kCuda; }

  const Graph& graph_;
  const ExportOptions& options_;
  const ScheduleLookup& lookup_;
#ifdef GTCO_EXPORT_HAS_LLVM
  codegen::AotTarget target_;
#endif
  std::vector<PendingStep> steps_;
  std::map<std::string, std::string> alias_of_;  ///< reshape-like output -> its input
  struct Kernel {
    ir::Workload workload;
    std::string key;
    runtime::KernelSpec spec;
    std::string module;  ///< LLVM bitcode
  };
  std::vector<Kernel> kernels_;
  std::map<std::string, int> kernel_of_key_;
  struct Prepacked {
    std::vector<float> data;
    std::vector<int64_t> shape;
  };
  std::map<std::string, Prepacked> prepacked_;  ///< weight name -> its pre-packed layout
  runtime::Manifest manifest_;
  std::string weights_;
  double estimated_seconds_ = 0.0;
};

absl::Status Exporter::AddDataStep(const Node& node) {
  const std::string& op = node.op_type;
  auto unimplemented = [&](const std::string& why) {
    return absl::UnimplementedError(
        absl::StrCat("export: ONNX op '", op, "' at node '", node.name, "' ", why));
  };
  const graph::Tensor& in = graph_.tensor(node.inputs.at(0));
  const graph::Tensor& out = graph_.tensor(node.outputs.at(0));
  if (op == "Identity" || op == "Reshape" || op == "Flatten" || op == "Squeeze" ||
      op == "Unsqueeze" || (op == "Cast" && in.type == out.type)) {
    if (graph_.IsConstant(node.inputs[0])) return unimplemented("reshapes a constant");
    alias_of_[node.outputs[0]] = node.inputs[0];
    return absl::OkStatus();
  }
  if (quantize_unneeded_.count(node.name)) return absl::OkStatus();
  PendingStep step;
  step.spec.node = node.name;
  step.outputs = {node.outputs[0]};
  step.inputs = {node.inputs[0]};
  const int64_t rank = static_cast<int64_t>(in.shape.size());
  if (cuda() && std::max(rank, static_cast<int64_t>(out.shape.size())) > runtime::kCudaMaxRank) {
    return unimplemented(absl::StrCat("has more than ", runtime::kCudaMaxRank,
                                      " dimensions, which the CUDA steps do not take"));
  }
  const bool pairs_cast = node.domain == graph::kGtcoInternalDomain && op == graph::kBf16PairsOp;
  if (node.domain == graph::kGtcoInternalDomain && (op == graph::kBf16x3SplitOp || pairs_cast)) {
    if (cuda()) {
      return unimplemented(pairs_cast
                               ? "(the pair-layout cast of --precision bf16's convs) has no CUDA "
                                 "step: the pair layout is for CPU conv kernels"
                               : "(the split of --precision bf16x3) has no CUDA step: bf16x3 is "
                                 "for CPUs with AMX");
    }
    step.spec.op = pairs_cast ? "cast_bf16_pairs" : "split_bf16x3";
    if (node.HasAttr(graph::kPairPadsAttr)) {  // the pair layout of the Convs that read it
      if (!pairs_cast) step.spec.op = "split_bf16x3_pairs";
      step.spec.params = node.IntsAttr(graph::kPairPadsAttr);  // then the strides, if not 1
      if (node.HasAttr(graph::kPairStridesAttr)) {
        for (int64_t stride : node.IntsAttr(graph::kPairStridesAttr)) {
          step.spec.params.push_back(stride);
        }
      }
    }
  } else if (op == "Transpose") {
    GTCO_ASSIGN_OR_RETURN(std::vector<int64_t> perm, graph::TransposePerm(node, rank));
    step.spec.op = "transpose";
    step.spec.params = perm;
  } else if (op == "Cast") {
    step.spec.op = "cast";
  } else if (op == "Gather") {
    GTCO_ASSIGN_OR_RETURN(int64_t axis, graph::NormalizeAxis(node, node.IntAttr("axis", 0), rank));
    step.spec.op = "gather";
    step.spec.params = {axis};
    step.inputs.push_back(node.inputs.at(1));
  } else if (op == "Slice") {
    GTCO_ASSIGN_OR_RETURN(graph::SliceWindow window, graph::ComputeSliceWindow(node, graph_));
    step.spec.op = "slice";
    for (int64_t dim = 0; dim < rank; ++dim) {
      step.spec.params.push_back(window.first[dim]);
      step.spec.params.push_back(window.step[dim]);
    }
  } else if (op == "Equal" || op == "Where") {
    step.spec.op = op == "Equal" ? "equal" : "where";
    step.inputs = node.inputs;
  } else if (op == "Expand") {
    step.spec.op = "expand";  // the shape input is constant: the output shape says it all
  } else if (op == "Concat") {
    GTCO_ASSIGN_OR_RETURN(int64_t axis, graph::NormalizeAxis(node, node.IntAttr("axis", 0), rank));
    step.spec.op = "concat";
    step.spec.params = {axis};
    step.inputs = node.inputs;
  } else if (op == "DynamicQuantizeLinear" && !cuda()) {
    step.spec.op = "dynamic_quantize";
    step.outputs = node.outputs;
    for (const std::string& output : step.outputs) {
      if (output.empty()) return unimplemented("leaves an output unnamed");
    }
  } else if ((op == "DequantizeLinear" || op == "QuantizeLinear") && !cuda()) {
    const Node* pair = nullptr;
    if (auto found = fake_quantize_.find(node.name); found != fake_quantize_.end()) {
      pair = found->second;  // computed from the QuantizeLinear's f32 input in one step
    }
    const Node& source = pair != nullptr ? *pair : node;
    const graph::Tensor& scale = graph_.tensor(node.inputs.at(1));
    int64_t axis = -1;  // per tensor
    if (scale.NumElements() != 1) {
      GTCO_ASSIGN_OR_RETURN(axis, graph::NormalizeAxis(node, node.IntAttr("axis", 1), rank));
    }
    step.spec.op = pair != nullptr          ? "fake_quantize"
                   : op == "QuantizeLinear" ? "quantize"
                                            : "dequantize";
    step.spec.params = {axis};
    step.inputs = {source.inputs[0], node.inputs[1]};
    if (node.inputs.size() > 2 && !node.inputs[2].empty()) step.inputs.push_back(node.inputs[2]);
    if (pair != nullptr) {  // the integer type: that of the tensor the pair skips
      const graph::ElemType integer = graph_.tensor(node.inputs[0]).type;
      if (integer != graph::ElemType::kUInt8 && integer != graph::ElemType::kInt8) {
        return unimplemented("fake-quantizes to a type other than u8 and i8");
      }
      step.spec.params.push_back(integer == graph::ElemType::kInt8 ? 1 : 0);
    }
  } else if (op == "DynamicQuantizeLinear" || op == "DequantizeLinear" || op == "QuantizeLinear") {
    return unimplemented("has no CUDA step (the CPU runtime runs it: export with --target cpu)");
  } else {
    return unimplemented("has no runtime step yet");
  }
  steps_.push_back(std::move(step));
  return absl::OkStatus();
}

absl::Status Exporter::AddFallbackStep(const Node& node) {
  if (cuda()) {
    return absl::UnimplementedError(absl::StrCat("export: ONNX op '", node.op_type, "' at node '",
                                                 node.name,
                                                 "' runs as a fallback step on CPU, and CUDA "
                                                 "artifacts have none: export with --target cpu"));
  }
  Node plain = node;
  plain.attributes.erase(graph::kFallbackAttr);
  GTCO_ASSIGN_OR_RETURN(runtime::reference::Node reference,
                        graph::ReferenceNode(plain, graph_.opset));
  PendingStep step;
  step.spec.op = "reference";
  step.spec.node = node.name;
  step.spec.reference = runtime::reference::NodeToJson(reference);
  step.inputs = node.inputs;  // "" for an omitted optional input
  size_t used = node.outputs.size();
  while (used > 0 && node.outputs[used - 1].empty()) --used;
  for (size_t i = 0; i < used; ++i) {
    if (node.outputs[i].empty()) {
      return absl::UnimplementedError(absl::StrCat("export: fallback node '", node.name, "' (",
                                                   node.op_type, ") leaves output ", i,
                                                   " unnamed before a named one"));
    }
    step.outputs.push_back(node.outputs[i]);
  }
  if (step.outputs.empty()) return absl::OkStatus();  // nothing reads it
  steps_.push_back(std::move(step));
  return absl::OkStatus();
}

void Exporter::FindFakeQuantization() {
  std::map<std::string, const Node*> producer;
  for (const Node& node : graph_.nodes) {
    for (const std::string& output : node.outputs) producer[output] = &node;
  }
  const std::map<std::string, std::vector<int>> consumers = graph_.ConsumerMap();
  auto same = [&](const Node& q, const Node& dq, size_t input) {
    const bool q_has = q.inputs.size() > input && !q.inputs[input].empty();
    const bool dq_has = dq.inputs.size() > input && !dq.inputs[input].empty();
    if (q_has != dq_has) return false;
    if (!q_has || q.inputs[input] == dq.inputs[input]) return true;
    const graph::Tensor& a = graph_.tensor(q.inputs[input]);
    const graph::Tensor& b = graph_.tensor(dq.inputs[input]);
    return a.is_constant && b.is_constant && a.type == b.type && a.shape == b.shape &&
           a.float_data == b.float_data && a.int_data == b.int_data;
  };
  for (const Node& node : graph_.nodes) {
    if (node.op_type != "DequantizeLinear" || node.inputs.size() < 2) continue;
    auto made = producer.find(node.inputs[0]);
    if (made == producer.end()) continue;
    const Node& q = *made->second;
    if (q.op_type != "QuantizeLinear" || q.inputs.size() < 2 ||
        q.IntAttr("axis", 1) != node.IntAttr("axis", 1) || !same(q, node, 1) || !same(q, node, 2)) {
      continue;
    }
    fake_quantize_[node.name] = &q;
  }
  for (const Node& node : graph_.nodes) {
    if (node.op_type != "QuantizeLinear" || node.outputs.empty()) continue;
    const std::string& out = node.outputs[0];
    if (std::find(graph_.outputs.begin(), graph_.outputs.end(), out) != graph_.outputs.end()) {
      continue;
    }
    auto readers = consumers.find(out);
    bool all_fake = readers != consumers.end() && !readers->second.empty();
    for (int reader : all_fake ? readers->second : std::vector<int>{}) {
      all_fake = all_fake && fake_quantize_.count(graph_.nodes[reader].name) > 0;
    }
    if (all_fake) quantize_unneeded_.insert(node.name);
  }
}

absl::Status Exporter::AddKernels(const std::vector<graph::PlannedWorkload>& planned) {
  GTCO_ASSIGN_OR_RETURN(const target::HardwareInfo hw, ExportHardware(options_));
  std::vector<std::string> untuned;
  for (const graph::PlannedWorkload& item : planned) {
    const std::string key = item.workload.Key();
    auto [it, added] = kernel_of_key_.emplace(key, static_cast<int>(kernels_.size()));
    if (added) {
      Kernel kernel{item.workload, key, {}, {}};
      kernel.spec.entry = absl::StrCat("gtco_k", kernels_.size());
      kernel.spec.workload_key = key;
      kernel.spec.description = item.workload.Description();
      kernel.spec.flops = item.workload.Flops();
      kernel.spec.min_bytes = item.workload.MinBytes();
      GTCO_ASSIGN_OR_RETURN(std::optional<ChosenSchedule> chosen, lookup_(item.workload, key));
      if (chosen.has_value()) {
        kernel.spec.tuned = true;
        kernel.spec.trace = chosen->trace.ToString();
        kernel.spec.mapping = chosen->mapping;
        kernel.spec.hardware = chosen->hardware;
        kernel.spec.worker = chosen->worker;
        kernel.spec.median_seconds = chosen->median_seconds;
      } else {
        absl::StatusOr<schedule::SearchSpace> space = kernels::CreateSpace(item.workload, hw);
        if (!space.ok()) {
          // No mapping of the target computes this workload (e.g. an integer matmul on CUDA).
          return absl::UnimplementedError(absl::StrCat(
              "export: node '", absl::StrJoin(item.node_names, "+"), "' (", kernel.spec.description,
              ") has no '", target::TargetName(hw.target), "' kernel: ", space.status().message()));
        }
        kernel.spec.trace = space->DefaultTrace().ToString();
        kernel.spec.mapping = space->mapping();
        untuned.push_back(absl::StrCat(kernel.spec.description, " (", key, ")"));
      }
      kernels_.push_back(std::move(kernel));
    }
    PendingStep step;
    step.spec.op = "kernel";
    step.spec.node = absl::StrJoin(item.node_names, "+");
    step.spec.kernel = it->second;
    estimated_seconds_ += kernels_[it->second].spec.median_seconds;
    step.inputs = item.input_tensors;
    step.outputs = {item.output_tensor};
    for (size_t index = 0; index < step.inputs.size(); ++index) {
      if (step.inputs[index].empty()) {
        return absl::InternalError(absl::StrCat("export: workload at '", step.spec.node,
                                                "' has no tensor bound to input ", index));
      }
    }
    steps_.push_back(std::move(step));
  }
  if (!untuned.empty() && options_.require_tuned) {
    return absl::FailedPreconditionError(absl::StrCat(
        untuned.size(), " workload", untuned.size() > 1 ? "s have" : " has",
        " no record for this hardware (--require-tuned): ", absl::StrJoin(untuned, "; ")));
  }
  for (const std::string& name : untuned) {
    manifest_.warnings.push_back(absl::StrCat("untuned, default schedule: ", name));
  }
  return absl::OkStatus();
}

/// The strides a row-major `new_shape` view of the strided view (`old_shape`, `old_strides`) of
/// the same elements reads at, or nullopt where the reshape would merge dims that are not
/// contiguous in the view (NumPy's no-copy reshape rule). Axes of size 1 get stride 0.
std::optional<std::vector<int64_t>> ReshapedStrides(const std::vector<int64_t>& old_shape,
                                                    const std::vector<int64_t>& old_strides,
                                                    const std::vector<int64_t>& new_shape) {
  std::vector<int64_t> dims, strides;
  for (size_t i = 0; i < old_shape.size(); ++i) {
    if (old_shape[i] == 1) continue;
    dims.push_back(old_shape[i]);
    strides.push_back(old_strides[i]);
  }
  std::vector<size_t> axes;  // new_shape's axes of size > 1
  for (size_t j = 0; j < new_shape.size(); ++j) {
    if (new_shape[j] != 1) axes.push_back(j);
  }
  std::vector<int64_t> result(new_shape.size(), 0);
  size_t oi = 0, ni = 0;
  while (oi < dims.size() && ni < axes.size()) {
    // The smallest groups of old dims [oi, oj) and new axes [ni, nj) with equal products.
    size_t oj = oi + 1, nj = ni + 1;
    int64_t old_count = dims[oi], new_count = new_shape[axes[ni]];
    while (old_count != new_count) {
      if (new_count < old_count) {
        if (nj == axes.size()) return std::nullopt;
        new_count *= new_shape[axes[nj++]];
      } else {
        if (oj == dims.size()) return std::nullopt;
        old_count *= dims[oj++];
      }
    }
    for (size_t k = oi; k + 1 < oj; ++k) {
      if (strides[k] != dims[k + 1] * strides[k + 1]) return std::nullopt;
    }
    result[axes[nj - 1]] = strides[oj - 1];
    for (size_t k = nj - 1; k > ni; --k) {
      result[axes[k - 1]] = result[axes[k]] * new_shape[axes[k]];
    }
    oi = oj;
    ni = nj;
  }
  if (oi != dims.size() || ni != axes.size()) return std::nullopt;
  return result;
}

void Exporter::MergeSliceTransposes() {
  std::map<std::string, int> reads;  // root tensor -> reads by steps (graph outputs count twice)
  for (const PendingStep& step : steps_) {
    for (const std::string& input : step.inputs) ++reads[Root(input)];
  }
  for (const std::string& output : graph_.outputs) reads[Root(output)] += 2;
  std::map<std::string, size_t> slice_of;  // a slice step's output -> the step
  for (size_t i = 0; i < steps_.size(); ++i) {
    if (steps_[i].spec.op == "slice") slice_of[steps_[i].outputs[0]] = i;
  }
  std::set<size_t> merged;
  for (PendingStep& transpose : steps_) {
    if (transpose.spec.op != "transpose") continue;
    const std::string sliced = Root(transpose.inputs[0]);
    auto found = slice_of.find(sliced);
    if (found == slice_of.end() || reads[sliced] != 1 || merged.count(found->second)) continue;
    const PendingStep& slice = steps_[found->second];
    int64_t base = 0;
    const std::vector<int64_t> view =
        runtime::SliceStrides(graph_.tensor(slice.inputs[0]).shape, slice.spec.params, &base);
    std::optional<std::vector<int64_t>> reshaped = ReshapedStrides(
        graph_.tensor(sliced).shape, view, graph_.tensor(transpose.inputs[0]).shape);
    if (!reshaped) continue;
    std::vector<int64_t> params = {base};
    for (int64_t axis : transpose.spec.params) params.push_back((*reshaped)[axis]);
    transpose.spec.op = "strided";
    transpose.spec.params = std::move(params);
    transpose.spec.node = slice.spec.node + "+" + transpose.spec.node;
    transpose.inputs = {slice.inputs[0]};
    merged.insert(found->second);
  }
  for (auto it = merged.rbegin(); it != merged.rend(); ++it) steps_.erase(steps_.begin() + *it);
}

absl::Status Exporter::PrepackWeights() {
  // Which kernels (-1: anything else) read each constant.
  std::map<std::string, std::set<int>> readers;
  for (const PendingStep& step : steps_) {
    for (const std::string& input : step.inputs) {
      const std::string root = Root(input);
      if (graph_.IsConstant(root))
        readers[root].insert(step.spec.op == "kernel" ? step.spec.kernel : -1);
    }
  }
  for (const std::string& output : graph_.outputs) readers[Root(output)].insert(-1);
  for (size_t index = 0; index < kernels_.size(); ++index) {
    Kernel& kernel = kernels_[index];
    const ir::AnchorKind anchor = kernel.workload.anchor;
    if (anchor != ir::AnchorKind::kMatMul && anchor != ir::AnchorKind::kConv) continue;
    std::set<std::string> weights;
    bool all_constant = true;
    for (const PendingStep& step : steps_) {
      if (step.spec.op != "kernel" || step.spec.kernel != static_cast<int>(index)) continue;
      const std::string root = Root(step.inputs.at(1));
      const graph::Tensor* tensor = graph_.FindTensor(root);
      // f32 weights (blocked FMA kernels, channel convs), bf16 and 8-bit ones (AMX kernels).
      const bool floating = tensor != nullptr && (tensor->type == graph::ElemType::kFloat32 ||
                                                  tensor->type == graph::ElemType::kBFloat16);
      const bool integer = tensor != nullptr && (tensor->type == graph::ElemType::kInt8 ||
                                                 tensor->type == graph::ElemType::kUInt8);
      all_constant =
          all_constant && (floating || integer) && graph_.IsConstant(root) &&
          readers[root] == std::set<int>{static_cast<int>(index)} &&
          static_cast<int64_t>(floating ? tensor->float_data.size() : tensor->int_data.size()) ==
              tensor->NumElements();
      weights.insert(root);
    }
    GTCO_ASSIGN_OR_RETURN(schedule::Trace trace, schedule::Trace::Parse(kernel.spec.trace));
    if (!all_constant || weights.empty()) {
      // A schedule searched with pre-packed weights (the channel-vectorized conv) whose weights
      // are not one constant of this kernel's own packs them at run time instead (pack_b 1).
      if (kernels::ReadsPrepackedInput(trace)) {
        kernel.spec.trace = kernels::WithPackB(trace, 1).ToString();
      }
      continue;
    }
    std::string packed_trace;
    for (const std::string& name : weights) {
      const graph::Tensor& tensor = graph_.tensor(name);
      std::vector<float> values(static_cast<size_t>(tensor.NumElements()));
      for (size_t i = 0; i < values.size(); ++i) {  // exact: f32, bf16 and 8-bit values
        values[i] = static_cast<float>(tensor.ValueAsDouble(static_cast<int64_t>(i)));
      }
      GTCO_ASSIGN_OR_RETURN(std::optional<kernels::PrepackedOperand> packed,
                            kernels::PrepackConstantB(kernel.workload, trace, values));
      if (!packed.has_value()) break;  // this schedule reads B as it is
      packed_trace = packed->trace.ToString();
      prepacked_[name] = Prepacked{std::move(packed->data), std::move(packed->shape)};
    }
    if (!packed_trace.empty()) kernel.spec.trace = packed_trace;
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<PendingStep>> Exporter::Ordered() const {
  std::set<std::string> ready;
  for (const std::string& input : graph_.inputs) ready.insert(input);
  for (const auto& [name, tensor] : graph_.tensors()) {
    if (tensor.is_constant) ready.insert(name);
  }
  std::vector<PendingStep> ordered;
  std::vector<bool> done(steps_.size(), false);
  for (size_t placed = 0; placed < steps_.size();) {
    bool progress = false;
    for (size_t index = 0; index < steps_.size(); ++index) {
      if (done[index]) continue;
      const bool inputs_ready = std::all_of(
          steps_[index].inputs.begin(), steps_[index].inputs.end(),
          [&](const std::string& name) { return name.empty() || ready.count(Root(name)) > 0; });
      if (!inputs_ready) continue;
      ordered.push_back(steps_[index]);
      ready.insert(steps_[index].outputs.begin(), steps_[index].outputs.end());
      done[index] = true;
      ++placed;
      progress = true;
    }
    if (!progress) {
      for (size_t index = 0; index < steps_.size(); ++index) {
        if (done[index]) continue;
        return absl::InternalError(absl::StrCat("export: step '", steps_[index].spec.node,
                                                "' reads a tensor no step produces"));
      }
    }
  }
  return ordered;
}

/// Steps [first, last] during which a storage holds a live tensor.
struct Live {
  int64_t bytes = 0;
  bool used = false;
  int first = 0, last = 0;
};

/// A storage placed inside another: `parent` (-1: placed on its own) at byte `at` of it.
struct Inside {
  int parent = -1;
  int64_t at = 0;
};

/// Storages that are views of another, so the step between them copies nothing (runtime/model.cc
/// skips bytes already in place):
///  - the inputs of a Concat along an axis with nothing but 1s before it (the channels of a
///    batch-1 image, the tokens of a batch-1 sequence): each input is one contiguous run of the
///    output, so its producer writes it there (SqueezeNet's and GoogLeNet's channel concats,
///    ViT's class token before the patches). Only when every input of that concat qualifies:
///    computed (not a weight or a model input), stored alone and exactly (no larger tensor shares
///    its storage), not placed inside another storage already, at a 64-byte aligned run;
///  - the output of a Slice that is one contiguous 64-byte aligned run of its computed input (a
///    channel split), stored alone and exactly, no model output: it is read where it lies.
/// The outermost storage's life is stretched over everything placed inside it.
std::vector<Inside> PlaceViews(const runtime::Manifest& m, std::vector<Live>* lives) {
  std::vector<Inside> inside(lives->size());
  std::set<int> model_inputs, model_outputs;
  for (int input : m.inputs) model_inputs.insert(m.tensors[input].storage);
  for (int output : m.outputs) model_outputs.insert(m.tensors[output].storage);
  for (const runtime::StepSpec& step : m.steps) {
    if (step.op == "slice" && step.outputs.size() == 1) {
      const runtime::TensorSpec& in = m.tensors[step.inputs[0]];
      const runtime::TensorSpec& out = m.tensors[step.outputs[0]];
      int64_t base = 0;
      const std::vector<int64_t> strides = runtime::SliceStrides(in.shape, step.params, &base);
      const int64_t at = base * runtime::ElemSize(out.dtype);
      const int storage = out.storage;
      if (!in.weight && !model_inputs.count(in.storage) && !model_outputs.count(storage) &&
          runtime::IsContiguousView(out.shape, strides) && at % kAlign == 0 &&
          inside[storage].parent < 0 && storage != in.storage &&
          (*lives)[storage].bytes == out.Bytes()) {
        inside[storage] = {in.storage, at};
      }
      continue;
    }
    if (step.op != "concat" || step.outputs.size() != 1) continue;
    const runtime::TensorSpec& out = m.tensors[step.outputs[0]];
    const int64_t axis = step.params.at(0);
    int64_t outer = 1;
    for (int64_t dim = 0; dim < axis; ++dim) outer *= out.shape[dim];
    if (outer != 1 || out.weight) continue;
    std::vector<std::pair<int, int64_t>> runs;  // input storage, its byte offset in the output
    std::set<int> seen;
    int64_t at = 0;
    bool in_place = true;
    for (int input : step.inputs) {
      const runtime::TensorSpec& part = m.tensors[input];
      const int storage = part.storage;
      in_place = in_place && !part.weight && storage != out.storage &&
                 !model_inputs.count(storage) && inside[storage].parent < 0 &&
                 seen.insert(storage).second && (*lives)[storage].bytes == part.Bytes() &&
                 at % kAlign == 0;
      if (!in_place) break;
      runs.push_back({storage, at});
      at += part.Bytes();
    }
    if (!in_place || at != out.Bytes()) continue;
    for (const auto& [storage, offset] : runs) inside[storage] = {out.storage, offset};
  }
  // Each top storage lives as long as everything placed inside it.
  for (size_t storage = 0; storage < inside.size(); ++storage) {
    if (inside[storage].parent < 0) continue;
    int top = inside[storage].parent;
    while (inside[top].parent >= 0) top = inside[top].parent;
    Live& outer_life = (*lives)[top];
    const Live& life = (*lives)[storage];
    if (!life.used) continue;
    outer_life.first = outer_life.used ? std::min(outer_life.first, life.first) : life.first;
    outer_life.last = outer_life.used ? std::max(outer_life.last, life.last) : life.last;
    outer_life.used = true;
  }
  return inside;
}

absl::Status Exporter::BuildTensors(const std::vector<PendingStep>& steps) {
  std::map<std::string, int> index_of;
  std::map<std::string, int> storage_of_root;  // root tensor -> storage
  std::vector<Live> lives;
  auto tensor_index = [&](const std::string& name) -> absl::StatusOr<int> {
    auto found = index_of.find(name);
    if (found != index_of.end()) return found->second;
    const graph::Tensor& tensor = graph_.tensor(name);
    runtime::TensorSpec spec;
    spec.name = name;
    GTCO_ASSIGN_OR_RETURN(spec.dtype, RuntimeType(tensor.type, name));
    spec.shape = tensor.shape;
    const std::string root = Root(name);
    if (graph_.IsConstant(root)) {
      const graph::Tensor& constant = graph_.tensor(root);
      spec.weight = true;
      weights_.resize(RoundUp(static_cast<int64_t>(weights_.size()), kAlign), '\0');
      spec.weight_offset = static_cast<int64_t>(weights_.size());
      auto packed = prepacked_.find(root);
      if (packed != prepacked_.end()) {
        // The packed values, stored in the weight's own element type.
        graph::Tensor layout;
        layout.type = constant.type;
        layout.shape = packed->second.shape;
        const bool integer =
            constant.type == graph::ElemType::kInt8 || constant.type == graph::ElemType::kUInt8;
        for (const float value : packed->second.data) {
          if (integer) {
            layout.int_data.push_back(static_cast<int64_t>(value));
          } else {
            layout.float_data.push_back(value);
          }
        }
        spec.shape = packed->second.shape;
        weights_ += WeightBytes(layout, spec.dtype);
      } else {
        weights_ += WeightBytes(constant, spec.dtype);
      }
    } else {
      auto [slot, added] = storage_of_root.emplace(root, static_cast<int>(lives.size()));
      if (added) lives.push_back({});
      spec.storage = slot->second;
      lives[spec.storage].bytes = std::max(lives[spec.storage].bytes, spec.Bytes());
    }
    const int index = static_cast<int>(manifest_.tensors.size());
    manifest_.tensors.push_back(std::move(spec));
    index_of[name] = index;
    return index;
  };
  auto touch = [&](int tensor, int step) {
    const runtime::TensorSpec& spec = manifest_.tensors[tensor];
    if (spec.weight) return;
    Live& live = lives[spec.storage];
    live.first = live.used ? std::min(live.first, step) : step;
    live.last = live.used ? std::max(live.last, step) : step;
    live.used = true;
  };
  const int end = static_cast<int>(steps.size());
  for (const std::string& input : graph_.inputs) {
    GTCO_ASSIGN_OR_RETURN(int index, tensor_index(input));
    manifest_.inputs.push_back(index);
    touch(index, -1);
  }
  for (int step_index = 0; step_index < end; ++step_index) {
    const PendingStep& step = steps[step_index];
    runtime::StepSpec spec = step.spec;
    for (const std::string& input : step.inputs) {
      if (input.empty()) {  // an omitted optional input of a fallback step
        spec.inputs.push_back(-1);
        continue;
      }
      GTCO_ASSIGN_OR_RETURN(int index, tensor_index(input));
      spec.inputs.push_back(index);
      touch(index, step_index);
    }
    for (const std::string& name : step.outputs) {
      GTCO_ASSIGN_OR_RETURN(int output, tensor_index(name));
      if (manifest_.tensors[output].weight) {
        return absl::InternalError(
            absl::StrCat("export: step '", spec.node, "' writes a constant"));
      }
      spec.outputs.push_back(output);
      touch(output, step_index);
    }
    manifest_.steps.push_back(std::move(spec));
  }
  std::set<std::string> produced(graph_.inputs.begin(), graph_.inputs.end());
  for (const PendingStep& step : steps) produced.insert(step.outputs.begin(), step.outputs.end());
  for (const std::string& output : graph_.outputs) {
    if (!graph_.IsConstant(Root(output)) && !produced.count(Root(output))) {
      return absl::InternalError(
          absl::StrCat("export: no step computes graph output '", output, "'"));
    }
    GTCO_ASSIGN_OR_RETURN(int index, tensor_index(output));
    if (manifest_.tensors[index].weight) {
      return absl::UnimplementedError(absl::StrCat("export: graph output '", output,
                                                   "' is a constant; the runtime returns computed "
                                                   "tensors only"));
    }
    manifest_.outputs.push_back(index);
    touch(index, end);
  }
  const std::vector<Inside> inside =
      graph::KeepCopies() ? std::vector<Inside>(lives.size()) : PlaceViews(manifest_, &lives);
  // Storages by liveness: largest first, each at the lowest offset no overlapping-in-time
  // storage already placed occupies.
  std::vector<int> order;
  for (size_t i = 0; i < lives.size(); ++i) {
    if (inside[i].parent < 0) order.push_back(static_cast<int>(i));
  }
  std::sort(order.begin(), order.end(), [&](int a, int b) {
    return lives[a].bytes != lives[b].bytes ? lives[a].bytes > lives[b].bytes : a < b;
  });
  manifest_.storages.assign(lives.size(), {});
  std::vector<int> placed;
  for (int storage : order) {
    const Live& live = lives[storage];
    std::vector<std::pair<int64_t, int64_t>> busy;
    for (int other : placed) {
      const Live& o = lives[other];
      if (o.last < live.first || live.last < o.first) continue;
      busy.push_back({manifest_.storages[other].offset,
                      manifest_.storages[other].offset + manifest_.storages[other].bytes});
    }
    std::sort(busy.begin(), busy.end());
    int64_t offset = 0;
    for (const auto& [begin, finish] : busy) {
      if (offset + live.bytes <= begin) break;
      offset = std::max(offset, RoundUp(finish, kAlign));
    }
    manifest_.storages[storage] = {offset, live.bytes};
    manifest_.arena_bytes = std::max(manifest_.arena_bytes, RoundUp(offset + live.bytes, kAlign));
    placed.push_back(storage);
  }
  // Storages inside others (views), once the outermost is placed.
  std::function<int64_t(int)> offset_of = [&](int storage) -> int64_t {
    const Inside& in = inside[storage];
    return in.parent < 0 ? manifest_.storages[storage].offset : offset_of(in.parent) + in.at;
  };
  for (size_t storage = 0; storage < lives.size(); ++storage) {
    if (inside[storage].parent < 0) continue;
    manifest_.storages[storage] = {offset_of(static_cast<int>(storage)), lives[storage].bytes};
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> Exporter::CompileCode() {
#ifndef GTCO_EXPORT_HAS_LLVM
  return NoLlvm();
#else
  std::vector<std::string> modules;
  std::set<std::string> extra_features, extra_flags;
  for (Kernel& kernel : kernels_) {
    GTCO_ASSIGN_OR_RETURN(schedule::Trace trace, schedule::Trace::Parse(kernel.spec.trace));
    GTCO_ASSIGN_OR_RETURN(ir::LoweredFunc func,
                          kernels::LowerSchedule(kernel.workload, trace, kernel.spec.entry));
    GTCO_ASSIGN_OR_RETURN(std::string module, codegen::EmitLlvmBitcode(func));
    modules.push_back(std::move(module));
    if (kernel.spec.mapping == "avx512_bf16") {
      extra_features.insert("+avx512bf16");
      extra_flags.insert("avx512_bf16");
    } else if (kernel.spec.mapping == "avx512_vnni") {
      extra_features.insert("+avx512vnni");
      extra_flags.insert("avx512_vnni");
    } else if (kernel.spec.mapping == "amx_bf16" || kernel.spec.mapping == "amx_int8") {
      const bool bf16 = kernel.spec.mapping == "amx_bf16";
      extra_features.insert({"+amx-tile", bf16 ? "+amx-bf16" : "+amx-int8"});
      extra_flags.insert({"amx_tile", kernel.spec.mapping});
    }
  }
  codegen::AotTarget target = target_;
  target.extra_llvm_features.assign(extra_features.begin(), extra_features.end());
  for (const std::string& flag : extra_flags) target.features.push_back(flag);
  std::sort(target.features.begin(), target.features.end());
  manifest_.features = target.features;
  const std::string scheduled =
      target.tune_cpu.empty() ? "" : absl::StrCat(", scheduled for ", target.tune_cpu);
  Progress(absl::StrCat("compiling ", modules.size(), " kernels for ", target.cpu, scheduled));
  return codegen::CompileSharedObject(modules, target);
#endif
}

absl::StatusOr<std::string> Exporter::CompileCudaCode(const target::HardwareInfo& hw) {
  std::string code;
  auto append = [&code](const std::string& cubin, int64_t* offset, int64_t* bytes) {
    code.resize(RoundUp(static_cast<int64_t>(code.size()), kAlign), '\0');
    *offset = static_cast<int64_t>(code.size());
    *bytes = static_cast<int64_t>(cubin.size());
    code += cubin;
  };
  Progress(absl::StrCat("compiling ", kernels_.size(), " CUDA kernels for ", manifest_.cuda_arch,
                        " with NVRTC"));
  std::vector<std::pair<std::string, runtime::KernelSpec*>> sources;
  for (size_t index = 0; index < kernels_.size(); ++index) {
    runtime::KernelSpec& spec = manifest_.kernels[index];
    GTCO_ASSIGN_OR_RETURN(schedule::Trace trace, schedule::Trace::Parse(spec.trace));
    GTCO_ASSIGN_OR_RETURN(kernels::Program program,
                          kernels::BuildProgram(kernels_[index].workload, trace, hw, spec.entry));
    const schedule::CudaPlan& plan = program.launch;
    // A kernel that needs an architecture-specific target (wgmma: sm_90a) makes the whole
    // artifact that target's: its SASS runs only there.
    if (!plan.arch.empty()) manifest_.cuda_arch = plan.arch;
    spec.grid = {plan.grid_x, plan.grid_y, plan.grid_z};
    spec.block = {plan.block_x, plan.block_y, plan.block_z};
    spec.shared_bytes = plan.dynamic_shared_bytes;
    sources.push_back({std::move(program.code), &spec});
  }
  for (auto& [source, spec] : sources) {
    absl::StatusOr<codegen::CompiledCuda> compiled =
        codegen::CompileCuda(source, spec->entry, manifest_.cuda_arch);
    if (!compiled.ok()) {
      return absl::Status(
          compiled.status().code(),
          absl::StrCat("export: kernel ", spec->description, ": ", compiled.status().message()));
    }
    append(compiled->cubin, &spec->cubin_offset, &spec->cubin_bytes);
  }
  GTCO_ASSIGN_OR_RETURN(codegen::CompiledCuda steps,
                        codegen::CompileCuda(runtime::CudaStepKernelsSource(),
                                             runtime::kCudaCopyKernel, manifest_.cuda_arch));
  append(steps.cubin, &manifest_.data_cubin_offset, &manifest_.data_cubin_bytes);
  return code;
}

absl::StatusOr<ExportResult> Exporter::Run(const std::vector<graph::PlannedWorkload>& planned) {
  GTCO_ASSIGN_OR_RETURN(const target::HardwareInfo hw, ExportHardware(options_));
  manifest_.model = graph_.name;
  if (cuda()) {
    manifest_.target = "cuda";
    manifest_.cuda_arch = options_.cuda_arch;
  } else {
#ifdef GTCO_EXPORT_HAS_LLVM
    GTCO_ASSIGN_OR_RETURN(target_, codegen::AotTargetFor(hw.cpu_features, options_.isa));
    if (options_.tune_for_host) target_.tune_cpu = codegen::HostTuneCpu();
    manifest_.cpu = target_.cpu;
#else
    return NoLlvm();
#endif
  }
  std::set<std::string> in_workloads;
  for (const graph::PlannedWorkload& item : planned) {
    in_workloads.insert(item.node_names.begin(), item.node_names.end());
  }
  if (!cuda()) FindFakeQuantization();
  for (const Node& node : graph_.nodes) {
    if (in_workloads.count(node.name)) continue;
    const graph::OpRole role = graph::RoleOf(node);
    if (role == graph::OpRole::kFallback) GTCO_RETURN_IF_ERROR(AddFallbackStep(node));
    if (role != graph::OpRole::kData) continue;
    GTCO_RETURN_IF_ERROR(AddDataStep(node));
  }
  GTCO_RETURN_IF_ERROR(AddKernels(planned));
  if (!cuda()) {
    if (!graph::KeepCopies()) MergeSliceTransposes();
    GTCO_RETURN_IF_ERROR(PrepackWeights());
  }
  GTCO_ASSIGN_OR_RETURN(std::vector<PendingStep> ordered, Ordered());
  GTCO_RETURN_IF_ERROR(BuildTensors(ordered));
  for (const Kernel& kernel : kernels_) manifest_.kernels.push_back(kernel.spec);
  std::string code;
  if (cuda()) {
    GTCO_ASSIGN_OR_RETURN(code, CompileCudaCode(hw));
  } else {
    GTCO_ASSIGN_OR_RETURN(code, CompileCode());
  }
  ExportResult result;
  result.kernels = static_cast<int>(kernels_.size());
  for (const Kernel& kernel : kernels_) result.tuned += kernel.spec.tuned ? 1 : 0;
  result.warnings = manifest_.warnings;
  result.cpu = cuda() ? manifest_.cuda_arch : manifest_.cpu;
#ifdef GTCO_EXPORT_HAS_LLVM
  if (!cuda()) result.tune_cpu = target_.tune_cpu;
#endif
  result.estimated_seconds = estimated_seconds_;
  result.artifact = runtime::WriteArtifact(manifest_, code, weights_);
  return result;
}

/// The whole-model check of `result`'s artifact (ExportOptions::verify), recorded in its
/// manifest; FAILED_PRECONDITION on a mismatch.
absl::Status VerifyExport(std::string_view model_bytes, const onnx::ShapeOverrides& overrides,
                          const ExportOptions& options, ExportResult* result) {
  verify::VerifyReport& report = result->verification;
  if (options.verify) {
    if (options.progress) {
      options.progress(
          "verifying the artifact against the reference interpreter of the ONNX graph");
    }
    GTCO_ASSIGN_OR_RETURN(report, verify::VerifyArtifact(model_bytes, overrides, result->artifact,
                                                         options.verify_options));
    if (!report.passed) {
      return absl::FailedPreconditionError(absl::StrCat(
          "export: the artifact does not compute what the ONNX graph does: ", report.failure,
          ". No artifact was written. This is a GTCO bug (a graph rewrite, data step or kernel "
          "gone wrong): please report it with the model; --no-verify exports it unchecked"));
    }
  } else {
    report.spec.status = "skipped";
    report.spec.reason = "--no-verify";
    report.passed = true;
  }
  GTCO_ASSIGN_OR_RETURN(runtime::ArtifactView view, runtime::ReadArtifact(result->artifact));
  runtime::Manifest manifest = view.manifest;
  manifest.verification = report.spec;
  result->artifact = runtime::WriteArtifact(std::move(manifest), view.code, view.weights);
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<target::HardwareInfo> ExportHardware(const ExportOptions& options) {
  if (options.target == target::Target::kCuda) {
    absl::StatusOr<runtime::CudaArch> arch = runtime::ParseCudaArch(options.cuda_arch);
    if (!arch.ok() || arch->specific || arch->version < 80) {
      return absl::InvalidArgumentError(
          absl::StrCat("export: CUDA architecture '", options.cuda_arch,
                       "' is not one GTCO compiles for "
                       "(sm_80 or later, e.g. sm_80, sm_86, sm_89, sm_90)"));
    }
    return target::CudaArchPreset(arch->version);
  }
#ifndef GTCO_EXPORT_HAS_LLVM
  return NoLlvm();
#else
  std::vector<std::string> features = options.cpu_features;
  if (features.empty()) {
    GTCO_ASSIGN_OR_RETURN(features,
                          codegen::LevelFeatures(options.isa.empty() ? "x86-64-v3" : options.isa));
  }
  GTCO_ASSIGN_OR_RETURN(codegen::AotTarget level, codegen::AotTargetFor(features, options.isa));
  if (level.cpu == "x86-64") {
    return absl::FailedPreconditionError(
        "export: the target hardware lacks SSE4.2 (x86-64-v2); GTCO's kernels need at least it");
  }
  target::HardwareInfo hw;
  hw.target = target::Target::kCpu;
  hw.cpu_model = options.cpu_model;
  hw.cores = std::max(options.cores, 1);
  hw.cpu_features = level.features;
  if (level.cpu == "x86-64-v4") {
    for (const char* flag : {"avx512_bf16", "avx512_vnni", "amx_tile", "amx_bf16", "amx_int8"}) {
      if (std::find(features.begin(), features.end(), flag) != features.end()) {
        hw.cpu_features.push_back(flag);
      }
    }
  }
  std::sort(hw.cpu_features.begin(), hw.cpu_features.end());
  return hw;
#endif
}

absl::StatusOr<ExportResult> ExportModel(std::string_view model_bytes,
                                         const onnx::ShapeOverrides& overrides,
                                         const ExportOptions& options,
                                         const ScheduleLookup& lookup) {
  GTCO_ASSIGN_OR_RETURN(Graph graph, onnx::PrepareGraph(model_bytes, overrides));
  GTCO_ASSIGN_OR_RETURN(const graph::ModelPlan plan,
                        graph::PlanAlternatives(graph, graph::PlanOptionsFor(options.target)));
  // Each region the plan may compute in more than one way gets the alternative whose records
  // add up to the least time (the default while none is fully measured), as the farm costs it.
  absl::Status lookup_error;
  const std::vector<int> choice =
      graph::ChooseByCost(plan, [&](const graph::PlannedWorkload& item) -> std::optional<double> {
        if (!lookup_error.ok()) return std::nullopt;
        absl::StatusOr<std::optional<ChosenSchedule>> record =
            lookup(item.workload, item.workload.Key());
        if (!record.ok()) {
          lookup_error = record.status();
          return std::nullopt;
        }
        if (!record->has_value()) return std::nullopt;
        return (*record)->median_seconds;
      });
  GTCO_RETURN_IF_ERROR(lookup_error);
  if (!plan.regions.empty() && options.progress) {
    std::vector<int> chosen(plan.variants.size(), 0);
    for (int alt : choice) ++chosen[alt];
    std::string counts;
    for (size_t v = 0; v < plan.variants.size(); ++v) {
      absl::StrAppend(&counts, v == 0 ? "" : ", ", plan.variants[v], " in ", chosen[v]);
    }
    options.progress(absl::StrCat("plan: ", plan.regions.size(),
                                  " regions with alternatives, by measured cost: ", counts));
  }
  GTCO_ASSIGN_OR_RETURN(
      ExportResult result,
      Exporter(graph, options, lookup).Run(graph::SelectPlan(graph, plan, choice)));
  result.fallbacks = graph::FallbackNodes(graph);
  GTCO_RETURN_IF_ERROR(VerifyExport(model_bytes, overrides, options, &result));
  return result;
}

}  // namespace gtco::exporter
