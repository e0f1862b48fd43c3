// Column lists and row readers shared by the SQLite database's source files.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/db/database.h"
#include "common/db/sqlite_connection.h"

namespace gtco::db::sqlite_rows {

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

/// Readers of the current row, columns in the order of the lists above.
WorkloadRow ReadWorkload(const SqliteStatement& statement);
WorkerRow ReadWorker(const SqliteStatement& statement);
JobRow ReadJob(const SqliteStatement& statement);
TaskRow ReadTask(const SqliteStatement& statement);
CandidateRow ReadCandidate(const SqliteStatement& statement);
MeasurementRow ReadMeasurement(const SqliteStatement& statement);

/// Steps `statement` to the end and reads every row with `read_row`.
template <typename Row>
absl::StatusOr<std::vector<Row>> ReadAll(SqliteStatement& statement,
                                         Row (*read_row)(const SqliteStatement&)) {
  std::vector<Row> rows;
  while (true) {
    absl::StatusOr<bool> has_row = statement.Step();
    if (!has_row.ok()) return has_row.status();
    if (!*has_row) return rows;
    rows.push_back(read_row(statement));
  }
}

}  // namespace gtco::db::sqlite_rows
