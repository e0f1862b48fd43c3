// In-process tuner for the benchmarks: searches one workload's schedule space and measures every
// candidate with the worker's CandidateMeasurer, exactly as the farm measures it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/ir/workload.h"
#include "common/kernels/registry.h"
#include "common/schedule/trace.h"
#include "common/target/target.h"
#include "worker/measure.h"

namespace gtco::bench {

/// How candidates are proposed.
enum class SearchKind {
  kRandom,        ///< uniform samples of the space (never repeating a trace)
  kEvolutionary,  ///< EvolutionarySearch without a scorer
  kModel,         ///< EvolutionarySearch ranked by the online cost model (see model_guide.h)
};

/// "random", "evolutionary", "model"; ParseSearchKind accepts the same spellings.
const char* SearchKindName(SearchKind kind);
absl::StatusOr<SearchKind> ParseSearchKind(const std::string& name);

/// One successfully measured trace and the measurer's median.
struct MeasuredTrace {
  schedule::Trace trace;
  double seconds = 0;
};

/// Records of an earlier task on the same target (another workload), for warm-starting the cost
/// model the way the farm's model starts from every earlier job's records.
struct PriorTask {
  ir::Workload workload;
  std::vector<MeasuredTrace> measured;
};

struct TuneOptions {
  int trials = 1000;  ///< measured candidates in all (failed ones included)
  SearchKind kind = SearchKind::kEvolutionary;
  int round_size = 8;  ///< traces proposed per round; the cost model retrains after each round
  uint64_t seed = 1;
  /// After the trials: the `confirm_top` fastest distinct traces are measured `confirm_rounds`
  /// more times, interleaved, and the best is the one with the lowest median over all its
  /// measurements, so one lucky measurement on a busy machine does not pick the program.
  /// These re-measurements are not trials. 0 disables.
  int confirm_top = 8;
  int confirm_rounds = 2;
  /// SearchKind::kModel only: the cost model is first trained on these (other workloads'
  /// records; at most kPriorSamplesPerTask of each, spread over its latency range).
  const std::vector<PriorTask>* prior = nullptr;
  /// Non-empty: only this intrinsic mapping's space is searched (CreateSpaceForMapping), to
  /// compare mappings of one workload side by side.
  std::string mapping;
};

/// How many of each prior task's records warm-start the model (keeps retraining fast).
inline constexpr int kPriorSamplesPerTask = 250;

/// The outcome of one tuning run.
struct TuneResult {
  schedule::Trace best_trace;
  double best_seconds = 0;  ///< the measurer's median of the best candidate; 0 when none succeeded
  int trials = 0;           ///< candidates measured (or failed to lower / compile / verify)
  int failed = 0;
  /// best_so_far[i]: best median seconds after trial i+1 (0 until the first success).
  std::vector<double> best_so_far;
  double tuning_seconds = 0;  ///< wall time of the whole run
  int spaces = 0;             ///< search spaces (intrinsic mappings) the trials were split over
  std::vector<int> trials_per_space;  ///< in CreateMappingSpaces order
  /// Where the wall time went: proposing (incl. model scoring), lowering + compiling + verifying
  /// + timing candidates, and retraining the cost model.
  double propose_seconds = 0, measure_seconds = 0, retrain_seconds = 0;
  std::string first_error;              ///< message of the first failed trial, for diagnostics
  std::vector<MeasuredTrace> measured;  ///< every successful trial, in order
  int confirmed = 0;                    ///< traces re-measured by the confirmation step
  double confirm_seconds = 0;           ///< its wall time (not part of tuning_seconds)
  int prior_samples = 0;                ///< records of other tasks the model was warm-started with

  double TrialsPerMinute() const {
    return tuning_seconds > 0 ? trials / tuning_seconds * 60.0 : 0.0;
  }
};

/// Tunes `workload` for `hw` with `options.trials` measured candidates over the workload's
/// search spaces (one per intrinsic mapping): rounds go round-robin over the spaces for the
/// first fifth of the trials, then to the space holding the best program so far; then the
/// confirmation step (TuneOptions::confirm_top). INVALID_ARGUMENT when the workload has
/// no search space; UNIMPLEMENTED for SearchKind::kModel when the bench was built without the cost
/// model. A run in which every candidate fails is not an error: best_seconds stays 0.
absl::StatusOr<TuneResult> Tune(const ir::Workload& workload, const target::HardwareInfo& hw,
                                const TuneOptions& options, worker::CandidateMeasurer& measurer);

/// The LLVM IR of (workload, trace) as a kernel named `entry` (LowerSchedule + EmitLlvmIr).
absl::StatusOr<std::string> ProgramFor(const ir::Workload& workload, const schedule::Trace& trace,
                                       const std::string& entry);

/// Measures one trace as the farm's worker does (weights evicted before each timed run); a
/// failed lowering is a failed result.
gtco::v1::MeasureResult MeasureTrace(const ir::Workload& workload, const schedule::Trace& trace,
                                     int trial, worker::CandidateMeasurer& measurer);

}  // namespace gtco::bench
