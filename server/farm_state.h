// In-memory state of jobs, tasks, mappings, workers and cost models held by FarmCore (private
// to the server library). The database is the source of truth; this is its working copy.
#pragma once

#include <deque>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/costmodel/cost_model.h"
#include "common/db/database.h"
#include "common/ir/workload.h"
#include "common/schedule/space.h"
#include "common/search/search_strategy.h"
#include "common/target/target.h"
#include "server/farm_core.h"
#include "server/job_options.h"
#include "server/task_scheduler.h"

namespace gtco::server {

/// One intrinsic mapping of a task: its space and the search advancing in it.
struct MappingState {
  std::unique_ptr<schedule::SearchSpace> space;
  std::unique_ptr<search::SearchStrategy> search;
  int64_t trials = 0;     ///< measured
  int64_t in_flight = 0;  ///< proposed, not measured
  double best_seconds = 0;
  bool exhausted = false;
};

struct FarmCore::Task {
  db::TaskRow row;
  ir::Workload workload;
  std::string description;
  int64_t flops = 0;
  /// Created at the first proposal (they need the measuring machine's hardware).
  std::vector<MappingState> mappings;
  std::vector<schedule::MappingVerdict> verdicts;
  target::HardwareInfo hardware;
  std::vector<db::MeasurementRow> history;  ///< replayed into the searches when they are created
  std::vector<double> best_history;         ///< best-so-far after each measured trial
  std::deque<std::string> pending;                 ///< candidate ids ready to lease
  std::map<std::string, std::string> outstanding;  ///< candidate id -> trace (pending or leased)
  std::map<std::string, int64_t> leased_at_ms;     ///< candidate id -> lease time (for metrics)
  std::map<std::string, costmodel::Features> features;  ///< candidate id -> program features
  /// Trace text -> features of traces the search scored (a cache; scoring runs under the lock).
  mutable std::unordered_map<std::string, costmodel::Features> scored_features;
  int64_t trials_done = 0;
  int64_t trials_failed = 0;
  double best_seconds = 0;  ///< 0: none yet
  std::string first_error;
  double last_gain = 0;     ///< the scheduler's latest estimate, for status

  bool Finished() const {
    return db::IsFinished(row.state);
  }
  bool SpacesReady() const { return !mappings.empty(); }
  bool Exhausted() const {
    if (mappings.empty()) return false;
    for (const MappingState& mapping : mappings) {
      if (!mapping.exhausted) return false;
    }
    return true;
  }
  /// The mapping whose sketch produced `trace_text`; -1 when none.
  int MappingOfTrace(const std::string& trace_text) const;
};

struct FarmCore::Job {
  db::JobRow row;
  JobOptions options;
  SchedulerOptions scheduler;
  std::vector<std::unique_ptr<Task>> tasks;
  std::deque<std::string> decisions;  ///< latest scheduler decisions, newest last
  int64_t rounds = 0;
  int64_t version = 1;
  int64_t resumed_ms = 0;  ///< when this server started driving the job (for ETAs)
  int64_t trials_at_resume = 0;
  // The team's policy (teams table; defaults for a team that has no row, e.g. --no-auth).
  double team_share = 1.0;          ///< weight in the fair share across teams
  int64_t team_max_trials_per_day = 0;  ///< 0: no limit
  int64_t proposed = 0;  ///< trials this server proposed for the job (fair share within a team)

  bool Terminal() const {
    return db::IsTerminal(row.state);
  }
  /// Trials measured or in flight across tasks.
  int64_t TrialsSpent() const;
  int64_t BudgetLeft() const { return row.budget - TrialsSpent(); }
};

struct FarmCore::Worker {
  db::WorkerRow row;
  target::HardwareInfo hardware;
  /// A CPU worker that replays traces itself: it gets "trace" candidates, and the server skips
  /// emitting their LLVM bitcode.
  bool replays_traces = false;
  int64_t last_seen_ms = 0;
};

/// A candidate's program lowered from its trace, and the cost-model features of that program.
struct BuiltCandidate {
  LeasedCandidate candidate;
  costmodel::Features features;
};

}  // namespace gtco::server
