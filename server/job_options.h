// A job's settings as the jobs table stores them (the `options` column): JSON text
// {"roundSize": 8, "scheduler": "gradient", "shapes": [{"input": "x", "dims": ["1", "3"]}],
//  "plan": [{"description": "...", "instances": 12, "alternatives": [{"name": "fused attention",
//  "workloads": [{"key": "...", "count": 1}]}]}]}; jobs stored before plans have no "plan".
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "common/onnx/model_analysis.h"
#include "common/onnx/onnx_import.h"

namespace gtco::server {

struct JobOptions {
  int round_size = 0;     ///< candidates per search round
  std::string scheduler;  ///< SchedulerKindName()
  onnx::ShapeOverrides shapes;
  /// The model's plan choices (`status --explain` costs them as the tasks are measured).
  std::vector<onnx::PlanChoice> plan;
  /// The nodes that run as fallback steps (graph::MarkFallbacks), for `status --explain`.
  std::vector<graph::FallbackNode> fallbacks;
  /// What the check of the graph passes at submit found (verify::CheckGraphPasses), in words.
  std::string graph_check;
};

/// The options as stored JSON text.
std::string EncodeJobOptions(const JobOptions& options);
/// Options from stored JSON text; INVALID_ARGUMENT when it is not such an object. Unknown keys
/// are ignored; round sizes and dims may be numbers or decimal strings.
absl::StatusOr<JobOptions> DecodeJobOptions(const std::string& json);

}  // namespace gtco::server
