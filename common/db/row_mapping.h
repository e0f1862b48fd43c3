// Backend-neutral row mapping: the column list of each table and the readers that turn the
// current result row of any backend (a "cursor") into the row structs of database.h.
#pragma once

#include "common/db/database.h"

namespace gtco::db::rows {

inline constexpr char kWorkloadColumns[] = "workload_key, kind, canonical, description, flops";
inline constexpr char kWorkerColumns[] =
    "worker_id, target, hostname, hardware, registered_unix_ms, last_seen_unix_ms";
inline constexpr char kJobColumns[] =
    "job_id, team, model_name, model_sha, target, state, error, budget, options, "
    "created_unix_ms, updated_unix_ms";
inline constexpr char kTaskColumns[] =
    "task_id, job_id, ordinal, workload_key, target, weight, trials_allotted, state";
inline constexpr char kCandidateColumns[] =
    "candidate_id, task_id, workload_key, target, trace, program_hash, state, worker_id, "
    "lease_deadline_unix_ms, created_unix_ms";
inline constexpr char kMeasurementColumns[] =
    "candidate_id, task_id, workload_key, target, trace, program_hash, ok, error_kind, error, "
    "median_seconds, min_seconds, max_seconds, stddev_seconds, repeats, compile_seconds, "
    "worker_id, hardware, measured_unix_ms";
inline constexpr char kTeamColumns[] =
    "name, max_concurrent_jobs, max_trials_per_day, share, created_unix_ms";
inline constexpr char kTokenColumns[] =
    "token_id, team, role, salt, hash, created_unix_ms, revoked_unix_ms";

// Readers of the current row, columns in the order of the lists above. `Cursor` is any type
// with ColumnText(int) -> std::string, ColumnInt64(int) -> int64_t and
// ColumnDouble(int) -> double (SqliteStatement, PostgresRow).

/// Reads a kWorkloadColumns row.
template <typename Cursor>
WorkloadRow ReadWorkload(const Cursor& cursor) {
  WorkloadRow row;
  row.key = cursor.ColumnText(0);
  row.kind = cursor.ColumnText(1);
  row.canonical = cursor.ColumnText(2);
  row.description = cursor.ColumnText(3);
  row.flops = cursor.ColumnInt64(4);
  return row;
}

/// Reads a kWorkerColumns row.
template <typename Cursor>
WorkerRow ReadWorker(const Cursor& cursor) {
  WorkerRow row;
  row.worker_id = cursor.ColumnText(0);
  row.target = cursor.ColumnText(1);
  row.hostname = cursor.ColumnText(2);
  row.hardware = cursor.ColumnText(3);
  row.registered_unix_ms = cursor.ColumnInt64(4);
  row.last_seen_unix_ms = cursor.ColumnInt64(5);
  return row;
}

/// Reads a kJobColumns row.
template <typename Cursor>
JobRow ReadJob(const Cursor& cursor) {
  JobRow row;
  row.job_id = cursor.ColumnText(0);
  row.team = cursor.ColumnText(1);
  row.model_name = cursor.ColumnText(2);
  row.model_sha = cursor.ColumnText(3);
  row.target = cursor.ColumnText(4);
  row.state = cursor.ColumnText(5);
  row.error = cursor.ColumnText(6);
  row.budget = cursor.ColumnInt64(7);
  row.options = cursor.ColumnText(8);
  row.created_unix_ms = cursor.ColumnInt64(9);
  row.updated_unix_ms = cursor.ColumnInt64(10);
  return row;
}

/// Reads a kTaskColumns row.
template <typename Cursor>
TaskRow ReadTask(const Cursor& cursor) {
  TaskRow row;
  row.task_id = cursor.ColumnText(0);
  row.job_id = cursor.ColumnText(1);
  row.ordinal = static_cast<int>(cursor.ColumnInt64(2));
  row.workload_key = cursor.ColumnText(3);
  row.target = cursor.ColumnText(4);
  row.weight = static_cast<int>(cursor.ColumnInt64(5));
  row.trials_allotted = cursor.ColumnInt64(6);
  row.state = cursor.ColumnText(7);
  return row;
}

/// Reads a kCandidateColumns row.
template <typename Cursor>
CandidateRow ReadCandidate(const Cursor& cursor) {
  CandidateRow row;
  row.candidate_id = cursor.ColumnText(0);
  row.task_id = cursor.ColumnText(1);
  row.workload_key = cursor.ColumnText(2);
  row.target = cursor.ColumnText(3);
  row.trace = cursor.ColumnText(4);
  row.program_hash = cursor.ColumnText(5);
  row.state = cursor.ColumnText(6);
  row.worker_id = cursor.ColumnText(7);
  row.lease_deadline_unix_ms = cursor.ColumnInt64(8);
  row.created_unix_ms = cursor.ColumnInt64(9);
  return row;
}

/// Reads a kMeasurementColumns row.
template <typename Cursor>
MeasurementRow ReadMeasurement(const Cursor& cursor) {
  MeasurementRow row;
  row.candidate_id = cursor.ColumnText(0);
  row.task_id = cursor.ColumnText(1);
  row.workload_key = cursor.ColumnText(2);
  row.target = cursor.ColumnText(3);
  row.trace = cursor.ColumnText(4);
  row.program_hash = cursor.ColumnText(5);
  row.ok = cursor.ColumnInt64(6) != 0;
  row.error_kind = cursor.ColumnText(7);
  row.error = cursor.ColumnText(8);
  row.median_seconds = cursor.ColumnDouble(9);
  row.min_seconds = cursor.ColumnDouble(10);
  row.max_seconds = cursor.ColumnDouble(11);
  row.stddev_seconds = cursor.ColumnDouble(12);
  row.repeats = static_cast<int>(cursor.ColumnInt64(13));
  row.compile_seconds = cursor.ColumnDouble(14);
  row.worker_id = cursor.ColumnText(15);
  row.hardware = cursor.ColumnText(16);
  row.measured_unix_ms = cursor.ColumnInt64(17);
  return row;
}

/// Reads a kTeamColumns row.
template <typename Cursor>
TeamRow ReadTeam(const Cursor& cursor) {
  TeamRow row;
  row.name = cursor.ColumnText(0);
  row.max_concurrent_jobs = cursor.ColumnInt64(1);
  row.max_trials_per_day = cursor.ColumnInt64(2);
  row.share = cursor.ColumnDouble(3);
  row.created_unix_ms = cursor.ColumnInt64(4);
  return row;
}

/// Reads a kTokenColumns row.
template <typename Cursor>
TokenRow ReadToken(const Cursor& cursor) {
  TokenRow row;
  row.token_id = cursor.ColumnText(0);
  row.team = cursor.ColumnText(1);
  row.role = cursor.ColumnText(2);
  row.salt = cursor.ColumnText(3);
  row.hash = cursor.ColumnText(4);
  row.created_unix_ms = cursor.ColumnInt64(5);
  row.revoked_unix_ms = cursor.ColumnInt64(6);
  return row;
}

}  // namespace gtco::db::rows
