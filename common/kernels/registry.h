// The kernel registry (its table is kernels.def): every intrinsic mapping in registry order, the
// mapping verdicts of a workload, its search spaces, and sketch lookup by name for replay.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/ir/loop_ir.h"
#include "common/ir/workload.h"
#include "common/schedule/cuda_sketch.h"
#include "common/schedule/mapping.h"
#include "common/schedule/sketch.h"
#include "common/schedule/space.h"
#include "common/schedule/trace.h"
#include "common/target/target.h"

namespace gtco::kernels {

/// Every registered mapping, in registry order (see kernels.def for how to add one).
const std::vector<const schedule::MappingSketch*>& MappingRegistry();

/// The sketch with versioned name `name` among every sketch ever shipped (those of the registered
/// mappings and the replay-only ones), so that stored traces replay; nullptr when unknown.
const schedule::Sketch* SketchByName(const std::string& name);

/// Every mapping the registry considers for w's workload class on hw's target, applicable or not,
/// with the reason (CPU features, compute capability, dtypes), in registry order.
std::vector<schedule::MappingVerdict> ExplainMappings(const ir::Workload& w,
                                                      const target::HardwareInfo& hw);

/// The space of the best-ranked applicable mapping (MappingSketch::Rank, then registry order:
/// the best-expected one).
/// INVALID_ARGUMENT as CreateMappingSpaces.
absl::StatusOr<schedule::SearchSpace> CreateSpace(const ir::Workload& w,
                                                  const target::HardwareInfo& hw);

/// One search space per applicable mapping, by rank then registry order (the best-expected
/// first). A
/// mapping that applies but whose space cannot be made (every schedule pruned on hw's caches or
/// cores, or its default trace failing to lower) is left out, and when `unusable` is given its
/// verdict is appended there (applies false, the reason). INVALID_ARGUMENT when no mapping
/// considers `w` or none applies (the message lists every verdict), or no applicable mapping
/// has a space (the message gives each one's reason; inconsistent shapes fail them all).
absl::StatusOr<std::vector<schedule::SearchSpace>> CreateMappingSpaces(
    const ir::Workload& w, const target::HardwareInfo& hw,
    std::vector<schedule::MappingVerdict>* unusable = nullptr);

/// The space of the mapping named `mapping` for w's workload class. INVALID_ARGUMENT when it is
/// unknown for the class or does not apply (with the verdict's reason).
absl::StatusOr<schedule::SearchSpace> CreateSpaceForMapping(const ir::Workload& w,
                                                            const target::HardwareInfo& hw,
                                                            const std::string& mapping);

/// A trace resolved against its workload: the sketch it names and its decision values in that
/// sketch's knob order.
struct ResolvedTrace {
  const schedule::Sketch* sketch = nullptr;
  schedule::KnobValues values;
};
/// INVALID_ARGUMENT when `t` names no known sketch, one that does not apply to `w`, or decisions
/// other than the sketch's knobs in order.
absl::StatusOr<ResolvedTrace> ResolveTrace(const ir::Workload& w, const schedule::Trace& t);

/// Replays a loop-IR trace: the loop nest for (workload, trace), a kernel named `func_name` whose
/// params are the workload's inputs in order ("in0", "in1", ...) then the output ("out").
/// Deterministic (same inputs => same IR text). INVALID_ARGUMENT when the trace does not belong
/// to the workload's space (unknown sketch, a CUDA sketch, a sketch for another workload class,
/// missing or extra decisions, values outside the sketch's range) or the workload is inconsistent.
absl::StatusOr<ir::LoweredFunc> LowerSchedule(const ir::Workload& w, const schedule::Trace& t,
                                              const std::string& func_name);

/// The launch plan of CUDA trace `t` for `w`; INVALID_ARGUMENT unless `t` names a CUDA sketch that
/// applies to `w` and carries its knobs in order.
absl::StatusOr<schedule::CudaPlan> PlanCudaSchedule(const ir::Workload& w,
                                                    const schedule::Trace& t);

// The registered functions (kernels.def), each defined in its family's folder.
#define GTCO_MAPPING(function) const schedule::MappingSketch& function();
#define GTCO_REPLAY_ONLY(function) const schedule::Sketch& function();
#include "common/kernels/kernels.def"
#undef GTCO_REPLAY_ONLY
#undef GTCO_MAPPING

}  // namespace gtco::kernels
