// Row readers for the SQLite database: one column order per table, kept next to its list.
#include "common/db/sqlite_rows.h"

namespace gtco::db::sqlite_rows {

WorkloadRow ReadWorkload(const SqliteStatement& statement) {
  WorkloadRow row;
  row.key = statement.ColumnText(0);
  row.kind = statement.ColumnText(1);
  row.canonical = statement.ColumnText(2);
  row.description = statement.ColumnText(3);
  row.flops = statement.ColumnInt64(4);
  return row;
}

WorkerRow ReadWorker(const SqliteStatement& statement) {
  WorkerRow row;
  row.worker_id = statement.ColumnText(0);
  row.target = statement.ColumnText(1);
  row.hostname = statement.ColumnText(2);
  row.hardware = statement.ColumnText(3);
  row.registered_unix_ms = statement.ColumnInt64(4);
  row.last_seen_unix_ms = statement.ColumnInt64(5);
  return row;
}

JobRow ReadJob(const SqliteStatement& statement) {
  JobRow row;
  row.job_id = statement.ColumnText(0);
  row.team = statement.ColumnText(1);
  row.model_name = statement.ColumnText(2);
  row.model_sha = statement.ColumnText(3);
  row.target = statement.ColumnText(4);
  row.state = statement.ColumnText(5);
  row.error = statement.ColumnText(6);
  row.budget = statement.ColumnInt64(7);
  row.options = statement.ColumnText(8);
  row.created_unix_ms = statement.ColumnInt64(9);
  row.updated_unix_ms = statement.ColumnInt64(10);
  return row;
}

TaskRow ReadTask(const SqliteStatement& statement) {
  TaskRow row;
  row.task_id = statement.ColumnText(0);
  row.job_id = statement.ColumnText(1);
  row.ordinal = static_cast<int>(statement.ColumnInt64(2));
  row.workload_key = statement.ColumnText(3);
  row.target = statement.ColumnText(4);
  row.weight = static_cast<int>(statement.ColumnInt64(5));
  row.trials_allotted = statement.ColumnInt64(6);
  row.state = statement.ColumnText(7);
  return row;
}

CandidateRow ReadCandidate(const SqliteStatement& statement) {
  CandidateRow row;
  row.candidate_id = statement.ColumnText(0);
  row.task_id = statement.ColumnText(1);
  row.workload_key = statement.ColumnText(2);
  row.target = statement.ColumnText(3);
  row.trace = statement.ColumnText(4);
  row.program_hash = statement.ColumnText(5);
  row.state = statement.ColumnText(6);
  row.worker_id = statement.ColumnText(7);
  row.lease_deadline_unix_ms = statement.ColumnInt64(8);
  row.created_unix_ms = statement.ColumnInt64(9);
  return row;
}

MeasurementRow ReadMeasurement(const SqliteStatement& statement) {
  MeasurementRow row;
  row.candidate_id = statement.ColumnText(0);
  row.task_id = statement.ColumnText(1);
  row.workload_key = statement.ColumnText(2);
  row.target = statement.ColumnText(3);
  row.trace = statement.ColumnText(4);
  row.program_hash = statement.ColumnText(5);
  row.ok = statement.ColumnInt64(6) != 0;
  row.error_kind = statement.ColumnText(7);
  row.error = statement.ColumnText(8);
  row.median_seconds = statement.ColumnDouble(9);
  row.min_seconds = statement.ColumnDouble(10);
  row.max_seconds = statement.ColumnDouble(11);
  row.stddev_seconds = statement.ColumnDouble(12);
  row.repeats = static_cast<int>(statement.ColumnInt64(13));
  row.compile_seconds = statement.ColumnDouble(14);
  row.worker_id = statement.ColumnText(15);
  row.hardware = statement.ColumnText(16);
  row.measured_unix_ms = statement.ColumnInt64(17);
  return row;
}

}  // namespace gtco::db::sqlite_rows
