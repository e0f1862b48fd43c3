// Search spaces per intrinsic mapping: creation, pruning statistics, sampling, mutation.
#include "common/schedule/space.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/util/status.h"

namespace gtco::schedule {
namespace {

/// Distance of two knob values: on a log scale for positive values (a 128-row block is as near
/// 96 as 171), plain where zero or negative values take part (flags).
double ValueDistance(int64_t a, int64_t b) {
  if (a > 0 && b > 0) return std::abs(std::log(static_cast<double>(a) / static_cast<double>(b)));
  return static_cast<double>(std::abs(a - b));
}

/// The sum of the knobs' value distances.
double KnobDistance(const KnobValues& a, const KnobValues& b) {
  double sum = 0;
  for (size_t knob = 0; knob < a.size() && knob < b.size(); ++knob) {
    sum += ValueDistance(a[knob], b[knob]);
  }
  return sum;
}

constexpr int kMaxSampleTries = 100000;
constexpr int kMaxMutateTries = 200;

constexpr int64_t kMaxEnumerated = int64_t{1} << 18;
constexpr int64_t kPruneSamples = int64_t{1} << 16;

/// Calls visit(values) for every combination of the knobs' candidate values (odometer order,
/// the last knob fastest).
void ForEachCombination(const std::vector<Knob>& knobs,
                        const std::function<void(const KnobValues&)>& visit) {
  std::vector<size_t> digits(knobs.size(), 0);
  KnobValues values(knobs.size());
  while (true) {
    for (size_t knob_idx = 0; knob_idx < knobs.size(); ++knob_idx) {
      values[knob_idx] = knobs[knob_idx].values[digits[knob_idx]];
    }
    visit(values);
    size_t knob_idx = knobs.size();
    while (knob_idx > 0) {
      --knob_idx;
      if (++digits[knob_idx] < knobs[knob_idx].values.size()) break;
      digits[knob_idx] = 0;
      if (knob_idx == 0) return;
    }
    if (knobs.empty()) return;
  }
}

}  // namespace

absl::StatusOr<KnobValues> KnobValuesOf(const Sketch& sketch, const Trace& t) {
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

absl::StatusOr<SearchSpace> SearchSpace::CreateFromMapping(const ir::Workload& w,
                                                           const target::HardwareInfo& hw,
                                                           const MappingSketch& mapping) {
  const Sketch& sketch = mapping.sketch();
  if (!sketch.AppliesTo(w)) {
    return absl::InvalidArgumentError(absl::StrCat("mapping '", mapping.Name(), "' (",
                                                   sketch.Name(), ") does not apply to a '",
                                                   ir::AnchorKindName(w.anchor), "' workload"));
  }
  SearchSpace space;
  space.workload_ = w;
  space.hw_ = hw;
  space.sketch_ = &sketch;
  space.sketch_name_ = sketch.Name();
  space.mapping_ = mapping.Name();
  space.knobs_ = sketch.Knobs(space.workload_, hw);
  for (const Knob& knob : space.knobs_) {
    GTCO_CHECK(!knob.values.empty(), "sketch ", space.sketch_name_, " knob ", knob.name,
               " has no candidate values");
  }
  if (!space.ComputePruneStats()) {
    return absl::InvalidArgumentError(absl::StrCat("every schedule of mapping '", mapping.Name(),
                                                   "' is pruned for ", w.Description(), " on ",
                                                   hw.Summary()));
  }
  const Trace fallback = space.DefaultTrace();
  for (const KnobValues& seed : sketch.Seeds(space.workload_, hw, space.default_values_)) {
    if (seed.size() != space.knobs_.size()) continue;
    Trace trace = space.MakeTrace(seed);
    if (trace == fallback || !space.Contains(trace) ||
        std::find(space.seed_traces_.begin(), space.seed_traces_.end(), trace) !=
            space.seed_traces_.end()) {
      continue;
    }
    space.seed_traces_.push_back(std::move(trace));
  }
  // Lowering the default trace checks the workload's shapes once, up front (CUDA sketches have
  // no loop-IR form: their code generator checks shapes when it replays a trace).
  if (const auto* loop_sketch = dynamic_cast<const LoopSketch*>(&sketch)) {
    GTCO_RETURN_IF_ERROR(
        loop_sketch->Lower(space.workload_, space.default_values_, "probe").status());
  }
  return space;
}

bool SearchSpace::ComputePruneStats() {
  prune_stats_ = PruneStats();
  int64_t product = 1;
  for (const Knob& knob : knobs_) {
    product = std::min(product * static_cast<int64_t>(knob.values.size()), kMaxEnumerated + 1);
  }
  KnobValues first;
  for (const Knob& knob : knobs_) first.push_back(knob.values.front());
  bool have_default = Admits(first);
  if (have_default) default_values_ = first;
  // The sketch's preferred default (each knob's first value) pruned on this hardware (e.g. a
  // weight block too large for this L2): the admitted combination nearest to it, not the first
  // one enumerated (the smallest blocks: ResNet-50's layer-4 3x3 conv on an AVX2 host with a
  // 512 KiB L2 fell back to kc 128, mc 25, its patches unstaged: 7.7-14.5 ms; the nearest, kc
  // 135: 1.67).
  const bool preferred_admitted = have_default;
  double nearest = std::numeric_limits<double>::infinity();
  auto count = [&](const KnobValues& values) {
    const char* rule = sketch_->PruneRule(workload_, hw_, values);
    if (rule == nullptr) {
      ++prune_stats_.admitted;
      if (!preferred_admitted) {
        const double distance = KnobDistance(values, first);
        if (distance < nearest) {
          nearest = distance;
          default_values_ = values;
        }
      }
      have_default = true;
    } else {
      ++prune_stats_.pruned_by_rule[rule];
    }
  };
  if (product <= kMaxEnumerated) {
    ForEachCombination(knobs_, count);
    prune_stats_.considered = product;
    return have_default;
  }
  // A large product: a uniform sample (fixed seed, so the statistics are reproducible), scaled.
  std::mt19937_64 rng(product);
  KnobValues values(knobs_.size());
  for (int64_t sample = 0; sample < kPruneSamples; ++sample) {
    for (size_t knob_idx = 0; knob_idx < knobs_.size(); ++knob_idx) {
      const std::vector<int64_t>& candidates = knobs_[knob_idx].values;
      std::uniform_int_distribution<size_t> pick(0, candidates.size() - 1);
      values[knob_idx] = candidates[pick(rng)];
    }
    count(values);
  }
  int64_t exact_product = 1;
  for (const Knob& knob : knobs_) exact_product *= static_cast<int64_t>(knob.values.size());
  const double scale = static_cast<double>(exact_product) / kPruneSamples;
  prune_stats_.considered = exact_product;
  prune_stats_.admitted = static_cast<int64_t>(prune_stats_.admitted * scale + 0.5);
  for (auto& [rule, pruned] : prune_stats_.pruned_by_rule) {
    pruned = static_cast<int64_t>(pruned * scale + 0.5);
  }
  prune_stats_.sampled = true;
  return have_default;
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

std::optional<Trace> SearchSpace::Nearest(const Trace& t) const {
  if (t.sketch != sketch_name_ || t.decisions.size() != knobs_.size()) return std::nullopt;
  KnobValues values;
  for (size_t knob_idx = 0; knob_idx < knobs_.size(); ++knob_idx) {
    const auto& [name, value] = t.decisions[knob_idx];
    if (name != knobs_[knob_idx].name) return std::nullopt;
    const std::vector<int64_t>& candidates = knobs_[knob_idx].values;
    int64_t nearest = candidates.front();
    for (int64_t candidate : candidates) {
      const double gap = ValueDistance(candidate, value), best = ValueDistance(nearest, value);
      if (gap < best || (gap == best && candidate < nearest)) nearest = candidate;
    }
    values.push_back(nearest);
  }
  if (!Admits(values)) return std::nullopt;
  return MakeTrace(values);
}

std::string SearchSpace::Describe() const {
  std::string text = absl::StrCat(sketch_name_, ":");
  for (const Knob& knob : knobs_) {
    absl::StrAppend(&text, " ", knob.name, "{", absl::StrJoin(knob.values, ","), "}");
  }
  return text;
}

}  // namespace gtco::schedule
