// The kernel registry: the table of kernels.def, mapping verdicts, search spaces per mapping,
// sketch lookup by name, and loop-IR and CUDA-plan replay of traces.
#include "common/kernels/registry.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/util/status.h"

namespace gtco::kernels {
namespace {

using schedule::CudaSketch;
using schedule::LoopSketch;
using schedule::MappingSketch;
using schedule::MappingVerdict;
using schedule::SearchSpace;
using schedule::Sketch;

/// Sketches no mapping offers any more; kept so that their stored traces replay.
const std::vector<const Sketch*>& ReplayOnlySketches() {
  static const std::vector<const Sketch*>* const sketches = new std::vector<const Sketch*>{
#define GTCO_MAPPING(function)
#define GTCO_REPLAY_ONLY(function) &function(),
#include "common/kernels/kernels.def"
#undef GTCO_REPLAY_ONLY
#undef GTCO_MAPPING
  };
  return *sketches;
}

/// The mappings that apply to (w, hw), by MappingSketch::Rank (ties in registry order); the
/// verdicts of those that consider w but do not apply go to `refused`.
std::vector<const MappingSketch*> RankedMappings(const ir::Workload& w,
                                                 const target::HardwareInfo& hw,
                                                 std::vector<MappingVerdict>* refused) {
  std::vector<std::pair<int, const MappingSketch*>> ranked;
  for (const MappingSketch* mapping : MappingRegistry()) {
    if (!schedule::MappingConsiders(*mapping, w, hw)) continue;
    MappingVerdict verdict = mapping->Explain(w, hw);
    if (verdict.applies) {
      ranked.emplace_back(mapping->Rank(w, hw), mapping);
    } else if (refused != nullptr) {
      refused->push_back(std::move(verdict));
    }
  }
  std::stable_sort(ranked.begin(), ranked.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<const MappingSketch*> mappings;
  for (const auto& [rank, mapping] : ranked) mappings.push_back(mapping);
  return mappings;
}

/// The best-ranked mapping that applies to (w, hw); INVALID_ARGUMENT listing every verdict
/// otherwise.
absl::StatusOr<const MappingSketch*> FirstApplicableMapping(const ir::Workload& w,
                                                            const target::HardwareInfo& hw) {
  std::vector<MappingVerdict> refused;
  const std::vector<const MappingSketch*> ranked = RankedMappings(w, hw, &refused);
  if (!ranked.empty()) return ranked.front();
  std::vector<std::string> reasons;
  for (const MappingVerdict& verdict : refused) {
    reasons.push_back(absl::StrCat(verdict.mapping, ": ", verdict.reason));
  }
  if (reasons.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("no schedule sketch for anchor '",
                                                   ir::AnchorKindName(w.anchor), "' on target '",
                                                   target::TargetName(hw.target), "'"));
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "no intrinsic mapping applies to ", w.Description(), ": ", absl::StrJoin(reasons, "; ")));
}

}  // namespace

const std::vector<const MappingSketch*>& MappingRegistry() {
  static const std::vector<const MappingSketch*>* const registry =
      new std::vector<const MappingSketch*>{
#define GTCO_MAPPING(function) &function(),
#define GTCO_REPLAY_ONLY(function)
#include "common/kernels/kernels.def"
#undef GTCO_REPLAY_ONLY
#undef GTCO_MAPPING
      };
  return *registry;
}

const Sketch* SketchByName(const std::string& name) {
  for (const Sketch* sketch : ReplayOnlySketches()) {
    if (name == sketch->Name()) return sketch;
  }
  for (const MappingSketch* mapping : MappingRegistry()) {
    if (name == mapping->sketch().Name()) return &mapping->sketch();
  }
  return nullptr;
}

std::vector<MappingVerdict> ExplainMappings(const ir::Workload& w, const target::HardwareInfo& hw) {
  std::vector<MappingVerdict> verdicts;
  for (const MappingSketch* mapping : MappingRegistry()) {
    if (schedule::MappingConsiders(*mapping, w, hw)) verdicts.push_back(mapping->Explain(w, hw));
  }
  return verdicts;
}

