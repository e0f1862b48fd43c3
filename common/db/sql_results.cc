// The SQL schedule database: issued candidates, their leases, and measurements.
#include <algorithm>
#include <map>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/db/row_mapping.h"
#include "common/db/sql_database.h"
#include "common/util/status.h"

namespace gtco::db {
namespace {

const char* const kLeased = CandidateStateName(CandidateState::kLeased);
const char* const kMeasured = CandidateStateName(CandidateState::kMeasured);
const char* const kPending = CandidateStateName(CandidateState::kPending);

absl::Status CheckLimit(int limit, const char* what) {
  if (limit >= 0) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(what, ": limit must be >= 0, got ", limit));
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Candidates and leases

absl::Status SqlDatabase::PutCandidates(const std::vector<CandidateRow>& rows) {
  static const std::string* const kUpsert = new std::string(rows::Candidates().UpsertSql());
  if (rows.empty()) return absl::OkStatus();
  std::lock_guard<std::mutex> lock(mu_);
  const std::string operation =
      absl::StrCat("put ", rows.size(), " candidates of task '", rows.front().task_id, "'");
  GTCO_ASSIGN_OR_RETURN(SqlTransaction transaction, connection_->Begin(operation));
  for (const CandidateRow& row : rows) {
    GTCO_RETURN_IF_ERROR(
        connection_
            ->Execute(*kUpsert, rows::Candidates().Params(row),
                      absl::StrCat("put candidate '", row.candidate_id, "' of task '",
                                   row.task_id, "'"))
            .status());
  }
  return transaction.Commit();
}

absl::StatusOr<std::optional<CandidateRow>> SqlDatabase::GetCandidate(
    const std::string& candidate_id) {
  std::lock_guard<std::mutex> lock(mu_);
  return rows::SelectFirst(*connection_, rows::Candidates(), "WHERE candidate_id = $1",
                           {candidate_id}, absl::StrCat("get candidate '", candidate_id, "'"));
}

absl::Status SqlDatabase::LeaseCandidate(const std::string& candidate_id,
                                         const std::string& worker_id, int64_t deadline_unix_ms) {
  std::lock_guard<std::mutex> lock(mu_);
  const std::string operation = absl::StrCat("lease candidate '", candidate_id, "'");
  GTCO_ASSIGN_OR_RETURN(
      const int64_t leased,
      connection_->Execute("UPDATE candidates SET state = $1, worker_id = $2, "
                           "lease_deadline_unix_ms = $3 WHERE candidate_id = $4 AND state <> $5",
                           {kLeased, worker_id, deadline_unix_ms, candidate_id, kMeasured},
                           operation));
  if (leased > 0) return absl::OkStatus();
  GTCO_ASSIGN_OR_RETURN(
      const bool exists,
      QueryExists("SELECT 1 FROM candidates WHERE candidate_id = $1", {candidate_id}, operation));
  if (!exists) {
    return absl::NotFoundError(absl::StrCat("candidate '", candidate_id, "' not found"));
  }
  return absl::FailedPreconditionError(
      absl::StrCat("candidate '", candidate_id, "' is already measured and cannot be leased"));
}

absl::StatusOr<std::vector<std::string>> SqlDatabase::ExpireLeases(int64_t now_unix_ms) {
  std::lock_guard<std::mutex> lock(mu_);
  const std::string operation = "expire leases";
  GTCO_ASSIGN_OR_RETURN(SqlTransaction transaction, connection_->Begin(operation));
  // The expired leases in report order, locked against other servers until the commit.
  GTCO_ASSIGN_OR_RETURN(
      const SqlRows expired,
      connection_->Query("SELECT candidate_id FROM candidates WHERE state = $1 AND "
                         "lease_deadline_unix_ms < $2 ORDER BY lease_deadline_unix_ms, "
                         "candidate_id COLLATE \"C\"" +
                             std::string(connection_->dialect().lock_rows),
                         {kLeased, now_unix_ms}, operation));
  // RETURNING names exactly the rows this statement changed: under PostgreSQL's READ COMMITTED
  // that may include a row another server leased with a past deadline after the SELECT.
  GTCO_ASSIGN_OR_RETURN(const SqlRows released,
                        connection_->Query("UPDATE candidates SET state = $3, worker_id = '', "
                                           "lease_deadline_unix_ms = 0 WHERE state = $1 AND "
                                           "lease_deadline_unix_ms < $2 RETURNING candidate_id",
                                           {kLeased, now_unix_ms, kPending}, operation));
  GTCO_RETURN_IF_ERROR(transaction.Commit());
  std::set<std::string> released_ids;
  for (const SqlRow& row : released) released_ids.insert(row.ColumnText(0));
  std::vector<std::string> expired_ids;
  for (const SqlRow& row : expired) {
    std::string id = row.ColumnText(0);
    if (released_ids.erase(id) > 0) expired_ids.push_back(std::move(id));
  }
  // Late ones (see above) last, by id.
  expired_ids.insert(expired_ids.end(), released_ids.begin(), released_ids.end());
  return expired_ids;
}

absl::StatusOr<std::vector<CandidateRow>> SqlDatabase::ListCandidates(const std::string& task_id,
                                                                      CandidateState state) {
  std::lock_guard<std::mutex> lock(mu_);
  return rows::Select(
      *connection_, rows::Candidates(),
      "WHERE task_id = $1 AND state = $2 "
      "ORDER BY created_unix_ms, candidate_id COLLATE \"C\"",
      {task_id, CandidateStateName(state)},
      absl::StrCat("list ", CandidateStateName(state), " candidates of task '", task_id, "'"));
}

// ---------------------------------------------------------------------------------------------
// Measurements

absl::StatusOr<bool> SqlDatabase::RecordMeasurement(const MeasurementRow& row) {
  static const std::string* const kInsert = new std::string(
      absl::StrCat(rows::Measurements().insert_sql(), " ON CONFLICT (candidate_id) DO NOTHING"));
  std::lock_guard<std::mutex> lock(mu_);
  const std::string operation = absl::StrCat("record measurement of candidate '", row.candidate_id,
                                             "' (task '", row.task_id, "')");
  GTCO_ASSIGN_OR_RETURN(SqlTransaction transaction, connection_->Begin(operation));
  // A concurrent insert of the same id from another connection waits for that transaction and
  // then does nothing, so exactly one caller sees `true`.
  GTCO_ASSIGN_OR_RETURN(
      const int64_t inserted,
      connection_->Execute(*kInsert, rows::Measurements().Params(row), operation));
  if (inserted == 0) return false;  // already recorded: roll back, no-op
  GTCO_RETURN_IF_ERROR(connection_
                           ->Execute("UPDATE candidates SET state = $1, worker_id = $2, "
                                     "lease_deadline_unix_ms = 0 WHERE candidate_id = $3",
                                     {kMeasured, row.worker_id, row.candidate_id}, operation)
                           .status());
  GTCO_RETURN_IF_ERROR(transaction.Commit());
  return true;
}

absl::StatusOr<std::vector<MeasurementRow>> SqlDatabase::ListMeasurementsForTask(
    const std::string& task_id) {
  std::lock_guard<std::mutex> lock(mu_);
  return rows::Select(*connection_, rows::Measurements(),
                      "WHERE task_id = $1 ORDER BY measured_unix_ms, candidate_id COLLATE \"C\"",
                      {task_id}, absl::StrCat("list measurements of task '", task_id, "'"));
}

absl::StatusOr<TaskProgress> SqlDatabase::GetTaskProgress(const std::string& task_id) {
  std::lock_guard<std::mutex> lock(mu_);
  GTCO_ASSIGN_OR_RETURN(
      const SqlRows result,
      connection_->Query("SELECT COUNT(*), COALESCE(SUM(CASE WHEN ok = 0 THEN 1 ELSE 0 END), 0), "
                         "MIN(CASE WHEN ok = 1 THEN median_seconds END) "
                         "FROM measurements WHERE task_id = $1",
                         {task_id}, absl::StrCat("get progress of task '", task_id, "'")));
  TaskProgress progress;
  if (result.empty()) return progress;  // aggregates always return a row; kept for safety
  const SqlRow& row = result.front();
  progress.trials_done = row.ColumnInt64(0);
  progress.trials_failed = row.ColumnInt64(1);
  if (!row.ColumnIsNull(2)) progress.best_seconds = row.ColumnDouble(2);
  return progress;
}

absl::StatusOr<std::optional<MeasurementRow>> SqlDatabase::BestMeasurement(
    const std::string& workload_key, target::Target target) {
  GTCO_ASSIGN_OR_RETURN(std::vector<MeasurementRow> best, TopMeasurements(workload_key, target, 1));
  if (best.empty()) return std::optional<MeasurementRow>();
  return std::optional<MeasurementRow>(std::move(best.front()));
}

absl::StatusOr<std::vector<MeasurementRow>> SqlDatabase::TopMeasurements(
    const std::string& workload_key, target::Target target, int limit) {
  GTCO_RETURN_IF_ERROR(CheckLimit(limit, "top measurements"));
  std::vector<MeasurementRow> rows;
  {
    std::lock_guard<std::mutex> lock(mu_);
    GTCO_ASSIGN_OR_RETURN(
        rows, rows::Select(*connection_, rows::Measurements(),
                           "WHERE workload_key = $1 AND target = $2 AND ok = 1 ORDER BY "
                           "median_seconds, measured_unix_ms, candidate_id COLLATE \"C\"",
                           {workload_key, target::TargetName(target)},
                           absl::StrCat("top measurements of workload '", workload_key, "' on ",
                                        target::TargetName(target))));
  }
  // One row per (trace, hardware): its fastest measurement's, with the mean of the medians.
  std::vector<MeasurementRow> traces;
  std::map<std::pair<std::string, std::string>, size_t> index;
  for (MeasurementRow& row : rows) {
    auto [found, fresh] = index.try_emplace({row.trace, row.hardware}, traces.size());
    if (fresh) {
      traces.push_back(std::move(row));
      continue;
    }
    MeasurementRow& summary = traces[found->second];
    summary.median_seconds += row.median_seconds;  // a sum until divided below
    summary.max_seconds = std::max(summary.max_seconds, row.max_seconds);
    summary.repeats += row.repeats;
    ++summary.measurements;
  }
  for (MeasurementRow& summary : traces) summary.median_seconds /= summary.measurements;
  std::stable_sort(traces.begin(), traces.end(),
                   [](const MeasurementRow& a, const MeasurementRow& b) {
                     return a.median_seconds < b.median_seconds;
                   });
  if (traces.size() > static_cast<size_t>(limit)) traces.resize(limit);
  return traces;
}

absl::StatusOr<std::vector<MeasurementRow>> SqlDatabase::RecentMeasurements(target::Target target,
                                                                            int limit) {
  GTCO_RETURN_IF_ERROR(CheckLimit(limit, "recent measurements"));
  std::lock_guard<std::mutex> lock(mu_);
  return rows::Select(*connection_, rows::Measurements(),
                      "WHERE target = $1 AND ok = 1 "
                      "ORDER BY measured_unix_ms DESC, candidate_id COLLATE \"C\" LIMIT $2",
                      {target::TargetName(target), limit},
                      absl::StrCat("recent measurements on ", target::TargetName(target)));
}

absl::StatusOr<int64_t> SqlDatabase::CountMeasurements(const std::string& task_id) {
  std::lock_guard<std::mutex> lock(mu_);
  return QueryInteger("SELECT COUNT(*) FROM measurements WHERE task_id = $1", {task_id},
                      absl::StrCat("count measurements of task '", task_id, "'"));
}

// ---------------------------------------------------------------------------------------------
// Moving records between databases

absl::StatusOr<std::vector<MeasurementRow>> SqlDatabase::ListRecords(
    const RecordFilter& filter, const std::string& after_candidate_id, int limit) {
  GTCO_RETURN_IF_ERROR(CheckLimit(limit, "list records"));
  std::string where = "WHERE candidate_id COLLATE \"C\" > $1";
  SqlParams params = {after_candidate_id};
  if (filter.target) {
    params.emplace_back(target::TargetName(*filter.target));
    absl::StrAppend(&where, " AND target = $", params.size());
  }
  if (!filter.workload_key.empty()) {
    params.emplace_back(filter.workload_key);
    absl::StrAppend(&where, " AND workload_key = $", params.size());
  }
  if (!filter.include_failed) absl::StrAppend(&where, " AND ok = 1");
  params.emplace_back(limit);
  absl::StrAppend(&where, " ORDER BY candidate_id COLLATE \"C\" LIMIT $", params.size());
  std::lock_guard<std::mutex> lock(mu_);
  return rows::Select(*connection_, rows::Measurements(), where, params,
                      absl::StrCat("list records after '", after_candidate_id, "'"));
}

absl::StatusOr<std::vector<std::string>> SqlDatabase::ExistingMeasurements(
    const std::vector<std::string>& candidate_ids) {
  constexpr size_t kPerQuery = 200;
  std::vector<std::string> existing;
  std::lock_guard<std::mutex> lock(mu_);
  for (size_t begin = 0; begin < candidate_ids.size(); begin += kPerQuery) {
    const size_t end = std::min(candidate_ids.size(), begin + kPerQuery);
    std::string sql = "SELECT candidate_id FROM measurements WHERE candidate_id IN (";
    SqlParams params;
    for (size_t i = begin; i < end; ++i) {
      params.emplace_back(candidate_ids[i]);
      absl::StrAppend(&sql, i == begin ? "$" : ", $", params.size());
    }
    sql += ")";
    GTCO_ASSIGN_OR_RETURN(const SqlRows found,
                          connection_->Query(sql, params, "look up imported candidate ids"));
    for (const SqlRow& row : found) existing.push_back(row.ColumnText(0));
  }
  std::sort(existing.begin(), existing.end());
  return existing;
}

absl::StatusOr<int64_t> SqlDatabase::ImportRecords(const std::vector<WorkloadRow>& workloads,
                                                   const std::vector<JobRow>& jobs,
                                                   const std::vector<TaskRow>& tasks,
                                                   const std::vector<MeasurementRow>& rows) {
  static const std::string* const kWorkload = new std::string(
      absl::StrCat(rows::Workloads().insert_sql(), " ON CONFLICT (workload_key) DO NOTHING"));
  static const std::string* const kMeasurement = new std::string(
      absl::StrCat(rows::Measurements().insert_sql(), " ON CONFLICT (candidate_id) DO NOTHING"));
  std::lock_guard<std::mutex> lock(mu_);
  const std::string operation = absl::StrCat("import ", rows.size(), " records");
  GTCO_ASSIGN_OR_RETURN(SqlTransaction transaction, connection_->Begin(operation));
  for (const WorkloadRow& row : workloads) {
    GTCO_RETURN_IF_ERROR(
        connection_->Execute(*kWorkload, rows::Workloads().Params(row), operation).status());
  }
  for (const JobRow& job : jobs) {
    GTCO_RETURN_IF_ERROR(
        connection_->Execute(rows::Jobs().insert_sql(), rows::Jobs().Params(job), operation)
            .status());
  }
  for (const TaskRow& task : tasks) {
    GTCO_RETURN_IF_ERROR(
        connection_->Execute(rows::Tasks().insert_sql(), rows::Tasks().Params(task), operation)
            .status());
  }
  int64_t added = 0;
  for (const MeasurementRow& row : rows) {
    GTCO_ASSIGN_OR_RETURN(
        const int64_t inserted,
        connection_->Execute(*kMeasurement, rows::Measurements().Params(row),
                             absl::StrCat(operation, ": record '", row.candidate_id, "'")));
    added += inserted;
  }
  GTCO_RETURN_IF_ERROR(transaction.Commit());
  return added;
}

}  // namespace gtco::db
