// Model analysis: import, fold, check, plan, deduplicate.
#include "common/onnx/model_analysis.h"

#include <map>
#include <set>

#include "absl/strings/str_cat.h"
#include "common/graph/batchnorm_folding.h"
#include "common/graph/bf16x3_split.h"
#include "common/graph/constant_folding.h"
#include "common/graph/data_movement.h"
#include "common/graph/decompose.h"
#include "common/graph/fallback.h"
#include "common/graph/fusion_planner.h"
#include "common/graph/integer_matmul_folding.h"
#include "common/graph/kernel_rewrites.h"
#include "common/graph/op_support.h"
#include "common/util/status.h"

namespace gtco::onnx {

using graph::Graph;
using graph::Node;
using graph::OpRole;
using graph::PlannedWorkload;
using graph::PlanOptions;

namespace {

absl::Status RunGraphPasses(Graph& graph) {
  GTCO_RETURN_IF_ERROR(FuseQdqMatMuls(graph));
  GTCO_RETURN_IF_ERROR(FoldConstants(graph));
  GTCO_RETURN_IF_ERROR(FoldBatchNorm(graph));
  GTCO_RETURN_IF_ERROR(RewriteForKernels(graph));
  GTCO_RETURN_IF_ERROR(DecomposeOps(graph));
  // A Split of a constant became Slices of it: those fold too.
  GTCO_RETURN_IF_ERROR(FoldConstants(graph));
  GTCO_RETURN_IF_ERROR(FoldIntegerMatMulOutputs(graph));
  GTCO_RETURN_IF_ERROR(FuseBf16x3Splits(graph));
  if (!graph::KeepCopies()) GTCO_RETURN_IF_ERROR(SimplifyDataMovement(graph));
  GTCO_RETURN_IF_ERROR(MarkFallbacks(graph));
  return CheckSupportedOps(graph);
}

}  // namespace

absl::StatusOr<Graph> PrepareGraph(std::string_view model_bytes,
                                   const ShapeOverrides& overrides) {
  GTCO_ASSIGN_OR_RETURN(Graph graph, ImportOnnx(model_bytes, overrides));
  GTCO_RETURN_IF_ERROR(RunGraphPasses(graph));
  return graph;
}

absl::StatusOr<ModelAnalysis> AnalyzeOnnxModel(std::string_view model_bytes,
                                               const ShapeOverrides& overrides,
                                               const PlanOptions& options) {
  GTCO_ASSIGN_OR_RETURN(Graph graph, ImportOnnx(model_bytes, overrides));
  ModelAnalysis analysis;
  analysis.model_name = graph.name;
  analysis.num_nodes = static_cast<int>(graph.nodes.size());
  GTCO_RETURN_IF_ERROR(RunGraphPasses(graph));
  analysis.num_data_ops = CountDataOps(graph);
  analysis.fallbacks = graph::FallbackNodes(graph);
  if (options.target == target::Target::kCuda && !analysis.fallbacks.empty()) {
    const graph::FallbackNode& first = analysis.fallbacks.front();
    return absl::UnimplementedError(absl::StrCat(
        "ONNX op '", first.op_type, "' at node '", first.node, "' has no CUDA kernel (", first.reason,
        "); on CPU it runs as a fallback step, which CUDA artifacts do not have: submit with "
        "--target cpu (", analysis.fallbacks.size(), " such node",
        analysis.fallbacks.size() == 1 ? "" : "s", ")"));
  }
  GTCO_ASSIGN_OR_RETURN(graph::ModelPlan plan, PlanAlternatives(graph, options));
  // Copies absorbed into a workload (a fused attention's Transpose of K) are tuned with it.
  std::set<std::string> data_nodes;
  for (const Node& node : graph.nodes) {
    if (RoleOf(node) == OpRole::kData) data_nodes.insert(node.name);
  }
  for (const PlannedWorkload& item : SelectPlan(graph, plan, {})) {
    for (const std::string& name : item.node_names) {
      analysis.num_data_ops -= static_cast<int>(data_nodes.count(name));
    }
  }
  std::map<std::string, size_t> task_index;
  std::vector<std::string> key_of;
  for (const PlannedWorkload& item : plan.workloads) {
    std::string key = item.workload.Key();
    key_of.push_back(key);
    auto [it, added] = task_index.emplace(key, analysis.tasks.size());
    if (added) analysis.tasks.push_back(ModelTask{item.workload, key, 0, {}});
    ModelTask& task = analysis.tasks[it->second];
    ++task.weight;
    task.node_names.insert(task.node_names.end(), item.node_names.begin(), item.node_names.end());
  }
  // Regions with the same workloads per alternative are one choice, described by the default
  // alternative's workloads.
  std::map<std::vector<std::vector<std::pair<std::string, int>>>, size_t> choice_of;
  for (const graph::PlanRegion& region : plan.regions) {
    std::vector<std::vector<std::pair<std::string, int>>> signature;
    for (const std::vector<int>& alternative : region.alternatives) {
      std::map<std::string, int> counts;
      for (int w : alternative) ++counts[key_of[w]];
      signature.emplace_back(counts.begin(), counts.end());
    }
    auto [it, added] = choice_of.emplace(signature, analysis.plan_choices.size());
    if (added) {
      PlanChoice choice;
      std::string description;
      for (int w : region.alternatives[0]) {
        absl::StrAppend(&description, description.empty() ? "" : " + ",
                        plan.workloads[w].workload.Description());
      }
      choice.description = description;
      for (size_t v = 0; v < signature.size(); ++v) {
        choice.alternatives.push_back({plan.variants[v], signature[v]});
      }
      analysis.plan_choices.push_back(std::move(choice));
    }
    ++analysis.plan_choices[it->second].instances;
  }
  return analysis;
}

PlanCost CostPlan(const std::vector<std::pair<std::string, int>>& weights,
                  const std::vector<PlanChoice>& choices, const BestSeconds& best) {
  PlanCost cost;
  // Runs of each key outside every choice: its weight less its runs inside them.
  std::map<std::string, int64_t> outside(weights.begin(), weights.end());
  for (const PlanChoice& choice : choices) {
    std::vector<std::optional<double>> alternative_costs;
    std::vector<double> measured;
    for (const PlanChoice::Alternative& alternative : choice.alternatives) {
      double seconds = 0;
      bool complete = true;
      for (const auto& [key, count] : alternative.workloads) {
        outside[key] -= static_cast<int64_t>(count) * choice.instances;
        const std::optional<double> best_seconds = best(key);
        complete &= best_seconds.has_value();
        seconds += count * best_seconds.value_or(0.0);
      }
      measured.push_back(seconds);
      alternative_costs.push_back(complete ? std::optional<double>(seconds) : std::nullopt);
    }
    const int chosen = graph::LeastCostAlternative(alternative_costs);
    cost.latency_seconds += choice.instances * measured[chosen];
    for (const auto& [key, count] : choice.alternatives[chosen].workloads) {
      cost.runs[key] += static_cast<int64_t>(choice.instances) * count;
    }
    std::vector<bool> in_play_of_choice;
    const std::optional<double>& chosen_cost = alternative_costs[chosen];
    for (size_t alt = 0; alt < choice.alternatives.size(); ++alt) {
      const std::optional<double>& alt_cost = alternative_costs[alt];
      const bool in_play = static_cast<int>(alt) == chosen || !alt_cost.has_value() ||
                           !chosen_cost.has_value() ||
                           *alt_cost <= kAlternativeInPlay * *chosen_cost;
      in_play_of_choice.push_back(in_play);
      if (!in_play) continue;
      for (const auto& [key, count] : choice.alternatives[alt].workloads) {
        cost.tuning_weight[key] += static_cast<int64_t>(choice.instances) * count;
      }
    }
    cost.measured_seconds.push_back(std::move(measured));
    cost.costs.push_back(std::move(alternative_costs));
    cost.chosen.push_back(chosen);
    cost.in_play.push_back(std::move(in_play_of_choice));
  }
  for (const auto& [key, runs] : outside) {
    if (runs <= 0) continue;
    cost.latency_seconds += runs * best(key).value_or(0.0);
    cost.runs[key] += runs;
    cost.tuning_weight[key] += runs;
  }
  return cost;
}

}  // namespace gtco::onnx
