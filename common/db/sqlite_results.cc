// SQLite schedule database: issued candidates, their leases, and measurements.
#include "absl/strings/str_cat.h"
#include "common/db/sqlite_database.h"
#include "common/db/sqlite_rows.h"
#include "common/util/status.h"

namespace gtco::db {
namespace {

using sqlite_rows::kCandidateColumns;
using sqlite_rows::kMeasurementColumns;

constexpr char kLeased[] = "leased";
constexpr char kMeasured[] = "measured";
constexpr char kPending[] = "pending";

}  // namespace

// ---------------------------------------------------------------------------------------------
// Candidates and leases

absl::Status SqliteDatabase::PutCandidate(const CandidateRow& row) {
  std::lock_guard<std::mutex> lock(mu_);
  GTCO_ASSIGN_OR_RETURN(
      SqliteStatement statement,
      connection_->Prepare(
          absl::StrCat("INSERT INTO candidates (", kCandidateColumns,
                       ") VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10) "
                       "ON CONFLICT (candidate_id) DO UPDATE SET task_id = excluded.task_id, "
                       "workload_key = excluded.workload_key, target = excluded.target, "
                       "trace = excluded.trace, program_hash = excluded.program_hash, "
                       "state = excluded.state, worker_id = excluded.worker_id, "
                       "lease_deadline_unix_ms = excluded.lease_deadline_unix_ms, "
                       "created_unix_ms = excluded.created_unix_ms"),
          absl::StrCat("put candidate '", row.candidate_id, "' of task '", row.task_id, "'")));
  return statement
      .BindAll(row.candidate_id, row.task_id, row.workload_key, row.target, row.trace,
               row.program_hash, row.state, row.worker_id, row.lease_deadline_unix_ms,
               row.created_unix_ms)
      .Run();
}

absl::StatusOr<std::optional<CandidateRow>> SqliteDatabase::GetCandidate(
    const std::string& candidate_id) {
  std::lock_guard<std::mutex> lock(mu_);
  GTCO_ASSIGN_OR_RETURN(
      SqliteStatement statement,
      connection_->Prepare(
          absl::StrCat("SELECT ", kCandidateColumns, " FROM candidates WHERE candidate_id = ?1"),
          absl::StrCat("get candidate '", candidate_id, "'")));
  GTCO_ASSIGN_OR_RETURN(const bool has_row, statement.BindAll(candidate_id).Step());
  if (!has_row) return std::optional<CandidateRow>();
  return std::optional<CandidateRow>(sqlite_rows::ReadCandidate(statement));
}

absl::Status SqliteDatabase::LeaseCandidate(const std::string& candidate_id,
                                            const std::string& worker_id,
                                            int64_t deadline_unix_ms) {
  std::lock_guard<std::mutex> lock(mu_);
  const std::string operation = absl::StrCat("lease candidate '", candidate_id, "'");
  GTCO_ASSIGN_OR_RETURN(
      SqliteStatement update,
      connection_->Prepare("UPDATE candidates SET state = ?1, worker_id = ?2, "
                           "lease_deadline_unix_ms = ?3 WHERE candidate_id = ?4 AND state <> ?5",
                           operation));
  GTCO_RETURN_IF_ERROR(
      update.BindAll(kLeased, worker_id, deadline_unix_ms, candidate_id, kMeasured).Run());
  if (connection_->ChangedRows() > 0) return absl::OkStatus();
  GTCO_ASSIGN_OR_RETURN(
      SqliteStatement lookup,
      connection_->Prepare("SELECT 1 FROM candidates WHERE candidate_id = ?1", operation));
  GTCO_ASSIGN_OR_RETURN(const bool exists, lookup.BindAll(candidate_id).Step());
  if (!exists) {
    return absl::NotFoundError(absl::StrCat("candidate '", candidate_id, "' not found"));
  }
  return absl::FailedPreconditionError(
      absl::StrCat("candidate '", candidate_id, "' is already measured and cannot be leased"));
}

absl::StatusOr<std::vector<std::string>> SqliteDatabase::ExpireLeases(int64_t now_unix_ms) {
  std::lock_guard<std::mutex> lock(mu_);
  const std::string operation = "expire leases";
  GTCO_ASSIGN_OR_RETURN(SqliteTransaction transaction,
                        SqliteTransaction::Begin(connection_.get(), operation));
  std::vector<std::string> expired_ids;
  {
    GTCO_ASSIGN_OR_RETURN(
        SqliteStatement select,
        connection_->Prepare("SELECT candidate_id FROM candidates WHERE state = ?1 AND "
                             "lease_deadline_unix_ms < ?2 ORDER BY lease_deadline_unix_ms, "
                             "candidate_id",
                             operation));
    select.BindAll(kLeased, now_unix_ms);
    while (true) {
      GTCO_ASSIGN_OR_RETURN(const bool has_row, select.Step());
      if (!has_row) break;
      expired_ids.push_back(select.ColumnText(0));
    }
  }
  GTCO_ASSIGN_OR_RETURN(SqliteStatement update,
                        connection_->Prepare("UPDATE candidates SET state = ?1, worker_id = '', "
                                             "lease_deadline_unix_ms = 0 WHERE state = ?2 AND "
                                             "lease_deadline_unix_ms < ?3",
                                             operation));
  GTCO_RETURN_IF_ERROR(update.BindAll(kPending, kLeased, now_unix_ms).Run());
  GTCO_RETURN_IF_ERROR(transaction.Commit());
  return expired_ids;
}

absl::StatusOr<std::vector<CandidateRow>> SqliteDatabase::ListCandidates(const std::string& task_id,
                                                                         const std::string& state) {
  std::lock_guard<std::mutex> lock(mu_);
  GTCO_ASSIGN_OR_RETURN(
      SqliteStatement statement,
      connection_->Prepare(absl::StrCat("SELECT ", kCandidateColumns,
                                        " FROM candidates WHERE task_id = ?1 AND state = ?2 "
                                        "ORDER BY created_unix_ms, candidate_id"),
                           absl::StrCat("list ", state, " candidates of task '", task_id, "'")));
  statement.BindAll(task_id, state);
  return sqlite_rows::ReadAll(statement, &sqlite_rows::ReadCandidate);
}

// ---------------------------------------------------------------------------------------------
// Measurements

absl::StatusOr<bool> SqliteDatabase::RecordMeasurement(const MeasurementRow& row) {
  std::lock_guard<std::mutex> lock(mu_);
  const std::string operation = absl::StrCat("record measurement of candidate '", row.candidate_id,
                                             "' (task '", row.task_id, "')");
  GTCO_ASSIGN_OR_RETURN(SqliteTransaction transaction,
                        SqliteTransaction::Begin(connection_.get(), operation));
  GTCO_ASSIGN_OR_RETURN(
      SqliteStatement insert,
      connection_->Prepare(absl::StrCat("INSERT INTO measurements (", kMeasurementColumns,
                                        ") VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, "
                                        "?12, ?13, ?14, ?15, ?16, ?17, ?18) "
                                        "ON CONFLICT (candidate_id) DO NOTHING"),
                           operation));
  GTCO_RETURN_IF_ERROR(insert
                           .BindAll(row.candidate_id, row.task_id, row.workload_key, row.target,
                                    row.trace, row.program_hash, row.ok, row.error_kind, row.error,
                                    row.median_seconds, row.min_seconds, row.max_seconds,
                                    row.stddev_seconds, row.repeats, row.compile_seconds,
                                    row.worker_id, row.hardware, row.measured_unix_ms)
                           .Run());
  if (connection_->ChangedRows() == 0) return false;  // already recorded: roll back, no-op
  GTCO_ASSIGN_OR_RETURN(SqliteStatement mark,
                        connection_->Prepare("UPDATE candidates SET state = ?1, worker_id = ?2, "
                                             "lease_deadline_unix_ms = 0 WHERE candidate_id = ?3",
                                             operation));
  GTCO_RETURN_IF_ERROR(mark.BindAll(kMeasured, row.worker_id, row.candidate_id).Run());
  GTCO_RETURN_IF_ERROR(transaction.Commit());
  return true;
}

absl::StatusOr<std::vector<MeasurementRow>> SqliteDatabase::ListMeasurementsForTask(
    const std::string& task_id) {
  std::lock_guard<std::mutex> lock(mu_);
  GTCO_ASSIGN_OR_RETURN(
      SqliteStatement statement,
      connection_->Prepare(absl::StrCat("SELECT ", kMeasurementColumns,
                                        " FROM measurements WHERE task_id = ?1 "
                                        "ORDER BY measured_unix_ms, candidate_id"),
                           absl::StrCat("list measurements of task '", task_id, "'")));
  statement.BindAll(task_id);
  return sqlite_rows::ReadAll(statement, &sqlite_rows::ReadMeasurement);
}

absl::StatusOr<TaskProgress> SqliteDatabase::GetTaskProgress(const std::string& task_id) {
  std::lock_guard<std::mutex> lock(mu_);
  GTCO_ASSIGN_OR_RETURN(
      SqliteStatement statement,
      connection_->Prepare("SELECT COUNT(*), COALESCE(SUM(CASE WHEN ok = 0 THEN 1 ELSE 0 END), 0), "
                           "MIN(CASE WHEN ok = 1 THEN median_seconds END) "
                           "FROM measurements WHERE task_id = ?1",
                           absl::StrCat("get progress of task '", task_id, "'")));
  GTCO_ASSIGN_OR_RETURN(const bool has_row, statement.BindAll(task_id).Step());
  TaskProgress progress;
  if (!has_row) return progress;  // aggregates always return a row; kept for safety
  progress.trials_done = statement.ColumnInt64(0);
  progress.trials_failed = statement.ColumnInt64(1);
  if (!statement.ColumnIsNull(2)) progress.best_seconds = statement.ColumnDouble(2);
  return progress;
}

absl::StatusOr<std::optional<MeasurementRow>> SqliteDatabase::BestMeasurement(
    const std::string& workload_key, const std::string& target) {
  GTCO_ASSIGN_OR_RETURN(std::vector<MeasurementRow> best, TopMeasurements(workload_key, target, 1));
  if (best.empty()) return std::optional<MeasurementRow>();
  return std::optional<MeasurementRow>(std::move(best.front()));
}

absl::StatusOr<std::vector<MeasurementRow>> SqliteDatabase::TopMeasurements(
    const std::string& workload_key, const std::string& target, int limit) {
  if (limit < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("top measurements: limit must be >= 0, got ", limit));
  }
  std::lock_guard<std::mutex> lock(mu_);
  GTCO_ASSIGN_OR_RETURN(
      SqliteStatement statement,
      connection_->Prepare(
          absl::StrCat("SELECT ", kMeasurementColumns,
                       " FROM measurements WHERE workload_key = ?1 AND target = ?2 AND ok = 1 "
                       "ORDER BY median_seconds, measured_unix_ms, candidate_id LIMIT ?3"),
          absl::StrCat("top measurements of workload '", workload_key, "' on ", target)));
  statement.BindAll(workload_key, target, limit);
  return sqlite_rows::ReadAll(statement, &sqlite_rows::ReadMeasurement);
}

