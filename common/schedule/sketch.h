// Sketch rules: the interface each workload class's schedule template implements (its knobs and
// hardware pruning), and LoopSketch, the sketches that lower to the loop IR (CPU kernels). The
// sketches themselves live with their kernel family in common/kernels/.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/ir/loop_ir.h"
#include "common/ir/workload.h"
#include "common/target/target.h"

namespace gtco::schedule {

/// One tunable decision and its candidate values (first value: the safe default).
struct Knob {
  std::string name;
  std::vector<int64_t> values;
};

/// Moves `value` to the front of the knob's values (its default) when it is among them.
inline void Prefer(Knob& knob, int64_t value) {
  auto found = std::find(knob.values.begin(), knob.values.end(), value);
  if (found != knob.values.end()) std::rotate(knob.values.begin(), found, found + 1);
}

/// Decision values in the sketch's knob order.
using KnobValues = std::vector<int64_t>;

/// A schedule template for one workload class. Stateless; implementations are singletons.
class Sketch {
 public:
  virtual ~Sketch() = default;
  /// Versioned name stored in traces, e.g. "mm_tiled/v1". Never reused for different lowering.
  virtual const char* Name() const = 0;
  /// Knob names in trace order.
  virtual std::vector<std::string> KnobNames() const = 0;
  /// Whether this sketch can lower `w`.
  virtual bool AppliesTo(const ir::Workload& w) const = 0;
  /// Candidate values of each knob for (w, hw), in KnobNames() order. The first value of every
  /// knob together form a trace that Admits() accepts.
  virtual std::vector<Knob> Knobs(const ir::Workload& w, const target::HardwareInfo& hw) const = 0;
  /// Pruning: false for combinations that cannot run well on `hw` (register file, caches) or
  /// are pointless for `w`'s shapes. Only called with values from Knobs().
  virtual bool Admits(const ir::Workload& w, const target::HardwareInfo& hw,
                      const KnobValues& values) const = 0;
  /// The first rule (in the sketch's fixed rule order) that rejects `values`, e.g.
  /// "register_file"; nullptr when Admits() accepts them. The default names every rejection
  /// "other"; sketches with resource rules override it (and define Admits through it).
  virtual const char* PruneRule(const ir::Workload& w, const target::HardwareInfo& hw,
                                const KnobValues& values) const {
    return Admits(w, hw, values) ? nullptr : "other";
  }
  /// Hand-picked alternatives to the default trace (`defaults`, every knob's first value or the
  /// first admitted combination), which the search measures right after it, each once: starts in
  /// other regions of the space (e.g. other register-tile shapes), so that a mapping whose
  /// default is poor for one workload is not judged on the default and random samples alone. In
  /// KnobNames() order, values from Knobs(); SearchSpace drops any the rules do not admit.
  virtual std::vector<KnobValues> Seeds(const ir::Workload& /*w*/,
                                        const target::HardwareInfo& /*hw*/,
                                        const KnobValues& /*defaults*/) const {
    return {};
  }
};

/// A sketch whose kernels are loop IR (compiled to LLVM by common/codegen/llvm).
class LoopSketch : public Sketch {
 public:
  /// Lowers (w, values) to a kernel named `func_name`. Depends on nothing else (replayable).
  /// INVALID_ARGUMENT when a value is out of the sketch's structural range.
  virtual absl::StatusOr<ir::LoweredFunc> Lower(const ir::Workload& w, const KnobValues& values,
                                                const std::string& func_name) const = 0;
};

}  // namespace gtco::schedule
