// Search space of one workload on one machine: the sketch's knobs with candidate values derived
// from the workload's shapes and the hardware, random sampling and mutation of valid traces,
// and LowerSchedule, the deterministic replay of a trace into a loop-nest kernel.
#pragma once

#include <random>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/ir/loop_ir.h"
#include "common/ir/workload.h"
#include "common/schedule/sketch.h"
#include "common/schedule/trace.h"
#include "common/target/target.h"

namespace gtco::schedule {

/// The valid traces of (workload, hardware). Copyable; holds a copy of the workload.
/// Thread-compatible: const methods may run concurrently with distinct rngs.
class SearchSpace {
 public:
  /// INVALID_ARGUMENT when no sketch applies to `w` or `w`'s shapes are inconsistent.
  static absl::StatusOr<SearchSpace> Create(const ir::Workload& w, const target::HardwareInfo& hw);

  /// A uniformly random valid trace (rejection sampling over the knob product).
  Trace Sample(std::mt19937_64& rng) const;
  /// `t` with one or two decisions changed to other candidate values; always valid. A trace
  /// outside the space is replaced by a fresh sample.
  Trace Mutate(const Trace& t, std::mt19937_64& rng) const;
  /// True when `t` names this space's sketch, has exactly its knobs in order, uses candidate
  /// values only, and passes the hardware pruning.
  bool Contains(const Trace& t) const;
  /// Knobs and their candidate values, e.g. "mm_tiled/v1: mc{8,16,197} nc{...} ...".
  std::string Describe() const;

  /// The sketch's versioned name.
  const std::string& sketch_name() const { return sketch_name_; }
  /// The knobs in trace order.
  const std::vector<Knob>& knobs() const { return knobs_; }
  /// The trace made of every knob's first (safe default) value.
  Trace DefaultTrace() const;

 private:
  SearchSpace() = default;
  Trace MakeTrace(const KnobValues& values) const;
  bool Admits(const KnobValues& values) const;

  ir::Workload workload_;
  target::HardwareInfo hw_;
  const Sketch* sketch_ = nullptr;
  std::string sketch_name_;
  std::vector<Knob> knobs_;
};

/// Replays a trace: the loop nest for (workload, trace), a kernel named `func_name` whose params
/// are the workload's inputs in order ("in0", "in1", ...) then the output ("out"). Deterministic
/// (same inputs => same IR text). INVALID_ARGUMENT when the trace does not belong to the
/// workload's space (unknown sketch, a sketch for another workload class, missing or extra
/// decisions, values outside the sketch's range) or the workload is inconsistent.
absl::StatusOr<ir::LoweredFunc> LowerSchedule(const ir::Workload& w, const Trace& t,
                                              const std::string& func_name);

}  // namespace gtco::schedule
