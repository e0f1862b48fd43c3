// Measuring one CPU candidate inside the runner process: compile, verify against the reference
// on random inputs, then time it.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/codegen/llvm/jit.h"
#include "gtco/v1/gtco.pb.h"

namespace gtco::worker {

struct MeasureOptions {
  double min_seconds = 0.05;  ///< keep repeating until this much time was measured
  int min_repeats = 5;
  int max_repeats = 10000;
  double max_seconds = 2.0;   ///< stop repeating after this long regardless
  uint64_t seed = 0;          ///< 0: random per process, so inputs are fresh each run
};

/// Not thread-safe; lives in the runner process.
class CandidateMeasurer {
 public:
  static absl::StatusOr<std::unique_ptr<CandidateMeasurer>> Create(MeasureOptions options);
  /// Always returns a result: failures are results with an error kind and message.
  gtco::v1::MeasureResult Measure(const gtco::v1::Candidate& candidate);

 private:
  struct ReferenceData {
    std::vector<std::vector<float>> inputs;
    std::vector<float> expected;
    double rtol = 0, atol = 0;
  };
  CandidateMeasurer(std::unique_ptr<codegen::CpuJit> jit, MeasureOptions options);
  absl::StatusOr<const ReferenceData*> Reference(const gtco::v1::Candidate& candidate);

  std::unique_ptr<codegen::CpuJit> jit_;
  MeasureOptions options_;
  uint64_t seed_;
  int compiled_since_reset_ = 0;
  int64_t cached_bytes_ = 0;
  std::map<std::string, std::unique_ptr<ReferenceData>> references_;  ///< by workload key
};

}  // namespace gtco::worker
