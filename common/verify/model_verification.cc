// Whole-model verification: the artifact against the reference interpreter, output by output,
// and on a mismatch step by step.
#include "common/verify/model_verification.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <deque>
#include <limits>
#include <memory>
#include <optional>
#include <random>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/util/status.h"
#include "runtime/model.h"
#include "runtime/reference_step.h"

namespace gtco::verify {
namespace {

using runtime::ElemType;

bool IsFloat(ElemType type) {
  return type == ElemType::kF32 || type == ElemType::kBF16 || type == ElemType::kF16;
}

bool Quantizes(const graph::Graph& graph) {
  static const std::set<std::string> kOps = {"QuantizeLinear", "DynamicQuantizeLinear",
                                             "MatMulInteger",  "ConvInteger",
                                             "QLinearMatMul",  "QLinearConv"};
  return std::any_of(graph.nodes.begin(), graph.nodes.end(),
                     [](const graph::Node& node) { return kOps.count(node.op_type) > 0; });
}

bool HoldsHalfFloats(const graph::Graph& graph) {
  for (const auto& [name, tensor] : graph.tensors()) {
    if (tensor.type == graph::ElemType::kBFloat16 || tensor.type == graph::ElemType::kFloat16) {
      return true;
    }
  }
  return false;
}

/// The artifact loaded from a file of its own, removed once mapped.
absl::StatusOr<std::unique_ptr<runtime::Model>> LoadArtifact(const std::string& artifact) {
  const char* tmp = std::getenv("TMPDIR");
  std::string path = absl::StrCat(tmp != nullptr && *tmp ? tmp : "/tmp", "/gtco-verify-XXXXXX");
  const int fd = mkstemp(path.data());
  if (fd < 0) return absl::InternalError("export verification: cannot create a scratch file");
  size_t written = 0;
  while (written < artifact.size()) {
    const ssize_t n = write(fd, artifact.data() + written, artifact.size() - written);
    if (n <= 0) break;
    written += static_cast<size_t>(n);
  }
  close(fd);
  absl::StatusOr<std::unique_ptr<runtime::Model>> model =
      written == artifact.size()
          ? runtime::Model::Load(path)
          : absl::StatusOr<std::unique_ptr<runtime::Model>>(
                absl::InternalError("export verification: cannot write a scratch file"));
  unlink(path.c_str());
  return model;
}

/// The inputs of `set` as the artifact's host tensors (bytes kept in `storage`).
absl::StatusOr<std::vector<runtime::HostTensor>> HostInputs(const runtime::Manifest& m,
                                                            const ValueMap& set,
                                                            std::deque<std::string>* storage) {
  std::vector<runtime::HostTensor> inputs;
  for (int index : m.inputs) {
    const runtime::TensorSpec& spec = m.tensors[index];
    auto found = set.find(spec.name);
    if (found == set.end() || found->second.shape != spec.shape) {
      return absl::InternalError(absl::StrCat("export verification: no input value for '",
                                              spec.name, "' of the artifact's shape"));
    }
    std::string& bytes = storage->emplace_back(spec.Bytes(), '\0');
    for (int64_t i = 0; i < spec.NumElements(); ++i) {
      runtime::StoreElement(bytes.data(), spec.dtype, i, found->second.data[i]);
    }
    inputs.push_back(runtime::HostTensor{spec.dtype, spec.shape, bytes.data()});
  }
  return inputs;
}

std::string Sci(double value) { return absl::StrFormat("%.2g", value); }

/// The first step whose output diverges from the reference tensor of its name.
absl::StatusOr<std::string> FirstDiverging(const graph::Graph& graph, const runtime::Model& model,
                                           const ValueMap& set, std::string* node_name) {
  GTCO_ASSIGN_OR_RETURN(ValueMap reference, Interpret(graph, set, /*keep_all=*/true));
  const runtime::Manifest& m = model.manifest();
  std::deque<std::string> storage;
  GTCO_ASSIGN_OR_RETURN(std::vector<runtime::HostTensor> inputs, HostInputs(m, set, &storage));
  std::string found;
  auto observe = [&](int step_index, const std::vector<const char*>& outputs) {
    if (!found.empty()) return;
    const runtime::StepSpec& step = m.steps[step_index];
    for (size_t i = 0; i < outputs.size(); ++i) {
      const runtime::TensorSpec& spec = m.tensors[step.outputs[i]];
      auto ref = reference.find(spec.name);
      if (ref == reference.end() || ref->second.shape != spec.shape ||
          IsFloat(ref->second.dtype) != IsFloat(spec.dtype)) {
        continue;  // a tensor of the passes' own, or in another layout
      }
      const double error = RelativeError(runtime::ValueFromBytes(spec, outputs[i]), ref->second);
      const double tolerance = ToleranceFor(graph, spec.dtype);
      if (error <= tolerance) continue;
      const std::string kind = step.op == "kernel"
                                   ? absl::StrCat("kernel ", m.kernels[step.kernel].description)
                                   : absl::StrCat(step.op, " step");
      *node_name = step.node;
      found = absl::StrCat("the first node whose value diverges is '", step.node, "' (", kind,
                           "): its tensor '", spec.name, "' is ", Sci(error),
                           " off the reference (tolerance ", Sci(tolerance), ")");
      return;
    }
  };
  GTCO_RETURN_IF_ERROR(model.RunObserved(inputs, observe).status());
  if (found.empty()) {
    return std::string(
        "no step's output diverges from the reference tensor of its name; the difference arises "
        "in tensors only the optimized graph has");
  }
  return found;
}

/// Median seconds per step over three profiled runs, and of the whole run.
void ProfileFallbacks(const runtime::Model& model, const std::vector<runtime::HostTensor>& inputs,
                      VerifyReport* report) {
  const runtime::Manifest& m = model.manifest();
  std::vector<std::vector<double>> step_seconds(m.steps.size());
  std::vector<double> totals;
  for (int run = 0; run < 3; ++run) {
    std::vector<runtime::StepTime> profile;
    if (!model.Run(inputs, &profile).ok() || profile.size() != m.steps.size()) return;
    double total = 0;
    for (size_t s = 0; s < profile.size(); ++s) {
      step_seconds[s].push_back(profile[s].seconds);
      total += profile[s].seconds;
    }
    totals.push_back(total);
  }
  auto median = [](std::vector<double> values) {
    std::sort(values.begin(), values.end());
    return values[values.size() / 2];
  };
  report->run_seconds = median(totals);
  for (size_t s = 0; s < m.steps.size(); ++s) {
    if (m.steps[s].op != "reference") continue;
    absl::StatusOr<runtime::reference::Node> node =
        runtime::reference::NodeFromJson(m.steps[s].reference);
    report->fallbacks.push_back(
        {node.ok() ? node->op_type : "?", m.steps[s].node, median(step_seconds[s])});
  }
}

/// Integer graph inputs that set shapes, which the artifact fixed at export (it holds static
/// shapes): each with the value the artifact's shapes imply (a Reshape's or Expand's shape: the
/// output's shape), or nullopt where no value can be told from the shapes.
std::map<std::string, std::optional<std::vector<int64_t>>> ShapeSettingInputs(
    const graph::Graph& graph) {
  std::set<std::string> inputs(graph.inputs.begin(), graph.inputs.end());
  std::map<std::string, std::optional<std::vector<int64_t>>> found;
  for (const graph::Node& node : graph.nodes) {
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      const std::string& name = node.inputs[i];
      if (!inputs.count(name) || !graph::SetsShape(node.op_type, i)) continue;
      std::optional<std::vector<int64_t>> value;
      const graph::Tensor* out = node.outputs.empty() ? nullptr : graph.FindTensor(node.outputs[0]);
      if ((node.op_type == "Reshape" || node.op_type == "Expand") && i == 1 && out != nullptr &&
          out->has_shape) {
        value = out->shape;
      }
      auto [it, added] = found.emplace(name, value);
      if (!added && it->second != value) it->second.reset();  // two readers disagree
    }
  }
  return found;
}

}  // namespace

