// PostgreSQL schedule database: opening, migrations, workloads, workers, jobs, tasks.
#include "common/db/postgres_database.h"

#include <chrono>

#include "absl/strings/str_cat.h"
#include "common/db/migrations.h"
#include "common/db/row_mapping.h"
#include "common/util/status.h"

namespace gtco::db {
namespace {

using rows::kJobColumns;
using rows::kTaskColumns;
using rows::kWorkerColumns;
using rows::kWorkloadColumns;

// Advisory lock that serializes migrations between processes opening the same database.
constexpr int64_t kMigrationLockKey = 0x6774636f5f6d6967;  // "gtco_mig"

int64_t NowUnixMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// The first row of `result` read with `read_row`, or nullopt when there is none.
template <typename Row>
std::optional<Row> ReadOptional(const PostgresResult& result, Row (*read_row)(const PostgresRow&)) {
  if (result.row_count() == 0) return std::nullopt;
  return read_row(result.row(0));
}

}  // namespace

absl::StatusOr<std::unique_ptr<PostgresDatabase>> PostgresDatabase::Open(const std::string& uri) {
  GTCO_ASSIGN_OR_RETURN(std::unique_ptr<PostgresConnection> connection,
                        PostgresConnection::Open(uri));
  std::unique_ptr<PostgresDatabase> database(new PostgresDatabase(std::move(connection)));
  GTCO_RETURN_IF_ERROR(database->ApplyMigrations());
  return database;
}

absl::StatusOr<int> PostgresDatabase::SchemaVersionLocked() {
  GTCO_ASSIGN_OR_RETURN(
      PostgresResult result,
      connection_->Execute("SELECT COALESCE(MAX(version), 0) FROM schema_migrations", {},
                           "read schema version"));
  return result.row_count() > 0 ? static_cast<int>(result.row(0).ColumnInt64(0)) : 0;
}

absl::Status PostgresDatabase::ApplyMigrationScript(const std::string& script,
                                                    const std::string& operation) {
  const std::vector<std::string_view> statements = SplitSqlStatements(script);
  for (size_t index = 0; index < statements.size(); ++index) {
    GTCO_RETURN_IF_ERROR(connection_
                             ->Execute(std::string(statements[index]), {},
                                       absl::StrCat(operation, ", statement ", index + 1))
                             .status());
  }
  return absl::OkStatus();
}

absl::Status PostgresDatabase::ApplyMigrations() {
  std::lock_guard<std::mutex> lock(mu_);
  const std::string take_lock = "SELECT pg_advisory_xact_lock($1)";
  {
    const std::string operation = "create schema_migrations";
    GTCO_ASSIGN_OR_RETURN(PostgresTransaction transaction,
                          PostgresTransaction::Begin(connection_.get(), operation));
    GTCO_RETURN_IF_ERROR(
        connection_->Execute(take_lock, SqlParams(kMigrationLockKey), operation).status());
    GTCO_RETURN_IF_ERROR(ApplyMigrationScript(std::string(kCreateSchemaMigrationsSql), operation));
    GTCO_RETURN_IF_ERROR(transaction.Commit());
  }
  for (const Migration& migration : AllMigrations()) {
    const std::string operation =
        absl::StrCat("apply migration ", migration.version, " (", std::string(migration.name), ")");
    // The version is re-read under the lock: another process may have migrated first.
    GTCO_ASSIGN_OR_RETURN(PostgresTransaction transaction,
                          PostgresTransaction::Begin(connection_.get(), operation));
    GTCO_RETURN_IF_ERROR(
        connection_->Execute(take_lock, SqlParams(kMigrationLockKey), operation).status());
    GTCO_ASSIGN_OR_RETURN(const int current_version, SchemaVersionLocked());
    if (current_version > LatestSchemaVersion()) {
      return absl::FailedPreconditionError(absl::StrCat(
          "database '", connection_->location(), "': schema version ", current_version,
          " is newer than this binary supports (", LatestSchemaVersion(), "); upgrade GTCO"));
    }
    if (current_version >= migration.version) continue;  // rolls back the empty transaction
    GTCO_RETURN_IF_ERROR(ApplyMigrationScript(std::string(migration.sql), operation));
    GTCO_RETURN_IF_ERROR(
        connection_
            ->Execute("INSERT INTO schema_migrations (version, applied_unix_ms) VALUES ($1, $2)",
                      SqlParams(migration.version, NowUnixMs()), operation)
            .status());
    GTCO_RETURN_IF_ERROR(transaction.Commit());
  }
  return absl::OkStatus();
}

absl::StatusOr<int> PostgresDatabase::SchemaVersion() {
  std::lock_guard<std::mutex> lock(mu_);
  return SchemaVersionLocked();
}

// ---------------------------------------------------------------------------------------------
// Workloads and workers

absl::Status PostgresDatabase::PutWorkload(const WorkloadRow& row) {
  std::lock_guard<std::mutex> lock(mu_);
  return connection_
      ->Execute(absl::StrCat("INSERT INTO workloads (", kWorkloadColumns,
                             ") VALUES ($1, $2, $3, $4, $5) ON CONFLICT (workload_key) DO UPDATE "
                             "SET kind = excluded.kind, canonical = excluded.canonical, "
                             "description = excluded.description, flops = excluded.flops"),
                SqlParams(row.key, row.kind, row.canonical, row.description, row.flops),
                absl::StrCat("put workload '", row.key, "'"))
      .status();
}

absl::StatusOr<std::optional<WorkloadRow>> PostgresDatabase::GetWorkload(const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  GTCO_ASSIGN_OR_RETURN(
      PostgresResult result,
      connection_->Execute(
          absl::StrCat("SELECT ", kWorkloadColumns, " FROM workloads WHERE workload_key = $1"),
          SqlParams(key), absl::StrCat("get workload '", key, "'")));
  return ReadOptional(result, &rows::ReadWorkload<PostgresRow>);
}

absl::Status PostgresDatabase::PutWorker(const WorkerRow& row) {
  std::lock_guard<std::mutex> lock(mu_);
  return connection_
      ->Execute(absl::StrCat("INSERT INTO workers (", kWorkerColumns,
                             ") VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (worker_id) DO UPDATE "
                             "SET target = excluded.target, hostname = excluded.hostname, "
                             "hardware = excluded.hardware, "
                             "registered_unix_ms = excluded.registered_unix_ms, "
                             "last_seen_unix_ms = excluded.last_seen_unix_ms"),
                SqlParams(row.worker_id, row.target, row.hostname, row.hardware,
                          row.registered_unix_ms, row.last_seen_unix_ms),
                absl::StrCat("put worker '", row.worker_id, "'"))
      .status();
}

absl::StatusOr<std::optional<WorkerRow>> PostgresDatabase::GetWorker(const std::string& worker_id) {
  std::lock_guard<std::mutex> lock(mu_);
  GTCO_ASSIGN_OR_RETURN(
      PostgresResult result,
      connection_->Execute(
          absl::StrCat("SELECT ", kWorkerColumns, " FROM workers WHERE worker_id = $1"),
          SqlParams(worker_id), absl::StrCat("get worker '", worker_id, "'")));
  return ReadOptional(result, &rows::ReadWorker<PostgresRow>);
}

// ---------------------------------------------------------------------------------------------
// Jobs and tasks

absl::Status PostgresDatabase::CreateJob(const JobRow& job, const std::vector<TaskRow>& tasks) {
  for (const TaskRow& task : tasks) {
    if (!task.job_id.empty() && task.job_id != job.job_id) {
      return absl::InvalidArgumentError(absl::StrCat("task '", task.task_id, "' belongs to job '",
                                                     task.job_id, "', not '", job.job_id, "'"));
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  const std::string operation = absl::StrCat("create job '", job.job_id, "'");
  GTCO_ASSIGN_OR_RETURN(PostgresTransaction transaction,
                        PostgresTransaction::Begin(connection_.get(), operation));
  absl::Status job_status =
      connection_
          ->Execute(absl::StrCat("INSERT INTO jobs (", kJobColumns,
                                 ") VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)"),
                    SqlParams(job.job_id, job.team, job.model_name, job.model_sha, job.target,
                              job.state, job.error, job.budget, job.options, job.created_unix_ms,
                              job.updated_unix_ms),
                    operation)
          .status();
  if (absl::IsAlreadyExists(job_status)) {
    return absl::AlreadyExistsError(absl::StrCat("job '", job.job_id, "' already exists"));
  }
  GTCO_RETURN_IF_ERROR(job_status);
  for (const TaskRow& task : tasks) {
    GTCO_RETURN_IF_ERROR(
        connection_
            ->Execute(absl::StrCat("INSERT INTO tasks (", kTaskColumns,
                                   ") VALUES ($1, $2, $3, $4, $5, $6, $7, $8)"),
                      SqlParams(task.task_id, job.job_id, task.ordinal, task.workload_key,
                                task.target, task.weight, task.trials_allotted, task.state),
                      absl::StrCat(operation, ": insert task '", task.task_id, "'"))
            .status());
  }
  return transaction.Commit();
}

absl::Status PostgresDatabase::UpdateJobState(const std::string& job_id, const std::string& state,
                                              const std::string& error, int64_t now_unix_ms) {
  std::lock_guard<std::mutex> lock(mu_);
  GTCO_ASSIGN_OR_RETURN(
      PostgresResult result,
      connection_->Execute(
          "UPDATE jobs SET state = $1, error = $2, updated_unix_ms = $3 WHERE job_id = $4",
          SqlParams(state, error, now_unix_ms, job_id), absl::StrCat("update job '", job_id, "'")));
  if (result.affected_rows() == 0) {
    return absl::NotFoundError(absl::StrCat("job '", job_id, "' not found"));
  }
  return absl::OkStatus();
}

absl::Status PostgresDatabase::UpdateTaskState(const std::string& task_id,
                                               const std::string& state) {
  std::lock_guard<std::mutex> lock(mu_);
  GTCO_ASSIGN_OR_RETURN(
      PostgresResult result,
      connection_->Execute("UPDATE tasks SET state = $1 WHERE task_id = $2",
                           SqlParams(state, task_id), absl::StrCat("update task '", task_id, "'")));
  if (result.affected_rows() == 0) {
    return absl::NotFoundError(absl::StrCat("task '", task_id, "' not found"));
  }
  return absl::OkStatus();
}

absl::StatusOr<JobRow> PostgresDatabase::GetJob(const std::string& job_id) {
  std::lock_guard<std::mutex> lock(mu_);
  GTCO_ASSIGN_OR_RETURN(
      PostgresResult result,
      connection_->Execute(absl::StrCat("SELECT ", kJobColumns, " FROM jobs WHERE job_id = $1"),
                           SqlParams(job_id), absl::StrCat("get job '", job_id, "'")));
  std::optional<JobRow> job = ReadOptional(result, &rows::ReadJob<PostgresRow>);
  if (!job.has_value()) return absl::NotFoundError(absl::StrCat("job '", job_id, "' not found"));
  return *std::move(job);
}

absl::StatusOr<std::vector<JobRow>> PostgresDatabase::ListJobs(const std::string& team,
                                                               const std::string& state) {
  std::string where;
  std::vector<std::string> params;
  if (!team.empty()) {
    params.push_back(team);
    where = " WHERE team = $1";
  }
  if (!state.empty()) {
    params.push_back(state);
    where += absl::StrCat(team.empty() ? " WHERE" : " AND", " state = $", params.size());
  }
  std::lock_guard<std::mutex> lock(mu_);
  GTCO_ASSIGN_OR_RETURN(
      PostgresResult result,
      connection_->Execute(
          absl::StrCat("SELECT ", kJobColumns, " FROM jobs", where,
                       " ORDER BY created_unix_ms DESC, job_id COLLATE \"C\" DESC"),
          params, "list jobs"));
  return result.ReadAll(&rows::ReadJob<PostgresRow>);
}

absl::StatusOr<std::vector<TaskRow>> PostgresDatabase::ListTasks(const std::string& job_id) {
  std::lock_guard<std::mutex> lock(mu_);
  const std::string operation = absl::StrCat("list tasks of job '", job_id, "'");
  GTCO_ASSIGN_OR_RETURN(
      PostgresResult result,
      connection_->Execute(absl::StrCat("SELECT ", kTaskColumns,
                                        " FROM tasks WHERE job_id = $1 "
                                        "ORDER BY ordinal, task_id COLLATE \"C\""),
                           SqlParams(job_id), operation));
  std::vector<TaskRow> tasks = result.ReadAll(&rows::ReadTask<PostgresRow>);
  if (!tasks.empty()) return tasks;
  // No tasks: tell an unknown job apart from a job without tasks.
  GTCO_ASSIGN_OR_RETURN(
      PostgresResult job_lookup,
      connection_->Execute("SELECT 1 FROM jobs WHERE job_id = $1", SqlParams(job_id), operation));
  if (job_lookup.row_count() == 0) {
    return absl::NotFoundError(absl::StrCat("job '", job_id, "' not found"));
  }
  return tasks;
}

}  // namespace gtco::db
