// Model analysis: import, fold, check, plan, deduplicate.
#include "common/onnx/model_analysis.h"

#include <map>
#include <set>

#include "common/graph/batchnorm_folding.h"
#include "common/graph/constant_folding.h"
#include "common/graph/decompose.h"
#include "common/graph/fusion_planner.h"
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
  GTCO_RETURN_IF_ERROR(FoldConstants(graph));
  GTCO_RETURN_IF_ERROR(FoldBatchNorm(graph));
  GTCO_RETURN_IF_ERROR(DecomposeOps(graph));
  // A Split of a constant became Slices of it: those fold too.
  GTCO_RETURN_IF_ERROR(FoldConstants(graph));
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
  GTCO_ASSIGN_OR_RETURN(std::vector<PlannedWorkload> planned, PlanWorkloads(graph, options));
  // Copies absorbed into a workload (a fused attention's Transpose of K) are tuned with it.
  std::set<std::string> data_nodes;
  for (const Node& node : graph.nodes) {
    if (RoleOf(node) == OpRole::kData) data_nodes.insert(node.name);
  }
  for (const PlannedWorkload& item : planned) {
    for (const std::string& name : item.node_names) {
      analysis.num_data_ops -= static_cast<int>(data_nodes.count(name));
    }
  }
  std::map<std::string, size_t> task_index;
  for (PlannedWorkload& item : planned) {
    std::string key = item.workload.Key();
    auto [it, added] = task_index.emplace(key, analysis.tasks.size());
    if (added) {
      analysis.tasks.push_back(ModelTask{std::move(item.workload), key, 0, {}});
    }
    ModelTask& task = analysis.tasks[it->second];
    ++task.weight;
    task.node_names.insert(task.node_names.end(), item.node_names.begin(), item.node_names.end());
  }
  return analysis;
}

}  // namespace gtco::onnx
