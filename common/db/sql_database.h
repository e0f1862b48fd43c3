// The schedule database written once in SQL: every statement, transaction and check of
// db::Database, run on a SqlConnection (SQLite or PostgreSQL).
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/db/database.h"
#include "common/db/sql_connection.h"

namespace gtco::db {

/// Database over one SqlConnection, with the same statements, semantics, codes and messages on
/// every backend (the per-method contracts are in database.h). Thread-safe: the connection is
/// guarded by one mutex. Several processes may open the same database: migrations run one at a
/// time (SqlDialect::migration_lock, or SQLite's write lock), measurements are recorded with
/// INSERT ... ON CONFLICT DO NOTHING, and expiring leases locks the rows it returns to
/// "pending". Text ordering is bytewise (COLLATE "C") whatever the database's collation.
class SqlDatabase final : public Database {
 public:
  /// Applies pending migrations over `connection` and returns the database that owns it.
  /// FAILED_PRECONDITION "database '<location>': schema version N is newer than this binary
  /// supports ..." when the schema is newer than this binary; the connection's errors otherwise
  /// (UNAVAILABLE when another process held the database's lock too long).
  static absl::StatusOr<std::unique_ptr<SqlDatabase>> Open(
      std::unique_ptr<SqlConnection> connection);

  absl::StatusOr<int> SchemaVersion() override;
  void SetStatementObserver(StatementObserver observer) override;

  absl::Status PutWorkload(const WorkloadRow& row) override;
  absl::StatusOr<std::optional<WorkloadRow>> GetWorkload(const std::string& key) override;
  absl::Status PutWorker(const WorkerRow& row) override;
  absl::StatusOr<std::optional<WorkerRow>> GetWorker(const std::string& worker_id) override;
  absl::Status CreateJob(const JobRow& job, const std::vector<TaskRow>& tasks) override;
  absl::Status UpdateJobState(const std::string& job_id, JobState state, const std::string& error,
                              int64_t now_unix_ms) override;
  absl::Status UpdateTaskState(const std::string& task_id, TaskState state) override;
  absl::StatusOr<JobRow> GetJob(const std::string& job_id) override;
  absl::StatusOr<std::vector<JobRow>> ListJobs(const std::string& team,
                                               std::optional<JobState> state) override;
  absl::StatusOr<std::vector<TaskRow>> ListTasks(const std::string& job_id) override;

  absl::Status PutCandidates(const std::vector<CandidateRow>& rows) override;
  absl::StatusOr<std::optional<CandidateRow>> GetCandidate(
      const std::string& candidate_id) override;
  absl::Status LeaseCandidate(const std::string& candidate_id, const std::string& worker_id,
                              int64_t deadline_unix_ms) override;
  absl::StatusOr<std::vector<std::string>> ExpireLeases(int64_t now_unix_ms) override;
  absl::StatusOr<std::vector<CandidateRow>> ListCandidates(const std::string& task_id,
                                                           CandidateState state) override;

  absl::StatusOr<bool> RecordMeasurement(const MeasurementRow& row) override;
  absl::StatusOr<std::vector<MeasurementRow>> ListMeasurementsForTask(
      const std::string& task_id) override;
  absl::StatusOr<TaskProgress> GetTaskProgress(const std::string& task_id) override;
  absl::StatusOr<std::optional<MeasurementRow>> BestMeasurement(const std::string& workload_key,
                                                                target::Target target) override;
  absl::StatusOr<std::vector<MeasurementRow>> TopMeasurements(const std::string& workload_key,
                                                              target::Target target,
                                                              int limit) override;
  absl::StatusOr<std::vector<MeasurementRow>> RecentMeasurements(target::Target target,
                                                                 int limit) override;
  absl::StatusOr<int64_t> CountMeasurements(const std::string& task_id) override;
  absl::StatusOr<std::vector<MeasurementRow>> ListRecords(const RecordFilter& filter,
                                                          const std::string& after_candidate_id,
                                                          int limit) override;
  absl::StatusOr<std::vector<std::string>> ExistingMeasurements(
      const std::vector<std::string>& candidate_ids) override;
  absl::StatusOr<int64_t> ImportRecords(const std::vector<WorkloadRow>& workloads,
                                        const std::vector<JobRow>& jobs,
                                        const std::vector<TaskRow>& tasks,
                                        const std::vector<MeasurementRow>& rows) override;

  absl::Status PutTeam(const TeamRow& row) override;
  absl::StatusOr<TeamRow> GetTeam(const std::string& name) override;
  absl::StatusOr<std::vector<TeamRow>> ListTeams() override;
  absl::Status PutToken(const TokenRow& row) override;
  absl::StatusOr<std::optional<TokenRow>> GetToken(const std::string& token_id) override;
  absl::StatusOr<std::vector<TokenRow>> ListTokens(const std::string& team) override;
  absl::StatusOr<int64_t> RevokeTokens(const std::string& prefix, int64_t now_unix_ms) override;
  absl::StatusOr<int64_t> CountRunningJobs(const std::string& team) override;
  absl::StatusOr<int64_t> CountTrialsSince(const std::string& team, int64_t since_unix_ms) override;

  absl::StatusOr<LeaderRow> ClaimLeadership(const std::string& holder, const std::string& address,
                                            int64_t now_unix_ms, int64_t lease_ms) override;
  absl::Status ReleaseLeadership(const std::string& holder) override;

 private:
  explicit SqlDatabase(std::unique_ptr<SqlConnection> connection)
      : connection_(std::move(connection)) {}

  // Each runs with mu_ held.
  absl::Status ApplyMigrations();
  // A transaction that holds the migration lock: no other process migrates until it ends.
  absl::StatusOr<SqlTransaction> BeginMigration(const std::string& operation);
  absl::StatusOr<int> SchemaVersionLocked();
  // The single integer a COUNT(*) or similar statement returns (0 when it returns no row).
  absl::StatusOr<int64_t> QueryInteger(const std::string& sql, const SqlParams& params,
                                       const std::string& operation);
  // Whether `sql` returns any row.
  absl::StatusOr<bool> QueryExists(const std::string& sql, const SqlParams& params,
                                   const std::string& operation);

  std::mutex mu_;
  std::unique_ptr<SqlConnection> connection_;  ///< guarded by mu_
};

}  // namespace gtco::db
