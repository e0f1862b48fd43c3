// Fuzz target: ONNX model bytes as uploaded by a client. AnalyzeOnnxModel (import, checker,
// shape inference, constant folding, op support, fusion planning) must answer every input with
// a model analysis or an INVALID_ARGUMENT/UNIMPLEMENTED status, and every workload it plans must
// pass Validate() and survive a canonical-text round trip with its key.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/onnx/model_analysis.h"
#include "common/util/logging.h"
#include "tests/fuzz/fuzz_check.h"

extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) {
  gtco::util::InitLogging("fuzz", gtco::util::LogLevel::kError);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<gtco::onnx::ModelAnalysis> analysis =
      gtco::onnx::AnalyzeOnnxModel(bytes, gtco::onnx::ShapeOverrides{});
  if (!analysis.ok()) {
    const absl::StatusCode code = analysis.status().code();
    FUZZ_CHECK(code == absl::StatusCode::kInvalidArgument ||
                   code == absl::StatusCode::kUnimplemented,
               "unexpected status %s", analysis.status().ToString().c_str());
    return 0;
  }
  for (const gtco::onnx::ModelTask& task : analysis->tasks) {
    absl::Status valid = task.workload.Validate();
    FUZZ_CHECK(valid.ok(), "planned workload %s is invalid: %s",
               task.workload.Description().c_str(), valid.ToString().c_str());
    FUZZ_CHECK(task.key == task.workload.Key(), "stale key %s", task.key.c_str());
    FUZZ_CHECK(task.weight > 0, "task %s has weight %d", task.key.c_str(), task.weight);
    absl::StatusOr<gtco::ir::Workload> reparsed =
        gtco::ir::ParseWorkload(task.workload.CanonicalString());
    FUZZ_CHECK(reparsed.ok() && reparsed->Key() == task.key, "workload %s does not round-trip",
               task.key.c_str());
  }
  return 0;
}
