// The web dashboard's JSON documents, built from the farm core's types and the database's rows
// with no HTTP in here: job listings and status (the same data as `gtco-client status
// --explain`), tuning curves, the scheduler's allocation over rounds, the fusion plan, workers
// and the records of a workload. Every document is a JSON object; field names follow the gtco.v1
// protos' (snake_case, times in `*_seconds`).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "common/db/database.h"
#include "server/farm_types.h"
#include "server/worker_registry.h"

namespace gtco::server {

/// The intrinsic mapping whose sketch produced `trace` ("avx512_fma", ...), from the kernel
/// registry; the sketch's name for a replay-only sketch, "" for text that names no sketch.
std::string MappingOfTrace(const std::string& trace);

/// One line of a tuning curve, against the task's trial number (every measurement, ok or
/// failed, in the order measured, counts one).
struct CurveSeries {
  std::string name;  ///< the mapping (with its hardware when several classes measured the task)
  int64_t trials = 0;
  int64_t failed = 0;
  double best_seconds = 0;  ///< 0 while no trial succeeded
  /// (trial number, median seconds) of ok trials; at most kMaxCurvePoints, evenly thinned.
  std::vector<std::pair<int64_t, double>> points;
  /// (trial number, best so far) at every improvement, then at the last trial: a step line.
  std::vector<std::pair<int64_t, double>> best;
};

/// Points of one series beyond this are thinned (the best line is always exact).
inline constexpr size_t kMaxCurvePoints = 1500;

/// The tuning curves of one task: the best over all its mappings, and one per mapping.
struct TaskCurves {
  std::string task_id;
  CurveSeries overall;
  std::vector<CurveSeries> mappings;  ///< in order of each one's first trial
};

/// Builds a task's curves from its measurements in the order they were measured.
TaskCurves BuildTaskCurves(const std::string& task_id,
                           const std::vector<db::MeasurementRow>& measurements);

/// Trials the scheduler placed on one task in one round: the candidates proposed for it at the
/// same moment (the preparer writes a round's placements with one timestamp).
struct AllocationRound {
  int64_t created_unix_ms = 0;
  std::string task_id;
  std::map<std::string, int64_t> per_mapping;  ///< mapping -> candidates
  int64_t Total() const;
};

/// Groups candidates (of any tasks, any states) into rounds, oldest first (ties by task id).
std::vector<AllocationRound> BuildAllocation(const std::vector<db::CandidateRow>& candidates);

/// What the dashboard reads from the database about one task of a job.
struct TaskHistory {
  db::TaskRow task;
  std::optional<db::WorkloadRow> workload;
  std::vector<db::MeasurementRow> measurements;  ///< in the order measured
  std::vector<db::CandidateRow> candidates;      ///< every state
};

/// A leased candidate and the job it belongs to (the workers page's "current lease").
struct WorkerLease {
  std::string worker_id;
  std::string candidate_id;
  std::string task_id;
  std::string job_id;
  bool visible = false;  ///< the caller may see the job (else only that a lease is held)
  int64_t deadline_unix_ms = 0;
};

/// {"error": message, "code": "NOT_FOUND"} for a failed request.
std::string ErrorJson(const absl::Status& status);
/// {"auth": enabled, "role": ..., "team": ...}: who the dashboard signed in.
std::string SessionJson(bool auth_enabled, const std::string& role, const std::string& team);
/// {"jobs": [...]}: each job's summary (state, progress, ETA, team), without its tasks.
std::string JobListJson(const std::vector<JobInfo>& jobs);
/// The job with its tasks, each task's mappings (verdicts, trials, pruning) and the
/// scheduler's latest decisions: what `gtco-client status --explain` prints.
std::string JobJson(const JobInfo& job);
/// {"job_id", "tasks": [{"task_id", "description", "trials", "failed", "best_seconds",
/// "overall": series, "mappings": [series...]}]}; series: {"name", "trials", "failed",
/// "best_seconds", "points": [[n, s]...], "best": [[n, s]...]}.
std::string CurvesJson(const JobInfo& job, const std::vector<TaskHistory>& history);
/// {"job_id", "tasks": [task ids in order], "mappings": [names], "rounds": [{"round",
/// "created_unix_seconds", "task_id", "trials", "per_mapping": {name: n}}]}, oldest first.
std::string AllocationJson(const JobInfo& job, const std::vector<TaskHistory>& history);
/// The model's fusion plan as the server keeps it: one fused subgraph per task, with its anchor
/// kind, description, canonical workload, FLOPs, weight and share of the estimated latency.
std::string PlanJson(const JobInfo& job, const std::vector<TaskHistory>& history);
/// {"heartbeat_seconds", "workers": [{"worker_id", "hostname", "target", "hardware": {...},
/// "alive", "seen_seconds_ago", "results", "trials_per_minute", "leases": [...]}]}.
std::string WorkersJson(const std::vector<WorkerSnapshot>& workers,
                        const std::vector<WorkerLease>& leases, int64_t now_unix_ms);
/// {"workload_key", "target", "description", "records": [...]}, best first.
std::string RecordsJson(const std::string& workload_key, const std::string& target,
                        const QueryResult& result);

}  // namespace gtco::server