std::optional<std::string> FillShapeInputs(const graph::Graph& graph, ValueMap* values,
                                           const ValueMap* given) {
  for (const auto& [name, value] : ShapeSettingInputs(graph)) {
    if (given != nullptr && given->count(name)) continue;
    if (!value.has_value()) return name;
    Value& input = (*values)[name];
    if (input.NumElements() != static_cast<int64_t>(value->size())) return name;
    input.data.assign(value->begin(), value->end());
  }
  return std::nullopt;
}

double ToleranceFor(const graph::Graph& graph, ElemType output_type) {
  if (!IsFloat(output_type)) return 0.01;
  if (Quantizes(graph)) return 6e-2;
  if (HoldsHalfFloats(graph)) return 4e-2;
  return 1e-4;
}

std::string ToleranceRule(const graph::Graph& graph) {
  const std::string floats = Quantizes(graph)         ? "6e-2 (the model quantizes to 8 bits)"
                             : HoldsHalfFloats(graph) ? "4e-2 (the model holds bf16/f16 tensors)"
                                                      : "1e-4 (an f32 model)";
  return absl::StrCat("max |artifact - reference| / max |reference| per float output <= ", floats,
                      "; integer and bool outputs: at most 1% of elements differ");
}

double RelativeError(const Value& artifact, const Value& reference) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  if (artifact.shape != reference.shape || artifact.data.size() != reference.data.size()) {
    return kInf;
  }
  if (!IsFloat(reference.dtype)) {
    int64_t differ = 0;
    for (size_t i = 0; i < reference.data.size(); ++i) {
      differ += artifact.data[i] != reference.data[i] ? 1 : 0;
    }
    return reference.data.empty() ? 0.0 : static_cast<double>(differ) / reference.data.size();
  }
  double scale = 0, worst = 0;
  for (double value : reference.data) {
    if (std::isfinite(value)) scale = std::max(scale, std::fabs(value));
  }
  if (scale == 0) scale = 1;
  for (size_t i = 0; i < reference.data.size(); ++i) {
    const double a = artifact.data[i], r = reference.data[i];
    if (std::isnan(a) != std::isnan(r) || std::isinf(a) != std::isinf(r)) return kInf;
    if (std::isnan(r) || std::isinf(r)) {
      if (std::isinf(r) && a != r) return kInf;
      continue;
    }
    worst = std::max(worst, std::fabs(a - r) / scale);
  }
  return worst;
}

