// Model guidance for the bench tuner: an online cost model that ranks a task's candidate traces
// and retrains on everything measured so far.
#pragma once

#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "common/ir/workload.h"
#include "common/schedule/trace.h"
#include "common/target/target.h"

namespace gtco::bench {

/// One task's cost model. Not thread-safe.
class ModelGuide {
 public:
  virtual ~ModelGuide() = default;
  /// Scores of `traces` (higher = predicted faster), or an empty vector while untrained.
  virtual std::vector<double> Score(const std::vector<schedule::Trace>& traces) = 0;
  /// Adds one successfully measured trace to the training history.
  virtual void Record(const schedule::Trace& trace, double seconds) = 0;
  /// Adds a measured trace of another workload on the same target (ranked within its own group);
  /// false when it cannot be lowered.
  virtual bool RecordOther(const ir::Workload& workload, const schedule::Trace& trace,
                           double seconds) = 0;
  /// Retrains on the whole history (a failed retrain keeps the previous model).
  virtual void Retrain() = 0;
};

/// Whether this build has the cost model (MakeModelGuide succeeds).
bool ModelGuideAvailable();

/// The cost-model guide for `workload` on `hw`; UNIMPLEMENTED when the bench was built without
/// common/costmodel (model_guide_unavailable.cc).
absl::StatusOr<std::unique_ptr<ModelGuide>> MakeModelGuide(const ir::Workload& workload,
                                                           const target::HardwareInfo& hw);

}  // namespace gtco::bench
