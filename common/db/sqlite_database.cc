// SQLite schedule database: opening, configuration, migrations, workloads, workers, jobs, tasks.
#include "common/db/sqlite_database.h"

#include <chrono>
#include <thread>

#include "absl/strings/str_cat.h"
#include "common/db/migrations.h"
#include "common/db/sqlite_rows.h"
#include "common/util/status.h"

namespace gtco::db {
namespace {

using sqlite_rows::kJobColumns;
using sqlite_rows::kTaskColumns;
using sqlite_rows::kWorkerColumns;
using sqlite_rows::kWorkloadColumns;

int64_t NowUnixMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// Steps a single-row lookup: the row read with `read_row`, or nullopt when there is none.
template <typename Row>
absl::StatusOr<std::optional<Row>> ReadOptional(SqliteStatement& statement,
                                                Row (*read_row)(const SqliteStatement&)) {
  GTCO_ASSIGN_OR_RETURN(const bool has_row, statement.Step());
  if (!has_row) return std::optional<Row>();
  return std::optional<Row>(read_row(statement));
}

}  // namespace

absl::StatusOr<std::unique_ptr<Database>> OpenSqliteDatabase(const std::string& path) {
  GTCO_ASSIGN_OR_RETURN(std::unique_ptr<SqliteDatabase> database, SqliteDatabase::Open(path));
  return std::unique_ptr<Database>(std::move(database));
}

absl::StatusOr<std::unique_ptr<SqliteDatabase>> SqliteDatabase::Open(const std::string& path,
                                                                     const SqliteOptions& options) {
  // Several processes opening a new file at once race on the switch to WAL and the first
  // migration; SQLite can answer BUSY there without waiting (a lock upgrade it cannot wait
  // for), so an open that lost the race starts again on a fresh connection.
  constexpr int kAttempts = 5;
  absl::Status last;
  for (int attempt = 1; attempt <= kAttempts; ++attempt) {
    GTCO_ASSIGN_OR_RETURN(std::unique_ptr<SqliteConnection> connection,
                          SqliteConnection::Open(path, options.busy_timeout_ms));
    std::unique_ptr<SqliteDatabase> database(new SqliteDatabase(std::move(connection)));
    last = database->Configure();
    if (last.ok()) last = database->ApplyMigrations();
    if (last.ok()) return database;
    if (last.code() != absl::StatusCode::kUnavailable) return last;
    std::this_thread::sleep_for(std::chrono::milliseconds(50 * attempt));
  }
  return last;
}

absl::Status SqliteDatabase::Configure() {
  // The busy timeout was set by SqliteConnection::Open: switching to WAL needs a lock another
  // process may hold.
  GTCO_RETURN_IF_ERROR(connection_->Exec("PRAGMA journal_mode = WAL", "enable WAL journal"));
  GTCO_RETURN_IF_ERROR(connection_->Exec("PRAGMA synchronous = NORMAL", "set synchronous"));
  return connection_->Exec("PRAGMA foreign_keys = ON", "enable foreign keys");
}

absl::StatusOr<int> SqliteDatabase::SchemaVersionLocked() {
  GTCO_ASSIGN_OR_RETURN(
      SqliteStatement statement,
      connection_->Prepare("SELECT COALESCE(MAX(version), 0) FROM schema_migrations",
                           "read schema version"));
  GTCO_ASSIGN_OR_RETURN(const bool has_row, statement.Step());
  return has_row ? static_cast<int>(statement.ColumnInt64(0)) : 0;
}

absl::Status SqliteDatabase::ApplyMigrations() {
  std::lock_guard<std::mutex> lock(mu_);
  GTCO_RETURN_IF_ERROR(
      connection_->Exec(std::string(kCreateSchemaMigrationsSql), "create schema_migrations"));
  for (const Migration& migration : AllMigrations()) {
    const std::string operation =
        absl::StrCat("apply migration ", migration.version, " (", std::string(migration.name), ")");
    // The version is re-read under the write lock: another process may have migrated first.
    GTCO_ASSIGN_OR_RETURN(SqliteTransaction transaction,
                          SqliteTransaction::Begin(connection_.get(), operation));
    GTCO_ASSIGN_OR_RETURN(const int current_version, SchemaVersionLocked());
    if (current_version > LatestSchemaVersion()) {
      return absl::FailedPreconditionError(absl::StrCat(
          "database '", connection_->path(), "': schema version ", current_version,
          " is newer than this binary supports (", LatestSchemaVersion(), "); upgrade GTCO"));
    }
    if (current_version >= migration.version) continue;  // rolls back the empty transaction
    GTCO_RETURN_IF_ERROR(connection_->Exec(std::string(migration.sql), operation));
    GTCO_ASSIGN_OR_RETURN(
        SqliteStatement record,
        connection_->Prepare(
            "INSERT INTO schema_migrations (version, applied_unix_ms) VALUES (?1, ?2)", operation));
    GTCO_RETURN_IF_ERROR(record.BindAll(migration.version, NowUnixMs()).Run());
    GTCO_RETURN_IF_ERROR(transaction.Commit());
  }
  return absl::OkStatus();
}

absl::StatusOr<int> SqliteDatabase::SchemaVersion() {
  std::lock_guard<std::mutex> lock(mu_);
  return SchemaVersionLocked();
}

// ---------------------------------------------------------------------------------------------
// Workloads and workers

absl::Status SqliteDatabase::PutWorkload(const WorkloadRow& row) {
  std::lock_guard<std::mutex> lock(mu_);
  GTCO_ASSIGN_OR_RETURN(
      SqliteStatement statement,
      connection_->Prepare(
          absl::StrCat("INSERT INTO workloads (", kWorkloadColumns,
                       ") VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT (workload_key) DO UPDATE SET "
                       "kind = excluded.kind, canonical = excluded.canonical, "
                       "description = excluded.description, flops = excluded.flops"),
          absl::StrCat("put workload '", row.key, "'")));
  return statement.BindAll(row.key, row.kind, row.canonical, row.description, row.flops).Run();
}

absl::StatusOr<std::optional<WorkloadRow>> SqliteDatabase::GetWorkload(const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  GTCO_ASSIGN_OR_RETURN(
      SqliteStatement statement,
      connection_->Prepare(
          absl::StrCat("SELECT ", kWorkloadColumns, " FROM workloads WHERE workload_key = ?1"),
          absl::StrCat("get workload '", key, "'")));
  statement.BindAll(key);
  return ReadOptional(statement, &sqlite_rows::ReadWorkload);
}

absl::Status SqliteDatabase::PutWorker(const WorkerRow& row) {
  std::lock_guard<std::mutex> lock(mu_);
  GTCO_ASSIGN_OR_RETURN(
      SqliteStatement statement,
      connection_->Prepare(
          absl::StrCat("INSERT INTO workers (", kWorkerColumns,
                       ") VALUES (?1, ?2, ?3, ?4, ?5, ?6) ON CONFLICT (worker_id) DO UPDATE SET "
                       "target = excluded.target, hostname = excluded.hostname, "
                       "hardware = excluded.hardware, "
                       "registered_unix_ms = excluded.registered_unix_ms, "
                       "last_seen_unix_ms = excluded.last_seen_unix_ms"),
          absl::StrCat("put worker '", row.worker_id, "'")));
  return statement
      .BindAll(row.worker_id, row.target, row.hostname, row.hardware, row.registered_unix_ms,
               row.last_seen_unix_ms)
      .Run();
}

absl::StatusOr<std::optional<WorkerRow>> SqliteDatabase::GetWorker(const std::string& worker_id) {
  std::lock_guard<std::mutex> lock(mu_);
  GTCO_ASSIGN_OR_RETURN(SqliteStatement statement,
                        connection_->Prepare(absl::StrCat("SELECT ", kWorkerColumns,
                                                          " FROM workers WHERE worker_id = ?1"),
                                             absl::StrCat("get worker '", worker_id, "'")));
  statement.BindAll(worker_id);
  return ReadOptional(statement, &sqlite_rows::ReadWorker);
}

// ---------------------------------------------------------------------------------------------
// Jobs and tasks

absl::Status SqliteDatabase::CreateJob(const JobRow& job, const std::vector<TaskRow>& tasks) {
  for (const TaskRow& task : tasks) {
    if (!task.job_id.empty() && task.job_id != job.job_id) {
      return absl::InvalidArgumentError(absl::StrCat("task '", task.task_id, "' belongs to job '",
                                                     task.job_id, "', not '", job.job_id, "'"));
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  const std::string operation = absl::StrCat("create job '", job.job_id, "'");
  GTCO_ASSIGN_OR_RETURN(SqliteTransaction transaction,
                        SqliteTransaction::Begin(connection_.get(), operation));
  GTCO_ASSIGN_OR_RETURN(
      SqliteStatement insert_job,
      connection_->Prepare(absl::StrCat("INSERT INTO jobs (", kJobColumns,
                                        ") VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)"),
                           operation));
  absl::Status job_status =
      insert_job
          .BindAll(job.job_id, job.team, job.model_name, job.model_sha, job.target, job.state,
                   job.error, job.budget, job.options, job.created_unix_ms, job.updated_unix_ms)
          .Run();
  if (absl::IsAlreadyExists(job_status)) {
    return absl::AlreadyExistsError(absl::StrCat("job '", job.job_id, "' already exists"));
  }
  GTCO_RETURN_IF_ERROR(job_status);
  for (const TaskRow& task : tasks) {
    GTCO_ASSIGN_OR_RETURN(
        SqliteStatement insert_task,
        connection_->Prepare(absl::StrCat("INSERT INTO tasks (", kTaskColumns,
                                          ") VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)"),
                             absl::StrCat(operation, ": insert task '", task.task_id, "'")));
    GTCO_RETURN_IF_ERROR(insert_task
                             .BindAll(task.task_id, job.job_id, task.ordinal, task.workload_key,
                                      task.target, task.weight, task.trials_allotted, task.state)
                             .Run());
  }
  return transaction.Commit();
}

absl::Status SqliteDatabase::UpdateJobState(const std::string& job_id, const std::string& state,
                                            const std::string& error, int64_t now_unix_ms) {
  std::lock_guard<std::mutex> lock(mu_);
  GTCO_ASSIGN_OR_RETURN(
      SqliteStatement statement,
      connection_->Prepare(
          "UPDATE jobs SET state = ?1, error = ?2, updated_unix_ms = ?3 WHERE job_id = ?4",
          absl::StrCat("update job '", job_id, "'")));
  GTCO_RETURN_IF_ERROR(statement.BindAll(state, error, now_unix_ms, job_id).Run());
  if (connection_->ChangedRows() == 0) {
    return absl::NotFoundError(absl::StrCat("job '", job_id, "' not found"));
  }
  return absl::OkStatus();
}

absl::Status SqliteDatabase::UpdateTaskState(const std::string& task_id, const std::string& state) {
  std::lock_guard<std::mutex> lock(mu_);
  GTCO_ASSIGN_OR_RETURN(SqliteStatement statement,
                        connection_->Prepare("UPDATE tasks SET state = ?1 WHERE task_id = ?2",
                                             absl::StrCat("update task '", task_id, "'")));
  GTCO_RETURN_IF_ERROR(statement.BindAll(state, task_id).Run());
  if (connection_->ChangedRows() == 0) {
    return absl::NotFoundError(absl::StrCat("task '", task_id, "' not found"));
  }
  return absl::OkStatus();
}

absl::StatusOr<JobRow> SqliteDatabase::GetJob(const std::string& job_id) {
  std::lock_guard<std::mutex> lock(mu_);
  GTCO_ASSIGN_OR_RETURN(
      SqliteStatement statement,
      connection_->Prepare(absl::StrCat("SELECT ", kJobColumns, " FROM jobs WHERE job_id = ?1"),
                           absl::StrCat("get job '", job_id, "'")));
  statement.BindAll(job_id);
  GTCO_ASSIGN_OR_RETURN(std::optional<JobRow> job, ReadOptional(statement, &sqlite_rows::ReadJob));
  if (!job.has_value()) return absl::NotFoundError(absl::StrCat("job '", job_id, "' not found"));
  return *std::move(job);
}

absl::StatusOr<std::vector<JobRow>> SqliteDatabase::ListJobs(const std::string& team,
                                                             const std::string& state) {
  // One statement per filter combination, so each can use its index.
  std::string where;
  if (!team.empty()) where = " WHERE team = ?1";
  if (!state.empty()) where += team.empty() ? " WHERE state = ?1" : " AND state = ?2";
  std::lock_guard<std::mutex> lock(mu_);
  GTCO_ASSIGN_OR_RETURN(
      SqliteStatement statement,
      connection_->Prepare(absl::StrCat("SELECT ", kJobColumns, " FROM jobs", where,
                                        " ORDER BY created_unix_ms DESC, job_id DESC"),
                           "list jobs"));
  int index = 1;
  if (!team.empty()) statement.Bind(index++, team);
  if (!state.empty()) statement.Bind(index++, state);
  return sqlite_rows::ReadAll(statement, &sqlite_rows::ReadJob);
}

absl::StatusOr<std::vector<TaskRow>> SqliteDatabase::ListTasks(const std::string& job_id) {
  std::lock_guard<std::mutex> lock(mu_);
  GTCO_ASSIGN_OR_RETURN(
      SqliteStatement statement,
      connection_->Prepare(absl::StrCat("SELECT ", kTaskColumns,
                                        " FROM tasks WHERE job_id = ?1 ORDER BY ordinal, task_id"),
                           absl::StrCat("list tasks of job '", job_id, "'")));
  statement.BindAll(job_id);
  GTCO_ASSIGN_OR_RETURN(std::vector<TaskRow> tasks,
                        sqlite_rows::ReadAll(statement, &sqlite_rows::ReadTask));
  if (!tasks.empty()) return tasks;
  // No tasks: tell an unknown job apart from a job without tasks.
  GTCO_ASSIGN_OR_RETURN(SqliteStatement job_lookup,
                        connection_->Prepare("SELECT 1 FROM jobs WHERE job_id = ?1",
                                             absl::StrCat("get job '", job_id, "'")));
  GTCO_ASSIGN_OR_RETURN(const bool job_exists, job_lookup.BindAll(job_id).Step());
  if (!job_exists) return absl::NotFoundError(absl::StrCat("job '", job_id, "' not found"));
  return tasks;
}

}  // namespace gtco::db