ValueMap RandomInputs(const graph::Graph& graph, uint64_t seed) {
  std::mt19937_64 engine(seed);
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  const std::map<std::string, std::vector<int>> consumers = graph.ConsumerMap();
  static const std::set<std::string> kPassThrough = {"Cast",    "Reshape", "Unsqueeze",
                                                     "Squeeze", "Flatten", "Identity"};
  ValueMap values;
  for (const std::string& name : graph.inputs) {
    const graph::Tensor& tensor = graph.tensor(name);
    Value value;
    value.dtype = RuntimeElemType(tensor.type).value_or(ElemType::kF32);
    value.shape = tensor.shape;
    value.data.resize(tensor.NumElements());
    if (IsFloat(value.dtype)) {
      for (double& element : value.data) {
        element = runtime::reference::RoundTo(value.dtype, uniform(engine));
      }
    } else if (value.dtype == ElemType::kBool) {
      for (double& element : value.data) element = static_cast<double>(engine() & 1);
    } else {
      // The smallest extent any Gather indexed by this input (through pass-through ops) has.
      int64_t bound = 0;
      std::vector<std::string> frontier = {name};
      std::set<std::string> seen;
      while (!frontier.empty()) {
        const std::string current = frontier.back();
        frontier.pop_back();
        if (!seen.insert(current).second) continue;
        auto readers = consumers.find(current);
        if (readers == consumers.end()) continue;
        for (int index : readers->second) {
          const graph::Node& node = graph.nodes[index];
          if (node.op_type == "Gather" && node.inputs.size() > 1 && node.inputs[1] == current) {
            const graph::Tensor* data = graph.FindTensor(node.inputs[0]);
            if (data == nullptr || !data->has_shape || data->shape.empty()) continue;
            int64_t axis = node.IntAttr("axis", 0);
            if (axis < 0) axis += static_cast<int64_t>(data->shape.size());
            if (axis < 0 || axis >= static_cast<int64_t>(data->shape.size())) continue;
            const int64_t extent = data->shape[axis];
            bound = bound == 0 ? extent : std::min(bound, extent);
          } else if (kPassThrough.count(node.op_type)) {
            for (const std::string& output : node.outputs) frontier.push_back(output);
          }
        }
      }
      for (double& element : value.data) {
        element = bound > 0 ? static_cast<double>(engine() % static_cast<uint64_t>(bound)) : 1.0;
      }
    }
    values[name] = std::move(value);
  }
  return values;
}

