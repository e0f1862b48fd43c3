// The SQL schedule database: opening, migrations, workloads, workers, jobs and tasks.
#include "common/db/sql_database.h"

#include <chrono>

#include "absl/strings/str_cat.h"
#include "common/db/migrations.h"
#include "common/db/row_mapping.h"
#include "common/util/status.h"

namespace gtco::db {
namespace {

int64_t NowUnixMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

absl::StatusOr<std::unique_ptr<SqlDatabase>> SqlDatabase::Open(
    std::unique_ptr<SqlConnection> connection) {
  std::unique_ptr<SqlDatabase> database(new SqlDatabase(std::move(connection)));
  GTCO_RETURN_IF_ERROR(database->ApplyMigrations());
  return database;
}

absl::StatusOr<SqlTransaction> SqlDatabase::BeginMigration(const std::string& operation) {
  GTCO_ASSIGN_OR_RETURN(SqlTransaction transaction, connection_->Begin(operation));
  const std::string_view lock = connection_->dialect().migration_lock;
  if (!lock.empty()) {
    GTCO_RETURN_IF_ERROR(connection_->Execute(std::string(lock), {}, operation).status());
  }
  return transaction;
}

absl::Status SqlDatabase::ApplyMigrations() {
  std::lock_guard<std::mutex> lock(mu_);
  {
    const std::string operation = "create schema_migrations";
    GTCO_ASSIGN_OR_RETURN(SqlTransaction transaction, BeginMigration(operation));
    GTCO_RETURN_IF_ERROR(connection_->ExecuteScript(kCreateSchemaMigrationsSql, operation));
    GTCO_RETURN_IF_ERROR(transaction.Commit());
  }
  for (const Migration& migration : AllMigrations()) {
    const std::string operation =
        absl::StrCat("apply migration ", migration.version, " (", std::string(migration.name), ")");
    // The version is re-read under the lock: another process may have migrated first.
    GTCO_ASSIGN_OR_RETURN(SqlTransaction transaction, BeginMigration(operation));
    GTCO_ASSIGN_OR_RETURN(const int current_version, SchemaVersionLocked());
    if (current_version > LatestSchemaVersion()) {
      return absl::FailedPreconditionError(absl::StrCat(
          "database '", connection_->location(), "': schema version ", current_version,
          " is newer than this binary supports (", LatestSchemaVersion(), "); upgrade GTCO"));
    }
    if (current_version >= migration.version) continue;  // rolls back the empty transaction
    GTCO_RETURN_IF_ERROR(connection_->ExecuteScript(migration.sql, operation));
    GTCO_RETURN_IF_ERROR(
        connection_
            ->Execute("INSERT INTO schema_migrations (version, applied_unix_ms) VALUES ($1, $2)",
                      {migration.version, NowUnixMs()}, operation)
            .status());
    GTCO_RETURN_IF_ERROR(transaction.Commit());
  }
  return absl::OkStatus();
}

absl::StatusOr<int> SqlDatabase::SchemaVersionLocked() {
  GTCO_ASSIGN_OR_RETURN(const int64_t version,
                        QueryInteger("SELECT COALESCE(MAX(version), 0) FROM schema_migrations", {},
                                     "read schema version"));
  return static_cast<int>(version);
}

absl::StatusOr<int> SqlDatabase::SchemaVersion() {
  std::lock_guard<std::mutex> lock(mu_);
  return SchemaVersionLocked();
}

void SqlDatabase::SetStatementObserver(StatementObserver observer) {
  std::lock_guard<std::mutex> lock(mu_);
  connection_->set_observer(std::move(observer));
}

absl::StatusOr<int64_t> SqlDatabase::QueryInteger(const std::string& sql, const SqlParams& params,
                                                  const std::string& operation) {
  GTCO_ASSIGN_OR_RETURN(const SqlRows result, connection_->Query(sql, params, operation));
  return result.empty() ? 0 : result.front().ColumnInt64(0);
}

absl::StatusOr<bool> SqlDatabase::QueryExists(const std::string& sql, const SqlParams& params,
                                              const std::string& operation) {
  GTCO_ASSIGN_OR_RETURN(const SqlRows result, connection_->Query(sql, params, operation));
  return !result.empty();
}

// ---------------------------------------------------------------------------------------------
// Workloads and workers

absl::Status SqlDatabase::PutWorkload(const WorkloadRow& row) {
  static const std::string* const kUpsert = new std::string(rows::Workloads().UpsertSql());
  std::lock_guard<std::mutex> lock(mu_);
  return connection_
      ->Execute(*kUpsert, rows::Workloads().Params(row),
                absl::StrCat("put workload '", row.key, "'"))
      .status();
}

absl::StatusOr<std::optional<WorkloadRow>> SqlDatabase::GetWorkload(const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  return rows::SelectFirst(*connection_, rows::Workloads(), "WHERE workload_key = $1", {key},
                           absl::StrCat("get workload '", key, "'"));
}

absl::Status SqlDatabase::PutWorker(const WorkerRow& row) {
  static const std::string* const kUpsert = new std::string(rows::Workers().UpsertSql());
  std::lock_guard<std::mutex> lock(mu_);
  return connection_
      ->Execute(*kUpsert, rows::Workers().Params(row),
                absl::StrCat("put worker '", row.worker_id, "'"))
      .status();
}

absl::StatusOr<std::optional<WorkerRow>> SqlDatabase::GetWorker(const std::string& worker_id) {
  std::lock_guard<std::mutex> lock(mu_);
  return rows::SelectFirst(*connection_, rows::Workers(), "WHERE worker_id = $1", {worker_id},
                           absl::StrCat("get worker '", worker_id, "'"));
}

// ---------------------------------------------------------------------------------------------
// Jobs and tasks

absl::Status SqlDatabase::CreateJob(const JobRow& job, const std::vector<TaskRow>& tasks) {
  for (const TaskRow& task : tasks) {
    if (!task.job_id.empty() && task.job_id != job.job_id) {
      return absl::InvalidArgumentError(absl::StrCat("task '", task.task_id, "' belongs to job '",
                                                     task.job_id, "', not '", job.job_id, "'"));
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  const std::string operation = absl::StrCat("create job '", job.job_id, "'");
  GTCO_ASSIGN_OR_RETURN(SqlTransaction transaction, connection_->Begin(operation));
  const absl::Status job_status =
      connection_->Execute(rows::Jobs().insert_sql(), rows::Jobs().Params(job), operation).status();
  if (absl::IsAlreadyExists(job_status)) {
    return absl::AlreadyExistsError(absl::StrCat("job '", job.job_id, "' already exists"));
  }
  GTCO_RETURN_IF_ERROR(job_status);
  for (TaskRow task : tasks) {
    task.job_id = job.job_id;
    GTCO_RETURN_IF_ERROR(
        connection_
            ->Execute(rows::Tasks().insert_sql(), rows::Tasks().Params(task),
                      absl::StrCat(operation, ": insert task '", task.task_id, "'"))
            .status());
  }
  return transaction.Commit();
}

absl::Status SqlDatabase::UpdateJobState(const std::string& job_id, JobState state,
                                         const std::string& error, int64_t now_unix_ms) {
  std::lock_guard<std::mutex> lock(mu_);
  GTCO_ASSIGN_OR_RETURN(
      const int64_t updated,
      connection_->Execute(
          "UPDATE jobs SET state = $1, error = $2, updated_unix_ms = $3 WHERE job_id = $4",
          {JobStateName(state), error, now_unix_ms, job_id},
          absl::StrCat("update job '", job_id, "'")));
  if (updated == 0) return absl::NotFoundError(absl::StrCat("job '", job_id, "' not found"));
  return absl::OkStatus();
}

absl::Status SqlDatabase::UpdateTaskState(const std::string& task_id, TaskState state) {
  std::lock_guard<std::mutex> lock(mu_);
  GTCO_ASSIGN_OR_RETURN(const int64_t updated,
                        connection_->Execute("UPDATE tasks SET state = $1 WHERE task_id = $2",
                                             {TaskStateName(state), task_id},
                                             absl::StrCat("update task '", task_id, "'")));
  if (updated == 0) return absl::NotFoundError(absl::StrCat("task '", task_id, "' not found"));
  return absl::OkStatus();
}

absl::StatusOr<JobRow> SqlDatabase::GetJob(const std::string& job_id) {
  std::lock_guard<std::mutex> lock(mu_);
  GTCO_ASSIGN_OR_RETURN(std::optional<JobRow> job,
                        rows::SelectFirst(*connection_, rows::Jobs(), "WHERE job_id = $1", {job_id},
                                          absl::StrCat("get job '", job_id, "'")));
  if (!job.has_value()) return absl::NotFoundError(absl::StrCat("job '", job_id, "' not found"));
  return *std::move(job);
}

absl::StatusOr<std::vector<JobRow>> SqlDatabase::ListJobs(const std::string& team,
                                                          std::optional<JobState> state) {
  // One statement per filter combination, so that each can use its index.
  std::string where;
  SqlParams params;
  if (!team.empty()) {
    params.push_back(team);
    where = "WHERE team = $1 ";
  }
  if (state.has_value()) {
    params.push_back(JobStateName(*state));
    where += absl::StrCat(team.empty() ? "WHERE" : "AND", " state = $", params.size(), " ");
  }
  std::lock_guard<std::mutex> lock(mu_);
  return rows::Select(
      *connection_, rows::Jobs(),
      absl::StrCat(where, "ORDER BY created_unix_ms DESC, job_id COLLATE \"C\" DESC"), params,
      "list jobs");
}

absl::StatusOr<std::vector<TaskRow>> SqlDatabase::ListTasks(const std::string& job_id) {
  std::lock_guard<std::mutex> lock(mu_);
  const std::string operation = absl::StrCat("list tasks of job '", job_id, "'");
  GTCO_ASSIGN_OR_RETURN(std::vector<TaskRow> tasks,
                        rows::Select(*connection_, rows::Tasks(),
                                     "WHERE job_id = $1 ORDER BY ordinal, task_id COLLATE \"C\"",
                                     {job_id}, operation));
  if (!tasks.empty()) return tasks;
  // No tasks: tell an unknown job apart from a job without tasks.
  GTCO_ASSIGN_OR_RETURN(const bool job_exists,
                        QueryExists("SELECT 1 FROM jobs WHERE job_id = $1", {job_id},
                                    absl::StrCat("get job '", job_id, "'")));
  if (!job_exists) return absl::NotFoundError(absl::StrCat("job '", job_id, "' not found"));
  return tasks;
}

}  // namespace gtco::db
