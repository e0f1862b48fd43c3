// In-process tuning loop: propose with the farm's search strategies, lower, compile, verify and
// time with the worker's measurer, keep the best-so-far curve.
#include "bench/tuner.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <memory>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "bench/model_guide.h"
#include "common/codegen/llvm/llvm_codegen.h"
#include "common/kernels/registry.h"
#include "common/schedule/space.h"
#include "common/search/search_strategy.h"
#include "common/util/status.h"

namespace gtco::bench {
namespace {

constexpr char kEntry[] = "gtco_kernel";
using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

search::EvolutionaryOptions OptionsFor(SearchKind kind, uint64_t seed, ModelGuide* guide) {
  search::EvolutionaryOptions options;
  options.seed = seed;
  if (kind == SearchKind::kRandom) {
    // Never leaves the random warm-up: every proposal is a fresh uniform sample.
    options.warmup_random = std::numeric_limits<int>::max();
  }
  if (kind == SearchKind::kModel && guide != nullptr) {
    options.scorer = [guide](const std::vector<schedule::Trace>& traces) {
      return guide->Score(traces);
    };
  }
  return options;
}

/// `preferred` or, when that space is exhausted, the next one that is not; size() when all are.
size_t NextOpenSpace(size_t preferred, const std::vector<bool>& exhausted) {
  for (size_t step = 0; step < exhausted.size(); ++step) {
    const size_t space = (preferred + step) % exhausted.size();
    if (!exhausted[space]) return space;
  }
  return exhausted.size();
}


/// Up to kPriorSamplesPerTask records of `task`, spread evenly over its latency-sorted records
/// (the fast and the slow ones both teach the ranking).
std::vector<const MeasuredTrace*> PriorSample(const PriorTask& task) {
  std::vector<const MeasuredTrace*> sorted;
  for (const MeasuredTrace& record : task.measured) sorted.push_back(&record);
  std::sort(sorted.begin(), sorted.end(),
            [](const MeasuredTrace* a, const MeasuredTrace* b) { return a->seconds < b->seconds; });
  if (sorted.size() <= static_cast<size_t>(kPriorSamplesPerTask)) return sorted;
  std::vector<const MeasuredTrace*> picked;
  for (int index = 0; index < kPriorSamplesPerTask; ++index) {
    picked.push_back(sorted[index * sorted.size() / kPriorSamplesPerTask]);
  }
  return picked;
}

double Median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const size_t middle = values.size() / 2;
  return values.size() % 2 == 1 ? values[middle] : (values[middle - 1] + values[middle]) / 2;
}

/// The confirmation step: re-measures the fastest distinct traces, interleaved, and makes the
/// one with the lowest median over all its measurements the result's best.
void Confirm(const ir::Workload& workload, const TuneOptions& options,
             worker::CandidateMeasurer& measurer, TuneResult* result) {
  if (options.confirm_top <= 0 || options.confirm_rounds <= 0 || result->measured.size() < 2) {
    return;
  }
  const auto start = Clock::now();
  std::vector<const MeasuredTrace*> order;
  for (const MeasuredTrace& record : result->measured) order.push_back(&record);
  std::stable_sort(order.begin(), order.end(), [](const MeasuredTrace* a, const MeasuredTrace* b) {
    return a->seconds < b->seconds;
  });
  std::vector<std::string> texts;
  std::vector<const MeasuredTrace*> top;
  for (const MeasuredTrace* record : order) {
    std::string text = record->trace.ToString();
    if (std::find(texts.begin(), texts.end(), text) != texts.end()) continue;
    texts.push_back(std::move(text));
    top.push_back(record);
    if (static_cast<int>(top.size()) == options.confirm_top) break;
  }
  std::vector<std::vector<double>> samples(top.size());
  for (size_t index = 0; index < top.size(); ++index) samples[index].push_back(top[index]->seconds);
  for (int round = 0; round < options.confirm_rounds; ++round) {
    for (size_t index = 0; index < top.size(); ++index) {
      gtco::v1::MeasureResult again =
          MeasureTrace(workload, top[index]->trace, result->trials + 1, measurer);
      // A failure now (it passed before) disqualifies the trace.
      samples[index].push_back(again.ok() ? again.median_seconds()
                                          : std::numeric_limits<double>::infinity());
    }
  }
  size_t best = 0;
  std::vector<double> medians;
  for (const std::vector<double>& values : samples) medians.push_back(Median(values));
  for (size_t index = 1; index < top.size(); ++index) {
    if (medians[index] < medians[best]) best = index;
  }
  if (std::isfinite(medians[best])) {
    result->best_trace = top[best]->trace;
    result->best_seconds = medians[best];
  }
  result->confirmed = static_cast<int>(top.size());
  result->confirm_seconds = SecondsSince(start);
}

}  // namespace

const char* SearchKindName(SearchKind kind) {
  switch (kind) {
    case SearchKind::kRandom:
      return "random";
    case SearchKind::kEvolutionary:
      return "evolutionary";
    case SearchKind::kModel:
      return "model";
  }
  return "unknown";
}

