// Model analysis: ONNX bytes -> graph IR -> graph passes -> deduplicated tuning tasks (the
// server's entry point). It sits above both the importer and the passes, so common/graph knows
// nothing of ONNX.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
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

struct ModelAnalysis {
  std::string model_name;        ///< the ONNX graph's name ("model" when empty)
  int num_nodes = 0;             ///< nodes in the imported graph, before folding
  int num_data_ops = 0;          ///< copy-only nodes left after folding and planning (not tuned)
  std::vector<ModelTask> tasks;  ///< deduplicated by key, in first-occurrence order
};

/// Imports the model (see ImportOnnx for `overrides` and import errors) and runs the graph
/// passes (shape arithmetic folded, BatchNormalization folded, Clip decomposed) and the op
/// support check: the graph the planner and the exporter work on.
absl::StatusOr<graph::Graph> PrepareGraph(std::string_view model_bytes,
                                          const ShapeOverrides& overrides);

/// Imports the model (see ImportOnnx for `overrides` and import errors), folds shape
/// arithmetic, checks op support and plans the workloads for `options.target` (see
/// graph::PlanWorkloads: "cuda" fuses attention; the default "cpu" does not). Errors: INVALID_ARGUMENT
/// for bad models/overrides or an unknown target, UNIMPLEMENTED naming op/dtype and node for
/// what GTCO cannot run.
absl::StatusOr<ModelAnalysis> AnalyzeOnnxModel(std::string_view model_bytes,
                                               const ShapeOverrides& overrides,
                                               const graph::PlanOptions& options = {});

}  // namespace gtco::onnx
