// Measuring one CPU candidate inside the runner process: compile, verify against the reference
// on random inputs, then time it.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/codegen/llvm/jit.h"
#include "common/ir/workload.h"
#include "gtco/v1/gtco.pb.h"
#include "worker/measurer.h"

namespace gtco::worker {

/// Which of a kernel's arguments (its inputs, then the output) every timed run starts with out
/// of the caches, as they are in a model: the weights (the anchor's inputs after the first) and
/// the epilogue's inputs smaller than the output (biases, scales: weights too). Not the first
/// input (the activation the previous kernel just wrote), not an epilogue input of the output's
/// size (a residual: an activation a few kernels old, in L3 in a model) and not the output (the
/// model's arena hands a kernel memory a recent kernel used). Evicting residuals measured
/// ResNet-50's 1x1 convs with a residual at 2x what they run in the model (484 vs 215-250 µs)
/// and ranked their traces by how well they hide the residual's DRAM latency; evicting the
/// output measured layer 1's 64->64 1x1 conv at 150 µs on one thread and 153 on two, so the farm
/// kept the serial trace, which ran 212 µs in the model against 97 for the parallel one.
std::vector<bool> ColdArguments(const ir::Workload& w);

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
