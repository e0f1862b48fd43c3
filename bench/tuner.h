// In-process tuner for the benchmarks: searches one workload's schedule space and measures every
// candidate with the worker's CandidateMeasurer, exactly as the farm measures it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/ir/workload.h"
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

struct TuneOptions {
  int trials = 1000;  ///< measured candidates in all (failed ones included)
  SearchKind kind = SearchKind::kEvolutionary;
  int round_size = 8;  ///< traces proposed per round; the cost model retrains after each round
  uint64_t seed = 1;
};

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
  std::string first_error;    ///< message of the first failed trial, for diagnostics

  double TrialsPerMinute() const {
    return tuning_seconds > 0 ? trials / tuning_seconds * 60.0 : 0.0;
  }
};

/// Tunes `workload` for `hw` with `options.trials` measured candidates over the workload's
/// search spaces (one per intrinsic mapping): rounds go round-robin over the spaces for the
/// first fifth of the trials, then to the space holding the best program so far. INVALID_ARGUMENT when the workload has
/// no search space; UNIMPLEMENTED for SearchKind::kModel when the bench was built without the cost
/// model. A run in which every candidate fails is not an error: best_seconds stays 0.
absl::StatusOr<TuneResult> Tune(const ir::Workload& workload, const target::HardwareInfo& hw,
                                const TuneOptions& options, worker::CandidateMeasurer& measurer);

/// The LLVM IR of (workload, trace) as a kernel named `entry` (LowerSchedule + EmitLlvmIr).
absl::StatusOr<std::string> ProgramFor(const ir::Workload& workload, const schedule::Trace& trace,
                                       const std::string& entry);

}  // namespace gtco::bench