absl::StatusOr<VerifyReport> VerifyArtifact(std::string_view model_bytes,
                                            const onnx::ShapeOverrides& overrides,
                                            const std::string& artifact,
                                            const VerifyOptions& options) {
  GTCO_ASSIGN_OR_RETURN(graph::Graph graph, onnx::ImportOnnx(model_bytes, overrides));
  for (const ValueMap& user_set : options.user_sets) {
    for (const auto& [name, value] : user_set) {
      const graph::Tensor* tensor = graph.FindTensor(name);
      const bool is_input =
          std::find(graph.inputs.begin(), graph.inputs.end(), name) != graph.inputs.end();
      if (tensor == nullptr || !is_input) {
        return absl::InvalidArgumentError(
            absl::StrCat("--verify-input '", name, "' names no input of the model"));
      }
      absl::StatusOr<ElemType> dtype = RuntimeElemType(tensor->type);
      if (value.shape != tensor->shape || !dtype.ok() || *dtype != value.dtype) {
        return absl::InvalidArgumentError(absl::StrCat(
            "--verify-input '", name, "' is ", runtime::ElemTypeName(value.dtype), " ",
            graph::ShapeString(value.shape), "; the model's input is ",
            graph::ElemTypeName(tensor->type), " ", graph::ShapeString(tensor->shape)));
      }
    }
  }
  VerifyReport report;
  report.spec.seed = options.seed;
  report.spec.rule = ToleranceRule(graph);
  absl::StatusOr<std::unique_ptr<runtime::Model>> loaded = LoadArtifact(artifact);
  if (!loaded.ok()) {
    if (loaded.status().code() != absl::StatusCode::kFailedPrecondition &&
        loaded.status().code() != absl::StatusCode::kUnimplemented) {
      return loaded.status();
    }
    report.spec.status = "skipped";
    report.spec.reason =
        absl::StrCat("this host cannot run the artifact: ", loaded.status().message());
    report.passed = true;
    return report;
  }
  const runtime::Model& model = **loaded;
  const runtime::Manifest& m = model.manifest();
  // Inputs that set shapes take the values the artifact's static shapes imply; one whose value
  // cannot be told must come from the user, or the check cannot run.
  std::vector<ValueMap> sets;
  auto complete = [&](ValueMap set, const ValueMap* user) -> std::optional<std::string> {
    if (user != nullptr) {
      for (const auto& [name, value] : *user) set[name] = value;
    }
    std::optional<std::string> unknown = FillShapeInputs(graph, &set, user);
    if (!unknown.has_value()) sets.push_back(std::move(set));
    return unknown;
  };
  std::optional<std::string> unknown;
  for (size_t i = 0; i < options.user_sets.size() && !unknown; ++i) {
    unknown = complete(RandomInputs(graph, options.seed + 1000 + i), &options.user_sets[i]);
  }
  for (int i = 0; i < options.random_sets && !unknown; ++i) {
    unknown = complete(RandomInputs(graph, options.seed + i), nullptr);
  }
  if (unknown.has_value()) {
    report.spec.status = "skipped";
    report.spec.reason =
        absl::StrCat("input '", *unknown,
                     "' sets shapes that the artifact fixed at export, and its value "
                     "cannot be told from them; give it with --verify-input ",
                     *unknown, "=FILE.npy");
    report.passed = true;
    return report;
  }
  report.spec.input_sets = static_cast<int>(sets.size());
  std::map<std::string, double> worst;
  for (size_t index = 0; index < sets.size(); ++index) {
    const ValueMap& set = sets[index];
    absl::StatusOr<ValueMap> interpreted = Interpret(graph, set, /*keep_all=*/false);
    if (!interpreted.ok() && interpreted.status().code() == absl::StatusCode::kInvalidArgument) {
      if (index < options.user_sets.size()) {
        return absl::InvalidArgumentError(
            absl::StrCat("--verify-input: the model cannot run on these inputs: ",
                         interpreted.status().message()));
      }
      // Random values an op cannot take (an index computed out of range, say): not the
      // artifact's fault, and not a check.
      report.spec.status = "skipped";
      report.spec.reason =
          absl::StrCat("the model cannot run on random inputs (", interpreted.status().message(),
                       "); give inputs it runs on with --verify-input NAME=FILE.npy");
      report.spec.outputs.clear();
      report.passed = true;
      return report;
    }
    if (!interpreted.ok() && interpreted.status().code() == absl::StatusCode::kUnimplemented) {
      report.spec.status = "skipped";
      report.spec.reason = absl::StrCat("the reference interpreter cannot run the model: ",
                                        interpreted.status().message());
      report.spec.outputs.clear();
      report.passed = true;
      return report;
    }
    if (!interpreted.ok()) return interpreted.status();
    ValueMap& reference = *interpreted;
    std::deque<std::string> storage;
    GTCO_ASSIGN_OR_RETURN(std::vector<runtime::HostTensor> inputs, HostInputs(m, set, &storage));
    absl::StatusOr<std::vector<runtime::OutputTensor>> outputs = model.Run(inputs);
    if (!outputs.ok()) {
      return absl::Status(outputs.status().code(),
                          absl::StrCat("export verification: the artifact failed on its check "
                                       "inputs: ",
                                       outputs.status().message()));
    }
    for (size_t o = 0; o < outputs->size(); ++o) {
      const runtime::TensorSpec& spec = m.tensors[m.outputs[o]];
      auto ref = reference.find(spec.name);
      if (ref == reference.end()) continue;
      const double error =
          RelativeError(runtime::ValueFromBytes(spec, (*outputs)[o].bytes.data()), ref->second);
      worst[spec.name] = std::max(worst[spec.name], error);
      const double tolerance = ToleranceFor(graph, spec.dtype);
      if (error > tolerance && report.failure.empty()) {
        GTCO_ASSIGN_OR_RETURN(std::string where,
                              FirstDiverging(graph, model, set, &report.diverging_node));
        report.failure = absl::StrCat("output '", spec.name, "' is ", Sci(error),
                                      " off the reference interpreter's (tolerance ",
                                      Sci(tolerance), ", input seed ", options.seed, "); ", where);
      }
    }
    if (options.profile_fallbacks && report.failure.empty() && &set == &sets.back()) {
      ProfileFallbacks(model, inputs, &report);
    }
  }
  for (int index : m.outputs) {
    const runtime::TensorSpec& spec = m.tensors[index];
    auto error = worst.find(spec.name);
    if (error == worst.end()) continue;
    report.spec.outputs.push_back({spec.name, std::isfinite(error->second) ? error->second : 1e308,
                                   ToleranceFor(graph, spec.dtype)});
  }
  report.passed = report.failure.empty();
  report.spec.status = report.passed ? "passed" : "failed";
  return report;
}

}  // namespace gtco::verify
