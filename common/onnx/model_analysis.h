// Model analysis: ONNX bytes -> graph IR -> graph passes -> deduplicated tuning tasks (the
// server's entry point). It sits above both the importer and the passes, so common/graph knows
// nothing of ONNX.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "common/graph/fallback.h"
#include "common/graph/fusion_planner.h"
#include "common/ir/workload.h"
#include "common/onnx/onnx_import.h"

namespace gtco::onnx {

/// One distinct workload of a model.
struct ModelTask {
  ir::Workload workload;
  std::string key;  ///< workload.Key()
  int weight = 0;   ///< how many times one model evaluation runs it
  /// The graph nodes of every occurrence, occurrence after occurrence (anchor first).
  std::vector<std::string> node_names;
};

/// Regions of the model the plan may compute in more than one way (graph::PlanAlternatives), all
/// alike (the same workloads per alternative) grouped as one.
struct PlanChoice {
  std::string description;  ///< what the regions compute (the default alternative's workloads)
  int instances = 0;        ///< how many regions of the model it stands for
  struct Alternative {
    std::string name;  ///< the plan variant's name ("fused attention", ...)
    /// Each workload key the alternative runs per region, and how many times.
    std::vector<std::pair<std::string, int>> workloads;
  };
  std::vector<Alternative> alternatives;  ///< [0] the default plan's
};

/// A plan's choices and its latency given the best seconds of each workload key.
struct PlanCost {
  /// Per PlanChoice: its alternatives' costs per region (nullopt: a workload not measured), and
  /// the one chosen (graph::LeastCostAlternative).
  std::vector<std::vector<std::optional<double>>> costs;
  /// Per PlanChoice and alternative: the measured part of its cost (all of it when measured).
  std::vector<std::vector<double>> measured_seconds;
  std::vector<int> chosen;
  /// Per PlanChoice and alternative: whether it is in play (see tuning_weight).
  std::vector<std::vector<bool>> in_play;
  /// Sum over the chosen plan of workload runs x best seconds (unmeasured workloads count 0).
  double latency_seconds = 0;
  /// Runs of each workload key per model evaluation in the chosen plan (0: only in alternatives
  /// not chosen).
  std::map<std::string, int64_t> runs;
  /// The weight each workload key carries in the tuning budget (the gradient scheduler's task
  /// weight): its runs in the chosen plan plus its runs in the alternatives still in play (not
  /// measured yet, or costing at most kAlternativeInPlay times the chosen one). An alternative
  /// further behind no longer draws budget: tuning its workloads would lower the model's
  /// latency only if it overtook the chosen one.
  std::map<std::string, int64_t> tuning_weight;
};

/// How far (cost ratio to the chosen alternative) a measured alternative may be behind and
/// still draw tuning budget: the last trials of a task seldom gain more than a few percent.
inline constexpr double kAlternativeInPlay = 1.05;

struct ModelAnalysis {
  std::string model_name;        ///< the ONNX graph's name ("model" when empty)
  int num_nodes = 0;             ///< nodes in the imported graph, before folding
  int num_data_ops = 0;          ///< copy-only nodes left after folding and planning (not tuned)
  /// Nodes that run as fallback steps (graph::MarkFallbacks): not tuned, run by the reference op
  /// library. CPU only: a CUDA plan with any is refused.
  std::vector<graph::FallbackNode> fallbacks;
  /// Deduplicated by key, in first-occurrence order: every alternative's workloads (a task's
  /// weight counts its occurrences in all of them).
  std::vector<ModelTask> tasks;
  std::vector<PlanChoice> plan_choices;
};

/// The best seconds of a workload key per run, nullopt when it has no measurement.
using BestSeconds = std::function<std::optional<double>(const std::string& key)>;

/// Costs `choices` of a model whose tasks run `weights` times (key -> task weight: every
/// alternative's occurrences; the workloads outside every choice are always run).
PlanCost CostPlan(const std::vector<std::pair<std::string, int>>& weights,
                  const std::vector<PlanChoice>& choices, const BestSeconds& best);

/// Imports the model (see ImportOnnx for `overrides` and import errors) and runs the graph
/// passes (shape arithmetic folded, BatchNormalization folded, Clip decomposed) and the op
/// support check: the graph the planner and the exporter work on.
absl::StatusOr<graph::Graph> PrepareGraph(std::string_view model_bytes,
                                          const ShapeOverrides& overrides);

/// Imports the model (see ImportOnnx for `overrides` and import errors), folds shape
/// arithmetic, checks op support and plans the workloads for `options.target` with every plan
/// variant (graph::PlanAlternatives: the farm's CPU options plan attention fused and unfused;
/// "cuda" fuses it; the default "cpu" options do not): the tasks are every variant's workloads,
/// plan_choices the regions where they differ. Errors: INVALID_ARGUMENT
/// for bad models/overrides or an unknown target, UNIMPLEMENTED naming op/dtype and node for
/// what GTCO cannot run.
absl::StatusOr<ModelAnalysis> AnalyzeOnnxModel(std::string_view model_bytes,
                                               const ShapeOverrides& overrides,
                                               const graph::PlanOptions& options = {});

}  // namespace gtco::onnx
