// Search space of one workload on one machine under one intrinsic mapping: the mapping's sketch
// with candidate knob values derived from the workload's shapes and the hardware, pruning
// statistics per resource rule, random sampling and mutation of valid traces; the mapping
// verdicts of a workload; and LowerSchedule, the deterministic replay of a trace into a kernel.
#pragma once

#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/ir/loop_ir.h"
#include "common/ir/workload.h"
#include "common/schedule/mapping.h"
#include "common/schedule/sketch.h"
#include "common/schedule/trace.h"
#include "common/target/target.h"

namespace gtco::schedule {

/// How the resource rules cut one space's knob product.
struct PruneStats {
  int64_t considered = 0;  ///< combinations of candidate values (the whole knob product)
  int64_t admitted = 0;    ///< combinations every rule accepts
  /// Rejected combinations by the first rule that rejects them (the sketch's fixed rule
  /// order), e.g. "register_file", "l1_tile", "l2_panel", "alignment",
  /// "too_small_to_parallelize", "exceeds_shape". Counted over the whole product, or over a
  /// uniform sample of it scaled to the product when it is large (then `sampled` is true).
  std::map<std::string, int64_t> pruned_by_rule;
  bool sampled = false;
};

/// The valid traces of (workload, hardware) under one mapping. Copyable; holds a copy of the
/// workload. Thread-compatible: const methods may run concurrently with distinct rngs.
class SearchSpace {
 public:
  /// The space of the first applicable mapping in registry order (the best-expected one).
  /// INVALID_ARGUMENT when no mapping considers `w` or none applies (the message lists every
  /// verdict), or `w`'s shapes are inconsistent.
  static absl::StatusOr<SearchSpace> Create(const ir::Workload& w, const target::HardwareInfo& hw);
  /// The space of the mapping named `mapping` for w's workload class. INVALID_ARGUMENT when it
  /// is unknown for the class or does not apply (with the verdict's reason).
  static absl::StatusOr<SearchSpace> CreateForMapping(const ir::Workload& w,
                                                      const target::HardwareInfo& hw,
                                                      const std::string& mapping);
  /// The space of `mapping` (which must consider `w`), without checking its verdict.
  static absl::StatusOr<SearchSpace> CreateFromMapping(const ir::Workload& w,
                                                       const target::HardwareInfo& hw,
                                                       const MappingSketch& mapping);

  /// A uniformly random valid trace (rejection sampling over the knob product).
  Trace Sample(std::mt19937_64& rng) const;
  /// `t` with one or two decisions changed to other candidate values; always valid. A trace
  /// outside the space is replaced by a fresh sample.
  Trace Mutate(const Trace& t, std::mt19937_64& rng) const;
  /// True when `t` names this space's sketch, has exactly its knobs in order, uses candidate
  /// values only, and passes the hardware pruning.
  bool Contains(const Trace& t) const;
  /// Knobs and their candidate values, e.g. "mm_avx512_fma/v1: mr{4,6,8,12,14} nr{1,2,3,4} ...".
  std::string Describe() const;

  /// The sketch's versioned name.
  const std::string& sketch_name() const { return sketch_name_; }
  /// The intrinsic mapping this space searches, e.g. "avx512_fma", "avx2_fma", "vector".
  const std::string& mapping() const { return mapping_; }
  /// Pruning statistics over the knob product, computed once at creation.
  const PruneStats& prune_stats() const { return prune_stats_; }
  /// The knobs in trace order.
  const std::vector<Knob>& knobs() const { return knobs_; }
  /// The trace made of every knob's first value when the rules admit it, else the first
  /// admitted combination in knob-product order. Always Contains().
  Trace DefaultTrace() const { return MakeTrace(default_values_); }

 private:
  SearchSpace() = default;
  Trace MakeTrace(const KnobValues& values) const;
  bool Admits(const KnobValues& values) const;
  /// Counts prune_stats_ and picks default_values_; false when nothing is admitted.
  bool ComputePruneStats();

  ir::Workload workload_;
  target::HardwareInfo hw_;
  const Sketch* sketch_ = nullptr;
  std::string sketch_name_;
  std::string mapping_;
  std::vector<Knob> knobs_;
  KnobValues default_values_;
  PruneStats prune_stats_;
};

/// Every mapping the registry considers for w's workload class, applicable or not, with the
/// reason (CPU features, dtypes), in registry order.
std::vector<MappingVerdict> ExplainMappings(const ir::Workload& w, const target::HardwareInfo& hw);

/// One search space per applicable mapping, in registry order (the best-expected first).
/// INVALID_ARGUMENT as SearchSpace::Create.
absl::StatusOr<std::vector<SearchSpace>> CreateMappingSpaces(const ir::Workload& w,
                                                             const target::HardwareInfo& hw);

/// Replays a trace: the loop nest for (workload, trace), a kernel named `func_name` whose params
/// are the workload's inputs in order ("in0", "in1", ...) then the output ("out"). Deterministic
/// (same inputs => same IR text). INVALID_ARGUMENT when the trace does not belong to the
/// workload's space (unknown sketch, a sketch for another workload class, missing or extra
/// decisions, values outside the sketch's range) or the workload is inconsistent.
absl::StatusOr<ir::LoweredFunc> LowerSchedule(const ir::Workload& w, const Trace& t,
                                              const std::string& func_name);

}  // namespace gtco::schedule
