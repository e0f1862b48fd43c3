// Model guidance when the bench is built without common/costmodel: model-guided search is
// reported as unavailable instead of silently falling back to another strategy.
#include "bench/model_guide.h"

namespace gtco::bench {

bool ModelGuideAvailable() { return false; }

absl::StatusOr<std::unique_ptr<ModelGuide>> MakeModelGuide(const ir::Workload& workload,
                                                           const target::HardwareInfo& hw) {
  return absl::UnimplementedError(
      "model-guided search needs the cost model (gtco::costmodel), which this build lacks");
}

}  // namespace gtco::bench
