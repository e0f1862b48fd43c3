// Search space of one workload on one machine under one intrinsic mapping: the mapping's sketch
// with candidate knob values derived from the workload's shapes and the hardware, pruning
// statistics per resource rule, random sampling and mutation of valid traces. Which mappings
// exist, and replaying a trace into a program, is common/kernels/ (registry.h, build_program.h).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
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
  /// The trace of this space nearest to `t`, a schedule of another workload under the same
  /// sketch: each decision moved to the candidate value closest to it on a log scale (ties to
  /// the smaller), so that a good schedule of one workload seeds the search of a similar one.
  /// nullopt when `t` names another sketch or other knobs, or the nearest values are pruned.
  std::optional<Trace> Nearest(const Trace& t) const;
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
  /// The trace made of every knob's first value when the rules admit it, else the admitted
  /// combination nearest to that one (the least sum of per-knob distances, on a log scale for
  /// positive values; the first such in knob-product order, or of the sampled combinations
  /// where the product is too large to enumerate). Always Contains().
  Trace DefaultTrace() const { return MakeTrace(default_values_); }
  /// The sketch's seeds (Sketch::Seeds) that the rules admit, other than the default, in the
  /// sketch's order. Each Contains().
  const std::vector<Trace>& SeedTraces() const { return seed_traces_; }

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
  std::vector<Trace> seed_traces_;  ///< admitted seeds, default excluded (SeedTraces)
  PruneStats prune_stats_;
};

/// The trace's decision values in `sketch`'s knob order; INVALID_ARGUMENT when the trace's
/// decision names are not exactly the sketch's knobs in order.
absl::StatusOr<KnobValues> KnobValuesOf(const Sketch& sketch, const Trace& t);

}  // namespace gtco::schedule
