// Search space sampling/mutation, the sketch registry, and trace replay (LowerSchedule).
#include "common/schedule/space.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/util/status.h"

namespace gtco::schedule {
namespace {

constexpr int kMaxSampleTries = 100000;
constexpr int kMaxMutateTries = 200;

const std::vector<const Sketch*>& AllSketches() {
  static const std::vector<const Sketch*>* const sketches =
      new std::vector<const Sketch*>{&MatMulSketch(), &SoftmaxSketch(), &LayerNormSketch(),
                                     &ReduceMeanSketch(), &ElementwiseSketch()};
  return *sketches;
}

/// The trace's values in the sketch's knob order; INVALID_ARGUMENT when the names differ.
absl::StatusOr<KnobValues> ValuesInKnobOrder(const Sketch& sketch, const Trace& t) {
  const std::vector<std::string> names = sketch.KnobNames();
  bool same_names = names.size() == t.decisions.size();
  for (size_t knob_idx = 0; same_names && knob_idx < names.size(); ++knob_idx) {
    same_names = t.decisions[knob_idx].first == names[knob_idx];
  }
  if (!same_names) {
    return absl::InvalidArgumentError(absl::StrCat("trace '", t.ToString(), "': sketch ",
                                                   sketch.Name(), " expects decisions ",
                                                   absl::StrJoin(names, ","), " in this order"));
  }
  KnobValues values;
  for (const auto& decision : t.decisions) values.push_back(decision.second);
  return values;
}

}  // namespace

const Sketch* SketchForWorkload(const ir::Workload& w) {
  for (const Sketch* sketch : AllSketches()) {
    if (sketch->AppliesTo(w)) return sketch;
  }
  return nullptr;
}

const Sketch* SketchByName(const std::string& name) {
  for (const Sketch* sketch : AllSketches()) {
    if (name == sketch->Name()) return sketch;
  }
  return nullptr;
}

absl::StatusOr<SearchSpace> SearchSpace::Create(const ir::Workload& w,
                                                const target::HardwareInfo& hw) {
  const Sketch* sketch = SketchForWorkload(w);
  if (sketch == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("no schedule sketch for anchor '", ir::AnchorKindName(w.anchor), "'"));
  }
  SearchSpace space;
  space.workload_ = w;
  space.hw_ = hw;
  space.sketch_ = sketch;
  space.sketch_name_ = sketch->Name();
  space.knobs_ = sketch->Knobs(space.workload_, hw);
  const Trace default_trace = space.DefaultTrace();
  // Lowering the default trace checks the workload's shapes once, up front.
  GTCO_RETURN_IF_ERROR(LowerSchedule(space.workload_, default_trace, "probe").status());
  GTCO_CHECK(space.Contains(default_trace), "sketch ", space.sketch_name_,
             " rejects its own default trace ", default_trace.ToString());
  return space;
}

Trace SearchSpace::MakeTrace(const KnobValues& values) const {
  Trace trace;
  trace.sketch = sketch_name_;
  for (size_t knob_idx = 0; knob_idx < knobs_.size(); ++knob_idx) {
    trace.decisions.emplace_back(knobs_[knob_idx].name, values[knob_idx]);
  }
  return trace;
}

bool SearchSpace::Admits(const KnobValues& values) const {
  return sketch_->Admits(workload_, hw_, values);
}

Trace SearchSpace::DefaultTrace() const {
  KnobValues values;
  for (const Knob& knob : knobs_) values.push_back(knob.values.front());
  return MakeTrace(values);
}

Trace SearchSpace::Sample(std::mt19937_64& rng) const {
  KnobValues values(knobs_.size());
  for (int attempt = 0; attempt < kMaxSampleTries; ++attempt) {
    for (size_t knob_idx = 0; knob_idx < knobs_.size(); ++knob_idx) {
      const std::vector<int64_t>& candidates = knobs_[knob_idx].values;
      std::uniform_int_distribution<size_t> pick(0, candidates.size() - 1);
      values[knob_idx] = candidates[pick(rng)];
    }
    if (Admits(values)) return MakeTrace(values);
  }
  return DefaultTrace();
}

Trace SearchSpace::Mutate(const Trace& t, std::mt19937_64& rng) const {
  if (!Contains(t)) return Sample(rng);
  std::vector<size_t> mutable_knobs;
  for (size_t knob_idx = 0; knob_idx < knobs_.size(); ++knob_idx) {
    if (knobs_[knob_idx].values.size() > 1) mutable_knobs.push_back(knob_idx);
  }
  if (mutable_knobs.empty()) return t;
  KnobValues original;
  for (const auto& decision : t.decisions) original.push_back(decision.second);
  std::uniform_int_distribution<size_t> pick_knob(0, mutable_knobs.size() - 1);
  std::uniform_int_distribution<int> pick_count(1, 2);
  for (int attempt = 0; attempt < kMaxMutateTries; ++attempt) {
    KnobValues values = original;
    const int changes = std::min<int>(pick_count(rng), static_cast<int>(mutable_knobs.size()));
    for (int change = 0; change < changes; ++change) {
      const size_t knob_idx = mutable_knobs[pick_knob(rng)];
      const std::vector<int64_t>& candidates = knobs_[knob_idx].values;
      std::uniform_int_distribution<size_t> pick_value(0, candidates.size() - 2);
      size_t value_idx = pick_value(rng);
      // Skip the current value so the knob really changes.
      if (candidates[value_idx] == original[knob_idx]) value_idx = candidates.size() - 1;
      values[knob_idx] = candidates[value_idx];
    }
    if (values != original && Admits(values)) return MakeTrace(values);
  }
  return t;
}

bool SearchSpace::Contains(const Trace& t) const {
  if (t.sketch != sketch_name_ || t.decisions.size() != knobs_.size()) return false;
  KnobValues values;
  for (size_t knob_idx = 0; knob_idx < knobs_.size(); ++knob_idx) {
    const auto& [name, value] = t.decisions[knob_idx];
    const std::vector<int64_t>& candidates = knobs_[knob_idx].values;
    if (name != knobs_[knob_idx].name ||
        std::find(candidates.begin(), candidates.end(), value) == candidates.end()) {
      return false;
    }
    values.push_back(value);
  }
  return Admits(values);
}

std::string SearchSpace::Describe() const {
  std::string text = absl::StrCat(sketch_name_, ":");
  for (const Knob& knob : knobs_) {
    absl::StrAppend(&text, " ", knob.name, "{", absl::StrJoin(knob.values, ","), "}");
  }
  return text;
}

absl::StatusOr<ir::LoweredFunc> LowerSchedule(const ir::Workload& w, const Trace& t,
                                              const std::string& func_name) {
  const Sketch* sketch = SketchByName(t.sketch);
  if (sketch == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("unknown schedule sketch '", t.sketch, "'"));
  }
  if (!sketch->AppliesTo(w)) {
    return absl::InvalidArgumentError(absl::StrCat("sketch ", t.sketch, " does not apply to a '",
                                                   ir::AnchorKindName(w.anchor), "' workload"));
  }
  GTCO_ASSIGN_OR_RETURN(const KnobValues values, ValuesInKnobOrder(*sketch, t));
  return sketch->Lower(w, values, func_name);
}

}  // namespace gtco::schedule