absl::StatusOr<SearchKind> ParseSearchKind(const std::string& name) {
  for (SearchKind kind : {SearchKind::kRandom, SearchKind::kEvolutionary, SearchKind::kModel}) {
    if (name == SearchKindName(kind)) return kind;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown search kind '", name, "' (random, evolutionary, model)"));
}

absl::StatusOr<std::string> ProgramFor(const ir::Workload& workload, const schedule::Trace& trace,
                                       const std::string& entry) {
  GTCO_ASSIGN_OR_RETURN(ir::LoweredFunc func, kernels::LowerSchedule(workload, trace, entry));
  return codegen::EmitLlvmIr(func);
}

absl::StatusOr<TuneResult> Tune(const ir::Workload& workload, const target::HardwareInfo& hw,
                                const TuneOptions& options, worker::CandidateMeasurer& measurer) {
  std::vector<schedule::SearchSpace> spaces;
  if (options.mapping.empty()) {
    GTCO_ASSIGN_OR_RETURN(spaces, kernels::CreateMappingSpaces(workload, hw));
  } else {
    GTCO_ASSIGN_OR_RETURN(schedule::SearchSpace space,
                          kernels::CreateSpaceForMapping(workload, hw, options.mapping));
    spaces.push_back(std::move(space));
  }
  if (spaces.empty()) return absl::InvalidArgumentError("no search space for the workload");
  std::unique_ptr<ModelGuide> guide;
  if (options.kind == SearchKind::kModel) {
    GTCO_ASSIGN_OR_RETURN(guide, MakeModelGuide(workload, hw));
  }
  int prior_samples = 0;
  if (guide && options.prior != nullptr) {
    for (const PriorTask& task : *options.prior) {
      if (task.workload.Key() == workload.Key()) continue;  // never the task's own records
      for (const MeasuredTrace* record : PriorSample(task)) {
        prior_samples += guide->RecordOther(task.workload, record->trace, record->seconds) ? 1 : 0;
      }
    }
    if (prior_samples > 0) guide->Retrain();
  }
  std::vector<std::unique_ptr<search::EvolutionarySearch>> searches;
  for (size_t index = 0; index < spaces.size(); ++index) {
    searches.push_back(std::make_unique<search::EvolutionarySearch>(
        spaces[index], OptionsFor(options.kind, options.seed + index, guide.get())));
  }
  TuneResult result;
  result.prior_samples = prior_samples;
  result.spaces = static_cast<int>(spaces.size());
  result.trials_per_space.assign(spaces.size(), 0);
  std::vector<bool> exhausted(spaces.size(), false);
  size_t best_space = 0, next_space = 0;
  const auto start = Clock::now();
  while (result.trials < options.trials) {
    // Round-robin exploration over the mappings first, then exploitation of the best one.
    const bool exploring = result.trials < options.trials / 5 || result.best_seconds == 0;
    const size_t space = NextOpenSpace(exploring ? next_space : best_space, exhausted);
    if (space == exhausted.size()) break;
    next_space = (space + 1) % spaces.size();
    search::EvolutionarySearch& search = *searches[space];
    const int count = std::min(options.round_size, options.trials - result.trials);
    auto propose_start = Clock::now();
    std::vector<schedule::Trace> round = search.Propose(count);
    result.propose_seconds += SecondsSince(propose_start);
    if (round.empty()) exhausted[space] = true;
    auto measure_start = Clock::now();
    for (const schedule::Trace& trace : round) {
      ++result.trials;
      ++result.trials_per_space[space];
      gtco::v1::MeasureResult measured = MeasureTrace(workload, trace, result.trials, measurer);
      search.Observe(trace, measured.ok(), measured.median_seconds());
      if (measured.ok()) {
        if (guide) guide->Record(trace, measured.median_seconds());
        result.measured.push_back(MeasuredTrace{trace, measured.median_seconds()});
        if (result.best_seconds == 0 || measured.median_seconds() < result.best_seconds) {
          result.best_seconds = measured.median_seconds();
          result.best_trace = trace;
          best_space = space;
        }
      } else if (result.failed++ == 0) {
        result.first_error = measured.error();
      }
      result.best_so_far.push_back(result.best_seconds);
    }
    result.measure_seconds += SecondsSince(measure_start);
    auto retrain_start = Clock::now();
    if (guide && !round.empty()) guide->Retrain();
    result.retrain_seconds += SecondsSince(retrain_start);
  }
  result.tuning_seconds = SecondsSince(start);
  Confirm(workload, options, measurer, &result);
  return result;
}

gtco::v1::MeasureResult MeasureTrace(const ir::Workload& workload, const schedule::Trace& trace,
                                     int trial, worker::CandidateMeasurer& measurer) {
  absl::StatusOr<std::string> program = ProgramFor(workload, trace, kEntry);
  if (!program.ok()) {
    gtco::v1::MeasureResult failed;
    failed.set_ok(false);
    failed.set_error_kind(gtco::v1::ERROR_KIND_COMPILE);
    failed.set_error(absl::StrCat("lowering failed: ", program.status().message()));
    return failed;
  }
  gtco::v1::Candidate candidate;
  candidate.set_candidate_id(std::to_string(trial));
  candidate.set_workload_key(workload.Key());
  candidate.set_workload(workload.CanonicalString());
  candidate.set_entry(kEntry);
  candidate.set_program(*std::move(program));
  candidate.set_trace(trace.ToString());  // the worker packs weights a trace reads pre-packed
  return measurer.Measure(candidate);
}

}  // namespace gtco::bench