absl::StatusOr<std::vector<SearchSpace>> CreateMappingSpaces(
    const ir::Workload& w, const target::HardwareInfo& hw,
    std::vector<schedule::MappingVerdict>* unusable) {
  GTCO_RETURN_IF_ERROR(FirstApplicableMapping(w, hw).status());
  std::vector<SearchSpace> spaces;
  std::vector<schedule::MappingVerdict> left_out;
  for (const MappingSketch* mapping : RankedMappings(w, hw, nullptr)) {
    absl::StatusOr<SearchSpace> space = SearchSpace::CreateFromMapping(w, hw, *mapping);
    if (!space.ok()) {
      left_out.push_back({mapping->Name(), false,
                          absl::StrCat("applies, but has no search space: ",
                                       space.status().message())});
      continue;
    }
    spaces.push_back(*std::move(space));
  }
  if (spaces.empty()) {
    std::vector<std::string> reasons;
    for (const schedule::MappingVerdict& verdict : left_out) {
      reasons.push_back(absl::StrCat(verdict.mapping, ": ", verdict.reason));
    }
    return absl::InvalidArgumentError(absl::StrCat("no mapping can schedule ", w.Description(),
                                                   ": ", absl::StrJoin(reasons, "; ")));
  }
  if (unusable != nullptr) {
    unusable->insert(unusable->end(), left_out.begin(), left_out.end());
  }
  return spaces;
}

absl::StatusOr<SearchSpace> CreateSpace(const ir::Workload& w, const target::HardwareInfo& hw) {
  GTCO_ASSIGN_OR_RETURN(const MappingSketch* mapping, FirstApplicableMapping(w, hw));
  return SearchSpace::CreateFromMapping(w, hw, *mapping);
}

absl::StatusOr<SearchSpace> CreateSpaceForMapping(const ir::Workload& w,
                                                  const target::HardwareInfo& hw,
                                                  const std::string& mapping) {
  for (const MappingSketch* candidate : MappingRegistry()) {
    if (candidate->Name() != mapping || !schedule::MappingConsiders(*candidate, w, hw)) continue;
    const MappingVerdict verdict = candidate->Explain(w, hw);
    if (!verdict.applies) {
      return absl::InvalidArgumentError(
          absl::StrCat("mapping '", mapping, "' does not apply: ", verdict.reason));
    }
    return SearchSpace::CreateFromMapping(w, hw, *candidate);
  }
  return absl::InvalidArgumentError(absl::StrCat("no mapping '", mapping, "' for a '",
                                                 ir::AnchorKindName(w.anchor), "' workload"));
}

absl::StatusOr<ResolvedTrace> ResolveTrace(const ir::Workload& w, const schedule::Trace& t) {
  ResolvedTrace resolved;
  resolved.sketch = SketchByName(t.sketch);
  if (resolved.sketch == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("unknown schedule sketch '", t.sketch, "'"));
  }
  if (!resolved.sketch->AppliesTo(w)) {
    return absl::InvalidArgumentError(
        absl::StrCat("sketch ", t.sketch, " does not apply to ", w.Description()));
  }
  GTCO_ASSIGN_OR_RETURN(resolved.values, schedule::KnobValuesOf(*resolved.sketch, t));
  return resolved;
}

absl::StatusOr<ir::LoweredFunc> LowerSchedule(const ir::Workload& w, const schedule::Trace& t,
                                              const std::string& func_name) {
  GTCO_ASSIGN_OR_RETURN(const ResolvedTrace resolved, ResolveTrace(w, t));
  const auto* loop_sketch = dynamic_cast<const LoopSketch*>(resolved.sketch);
  if (loop_sketch == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("sketch ", t.sketch, " generates CUDA C, not loop IR"));
  }
  return loop_sketch->Lower(w, resolved.values, func_name);
}

absl::StatusOr<schedule::CudaPlan> PlanCudaSchedule(const ir::Workload& w,
                                                    const schedule::Trace& t) {
  if (dynamic_cast<const CudaSketch*>(SketchByName(t.sketch)) == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", t.sketch, "' is not a CUDA schedule sketch"));
  }
  GTCO_ASSIGN_OR_RETURN(const ResolvedTrace resolved, ResolveTrace(w, t));
  return static_cast<const CudaSketch*>(resolved.sketch)->Plan(w, resolved.values);
}

}  // namespace gtco::kernels
