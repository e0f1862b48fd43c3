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
#include "server/lease_queue.h"
#include "server/task_scheduler.h"

namespace gtco::server {

/// One intrinsic mapping of a task: its space and the search advancing in it. The space's
/// name and sketch are fixed; the space's statistics and the search belong to the preparer
/// thread (no lock), the counters to FarmCore's lock.
struct MappingState {
  std::unique_ptr<schedule::SearchSpace> space;
  std::unique_ptr<search::SearchStrategy> search;
  int64_t trials = 0;     ///< measured
  int64_t in_flight = 0;  ///< reserved or proposed, not measured
  double best_seconds = 0;  ///< means.best
  TraceMeans means;
  bool exhausted = false;
  schedule::PruneStats prune_stats;  ///< the space's, copied after each proposal (for status)
};

/// A task as one hardware class of workers searches it: its mappings' spaces, pruned for that
/// class's hardware, and their searches. Created when a worker of the class first needs work.
struct TaskClass {
  std::string key;  ///< HardwareClassOf(the class's hardware)
  std::vector<MappingState> mappings;
  std::vector<schedule::MappingVerdict> verdicts;
  /// What lowering reads, shared with the ready queue.
  std::shared_ptr<TaskBuild> build;
  /// Trace text -> features of traces the search scored (a cache). Preparer thread only.
  std::unordered_map<std::string, costmodel::Features> scored_features;

  /// Every schedule of every mapping tried (true at once for a class no mapping applies to).
  bool Exhausted() const {
    for (const MappingState& mapping : mappings) {
      if (!mapping.exhausted) return false;
    }
    return true;
  }
  /// The mapping whose sketch produced `trace_text`; -1 when none.
  int MappingOfTrace(const std::string& trace_text) const;
};

struct FarmCore::Task {
  db::TaskRow row;
  ir::Workload workload;
  std::string description;
  int64_t flops = 0;
  /// One per hardware class of the workers that measure it, by class key (nodes never move:
  /// observations and placements point into them).
  std::map<std::string, TaskClass> classes;
  /// Measured before this server drove the task; each class replays those of its own hardware
  /// into its searches when it is created.
  std::vector<db::MeasurementRow> history;
  std::vector<double> best_history;         ///< best-so-far after each measured trial
  /// Candidate ids to lower again (their lease expired, or a restart left them unleased).
  std::deque<std::string> pending;
  std::map<std::string, std::string> outstanding;  ///< candidate id -> trace (pending or leased)
  /// Candidate id -> the class whose search proposed it ("" for one proposed before a restart:
  /// any class whose mappings include its sketch may take it).
  std::map<std::string, std::string> candidate_class;
  /// Trials the scheduler reserved that the search has not proposed yet.
  int64_t reserved = 0;
  /// Measurements not yet fed to the searches (the preparer drains them).
  std::vector<FarmCore::Observation> inbox;
  std::map<std::string, costmodel::Features> features;  ///< candidate id -> program features
  int64_t trials_done = 0;
  int64_t trials_failed = 0;
  double best_seconds = 0;  ///< 0: none yet; else means.best, or the database's best
  TraceMeans means;
  std::string first_error;
  double last_gain = 0;     ///< the scheduler's latest estimate, for status

  bool Finished() const {
    return db::IsFinished(row.state);
  }
  /// The task's state for `hardware_class`; nullptr until that class has spaces.
  TaskClass* Class(const std::string& hardware_class) {
    auto found = classes.find(hardware_class);
    return found == classes.end() ? nullptr : &found->second;
  }
  /// Trials proposed or reserved and not measured yet.
  int64_t InFlight() const { return static_cast<int64_t>(outstanding.size()) + reserved; }
  /// Every class with spaces has tried all of its schedules (false while no class has any: the
  /// task waits for workers of a class some mapping applies to).
  bool Exhausted() const {
    bool searched = false;
    for (const auto& [key, state] : classes) {
      if (state.mappings.empty()) continue;
      if (!state.Exhausted()) return false;
      searched = true;
    }
    return searched;
  }
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


/// A candidate's program lowered from its trace, and the cost-model features of that program.
struct BuiltCandidate {
  LeasedCandidate candidate;
  costmodel::Features features;
};

}  // namespace gtco::server
