// PostgreSQL schedule database: issued candidates, their leases, and measurements.
#include "absl/strings/str_cat.h"
#include "common/db/postgres_database.h"
#include "common/db/row_mapping.h"
#include "common/util/status.h"

namespace gtco::db {
namespace {

using rows::kCandidateColumns;
using rows::kMeasurementColumns;

constexpr char kLeased[] = "leased";
constexpr char kMeasured[] = "measured";
constexpr char kPending[] = "pending";

absl::Status CheckLimit(int limit, const char* what) {
  if (limit >= 0) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(what, ": limit must be >= 0, got ", limit));
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Candidates and leases

absl::Status PostgresDatabase::PutCandidate(const CandidateRow& row) {
  std::lock_guard<std::mutex> lock(mu_);
  return connection_
      ->Execute(absl::StrCat("INSERT INTO candidates (", kCandidateColumns,
                             ") VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) "
                             "ON CONFLICT (candidate_id) DO UPDATE SET task_id = excluded.task_id, "
                             "workload_key = excluded.workload_key, target = excluded.target, "
                             "trace = excluded.trace, program_hash = excluded.program_hash, "
                             "state = excluded.state, worker_id = excluded.worker_id, "
                             "lease_deadline_unix_ms = excluded.lease_deadline_unix_ms, "
                             "created_unix_ms = excluded.created_unix_ms"),
                SqlParams(row.candidate_id, row.task_id, row.workload_key, row.target, row.trace,
                          row.program_hash, row.state, row.worker_id, row.lease_deadline_unix_ms,
                          row.created_unix_ms),
                absl::StrCat("put candidate '", row.candidate_id, "' of task '", row.task_id, "'"))
      .status();
}

absl::StatusOr<std::optional<CandidateRow>> PostgresDatabase::GetCandidate(
    const std::string& candidate_id) {
  std::lock_guard<std::mutex> lock(mu_);
  GTCO_ASSIGN_OR_RETURN(
      PostgresResult result,
      connection_->Execute(
          absl::StrCat("SELECT ", kCandidateColumns, " FROM candidates WHERE candidate_id = $1"),
          SqlParams(candidate_id), absl::StrCat("get candidate '", candidate_id, "'")));
  if (result.row_count() == 0) return std::optional<CandidateRow>();
  return std::optional<CandidateRow>(rows::ReadCandidate(result.row(0)));
}

absl::Status PostgresDatabase::LeaseCandidate(const std::string& candidate_id,
                                              const std::string& worker_id,
                                              int64_t deadline_unix_ms) {
  std::lock_guard<std::mutex> lock(mu_);
  const std::string operation = absl::StrCat("lease candidate '", candidate_id, "'");
  GTCO_ASSIGN_OR_RETURN(
      PostgresResult update,
      connection_->Execute("UPDATE candidates SET state = $1, worker_id = $2, "
                           "lease_deadline_unix_ms = $3 WHERE candidate_id = $4 AND state <> $5",
                           SqlParams(kLeased, worker_id, deadline_unix_ms, candidate_id, kMeasured),
                           operation));
  if (update.affected_rows() > 0) return absl::OkStatus();
  GTCO_ASSIGN_OR_RETURN(PostgresResult lookup,
                        connection_->Execute("SELECT 1 FROM candidates WHERE candidate_id = $1",
                                             SqlParams(candidate_id), operation));
  if (lookup.row_count() == 0) {
    return absl::NotFoundError(absl::StrCat("candidate '", candidate_id, "' not found"));
  }
  return absl::FailedPreconditionError(
      absl::StrCat("candidate '", candidate_id, "' is already measured and cannot be leased"));
}

absl::StatusOr<std::vector<std::string>> PostgresDatabase::ExpireLeases(int64_t now_unix_ms) {
  std::lock_guard<std::mutex> lock(mu_);
  // One statement: the expired rows are locked (FOR UPDATE re-checks them against concurrent
  // writers from other processes), returned to pending, and reported in deadline order.
  GTCO_ASSIGN_OR_RETURN(
      PostgresResult result,
      connection_->Execute(
          "WITH expired AS (SELECT candidate_id, lease_deadline_unix_ms FROM candidates "
          "WHERE state = $1 AND lease_deadline_unix_ms < $2 FOR UPDATE), "
          "released AS (UPDATE candidates SET state = $3, worker_id = '', "
          "lease_deadline_unix_ms = 0 FROM expired "
          "WHERE candidates.candidate_id = expired.candidate_id "
          "RETURNING candidates.candidate_id, expired.lease_deadline_unix_ms AS old_deadline) "
          "SELECT candidate_id FROM released ORDER BY old_deadline, candidate_id COLLATE \"C\"",
          SqlParams(kLeased, now_unix_ms, kPending), "expire leases"));
  std::vector<std::string> expired_ids;
  expired_ids.reserve(result.row_count());
  for (int row_index = 0; row_index < result.row_count(); ++row_index) {
    expired_ids.push_back(result.row(row_index).ColumnText(0));
  }
  return expired_ids;
}

absl::StatusOr<std::vector<CandidateRow>> PostgresDatabase::ListCandidates(
    const std::string& task_id, const std::string& state) {
  std::lock_guard<std::mutex> lock(mu_);
  GTCO_ASSIGN_OR_RETURN(
      PostgresResult result,
      connection_->Execute(absl::StrCat("SELECT ", kCandidateColumns,
                                        " FROM candidates WHERE task_id = $1 AND state = $2 "
                                        "ORDER BY created_unix_ms, candidate_id COLLATE \"C\""),
                           SqlParams(task_id, state),
                           absl::StrCat("list ", state, " candidates of task '", task_id, "'")));
  return result.ReadAll(&rows::ReadCandidate<PostgresRow>);
}

// ---------------------------------------------------------------------------------------------
// Measurements

absl::StatusOr<bool> PostgresDatabase::RecordMeasurement(const MeasurementRow& row) {
  std::lock_guard<std::mutex> lock(mu_);
  const std::string operation = absl::StrCat("record measurement of candidate '", row.candidate_id,
                                             "' (task '", row.task_id, "')");
  GTCO_ASSIGN_OR_RETURN(PostgresTransaction transaction,
                        PostgresTransaction::Begin(connection_.get(), operation));
  // A concurrent insert of the same id from another connection waits for that transaction and
  // then does nothing, so exactly one caller sees `true`.
  GTCO_ASSIGN_OR_RETURN(
      PostgresResult insert,
      connection_->Execute(
          absl::StrCat("INSERT INTO measurements (", kMeasurementColumns,
                       ") VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, "
                       "$15, $16, $17, $18) ON CONFLICT (candidate_id) DO NOTHING"),
          SqlParams(row.candidate_id, row.task_id, row.workload_key, row.target, row.trace,
                    row.program_hash, row.ok, row.error_kind, row.error, row.median_seconds,
                    row.min_seconds, row.max_seconds, row.stddev_seconds, row.repeats,
                    row.compile_seconds, row.worker_id, row.hardware, row.measured_unix_ms),
          operation));
  if (insert.affected_rows() == 0) return false;  // already recorded: roll back, no-op
  GTCO_RETURN_IF_ERROR(connection_
                           ->Execute("UPDATE candidates SET state = $1, worker_id = $2, "
                                     "lease_deadline_unix_ms = 0 WHERE candidate_id = $3",
                                     SqlParams(kMeasured, row.worker_id, row.candidate_id),
                                     operation)
                           .status());
  GTCO_RETURN_IF_ERROR(transaction.Commit());
  return true;
}

absl::StatusOr<std::vector<MeasurementRow>> PostgresDatabase::ListMeasurementsForTask(
    const std::string& task_id) {
  std::lock_guard<std::mutex> lock(mu_);
  GTCO_ASSIGN_OR_RETURN(
      PostgresResult result,
      connection_->Execute(absl::StrCat("SELECT ", kMeasurementColumns,
                                        " FROM measurements WHERE task_id = $1 "
                                        "ORDER BY measured_unix_ms, candidate_id COLLATE \"C\""),
                           SqlParams(task_id),
                           absl::StrCat("list measurements of task '", task_id, "'")));
  return result.ReadAll(&rows::ReadMeasurement<PostgresRow>);
}

absl::StatusOr<TaskProgress> PostgresDatabase::GetTaskProgress(const std::string& task_id) {
  std::lock_guard<std::mutex> lock(mu_);
  GTCO_ASSIGN_OR_RETURN(
      PostgresResult result,
      connection_->Execute("SELECT COUNT(*), COALESCE(SUM(CASE WHEN ok = 0 THEN 1 ELSE 0 END), 0), "
                           "MIN(CASE WHEN ok = 1 THEN median_seconds END) "
                           "FROM measurements WHERE task_id = $1",
                           SqlParams(task_id),
                           absl::StrCat("get progress of task '", task_id, "'")));
  TaskProgress progress;
  if (result.row_count() == 0) return progress;  // aggregates always return a row
  const PostgresRow row = result.row(0);
  progress.trials_done = row.ColumnInt64(0);
  progress.trials_failed = row.ColumnInt64(1);
  if (!row.ColumnIsNull(2)) progress.best_seconds = row.ColumnDouble(2);
  return progress;
}

absl::StatusOr<std::optional<MeasurementRow>> PostgresDatabase::BestMeasurement(
    const std::string& workload_key, const std::string& target) {
  GTCO_ASSIGN_OR_RETURN(std::vector<MeasurementRow> best, TopMeasurements(workload_key, target, 1));
  if (best.empty()) return std::optional<MeasurementRow>();
  return std::optional<MeasurementRow>(std::move(best.front()));
}

absl::StatusOr<std::vector<MeasurementRow>> PostgresDatabase::TopMeasurements(
    const std::string& workload_key, const std::string& target, int limit) {
  GTCO_RETURN_IF_ERROR(CheckLimit(limit, "top measurements"));
  std::lock_guard<std::mutex> lock(mu_);
  GTCO_ASSIGN_OR_RETURN(
      PostgresResult result,
      connection_->Execute(
          absl::StrCat("SELECT ", kMeasurementColumns,
                       " FROM measurements WHERE workload_key = $1 AND target = $2 AND ok = 1 "
                       "ORDER BY median_seconds, measured_unix_ms, candidate_id COLLATE \"C\" "
                       "LIMIT $3"),
          SqlParams(workload_key, target, limit),
          absl::StrCat("top measurements of workload '", workload_key, "' on ", target)));
  return result.ReadAll(&rows::ReadMeasurement<PostgresRow>);
}

absl::StatusOr<std::vector<MeasurementRow>> PostgresDatabase::RecentMeasurements(
    const std::string& target, int limit) {
  GTCO_RETURN_IF_ERROR(CheckLimit(limit, "recent measurements"));
  std::lock_guard<std::mutex> lock(mu_);
  GTCO_ASSIGN_OR_RETURN(
      PostgresResult result,
      connection_->Execute(absl::StrCat("SELECT ", kMeasurementColumns,
                                        " FROM measurements WHERE target = $1 AND ok = 1 "
                                        "ORDER BY measured_unix_ms DESC, candidate_id COLLATE "
                                        "\"C\" LIMIT $2"),
                           SqlParams(target, limit),
                           absl::StrCat("recent measurements on ", target)));
  return result.ReadAll(&rows::ReadMeasurement<PostgresRow>);
}

absl::StatusOr<int64_t> PostgresDatabase::CountMeasurements(const std::string& task_id) {
  std::lock_guard<std::mutex> lock(mu_);
  GTCO_ASSIGN_OR_RETURN(
      PostgresResult result,
      connection_->Execute("SELECT COUNT(*) FROM measurements WHERE task_id = $1",
                           SqlParams(task_id),
                           absl::StrCat("count measurements of task '", task_id, "'")));
  return result.row_count() > 0 ? result.row(0).ColumnInt64(0) : 0;
}

}  // namespace gtco::db
