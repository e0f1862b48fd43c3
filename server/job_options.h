// A job's settings as the jobs table stores them (the `options` column): JSON text
// {"roundSize": 8, "scheduler": "gradient", "shapes": [{"input": "x", "dims": ["1", "3"]}]},
// the layout every stored job already has.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "common/onnx/onnx_import.h"

namespace gtco::server {

struct JobOptions {
  int round_size = 0;     ///< candidates per search round
  std::string scheduler;  ///< SchedulerKindName()
  onnx::ShapeOverrides shapes;
};

/// The options as stored JSON text.
std::string EncodeJobOptions(const JobOptions& options);
/// Options from stored JSON text; INVALID_ARGUMENT when it is not such an object. Unknown keys
/// are ignored; round sizes and dims may be numbers or decimal strings.
absl::StatusOr<JobOptions> DecodeJobOptions(const std::string& json);

}  // namespace gtco::server
