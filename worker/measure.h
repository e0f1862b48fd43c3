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
#include "worker/measurer.h"

namespace gtco::worker {

/// Measures CPU candidates (LLVM IR). Not thread-safe; lives in the runner process.
class CandidateMeasurer final : public Measurer {
 public:
  static absl::StatusOr<std::unique_ptr<CandidateMeasurer>> Create(MeasureOptions options);
  /// Always returns a result: failures are results with an error kind and message.
  gtco::v1::MeasureResult Measure(const gtco::v1::Candidate& candidate) override;

 private:
  struct ReferenceData {
    std::vector<std::vector<float>> inputs;
    std::vector<float> expected;
    double rtol = 0, atol = 0;
  };
  CandidateMeasurer(std::unique_ptr<codegen::CpuJit> jit, MeasureOptions options);
  absl::StatusOr<const ReferenceData*> Reference(const gtco::v1::Candidate& candidate);
  /// The candidate's LLVM program: as sent, or for language "trace" its workload + trace
  /// replayed with this release's kernel families (kernels::BuildCode).
  static absl::StatusOr<std::string> ProgramOf(const gtco::v1::Candidate& candidate);

  std::unique_ptr<codegen::CpuJit> jit_;
  MeasureOptions options_;
  uint64_t seed_;
  int compiled_since_reset_ = 0;
  int64_t cached_bytes_ = 0;
  std::map<std::string, std::unique_ptr<ReferenceData>> references_;  ///< by workload key
};

}  // namespace gtco::worker