absl::StatusOr<std::vector<MeasurementRow>> SqliteDatabase::RecentMeasurements(
    const std::string& target, int limit) {
  if (limit < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("recent measurements: limit must be >= 0, got ", limit));
  }
  std::lock_guard<std::mutex> lock(mu_);
  GTCO_ASSIGN_OR_RETURN(
      SqliteStatement statement,
      connection_->Prepare(
          absl::StrCat("SELECT ", kMeasurementColumns,
                       " FROM measurements WHERE target = ?1 AND ok = 1 "
                       "ORDER BY measured_unix_ms DESC, candidate_id LIMIT ?2"),
          absl::StrCat("recent measurements on ", target)));
  statement.BindAll(target, limit);
  return sqlite_rows::ReadAll(statement, &sqlite_rows::ReadMeasurement);
}

absl::StatusOr<int64_t> SqliteDatabase::CountMeasurements(const std::string& task_id) {
  std::lock_guard<std::mutex> lock(mu_);
  GTCO_ASSIGN_OR_RETURN(
      SqliteStatement statement,
      connection_->Prepare("SELECT COUNT(*) FROM measurements WHERE task_id = ?1",
                           absl::StrCat("count measurements of task '", task_id, "'")));
  GTCO_ASSIGN_OR_RETURN(const bool has_row, statement.BindAll(task_id).Step());
  return has_row ? statement.ColumnInt64(0) : 0;
}

}  // namespace gtco::db
