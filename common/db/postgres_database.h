// The PostgreSQL implementation of the schedule database, for several servers sharing one farm.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/db/database.h"
#include "common/db/postgres_connection.h"

namespace gtco::db {

/// Database over one PostgreSQL database, with the same semantics, codes and messages as
/// SqliteDatabase (see sqlite_database.h for the per-method contracts). Thread-safe: one
/// connection guarded by a mutex, reset and retried once when the server dropped it. Several
/// processes may open the same database: migrations are serialized by an advisory lock,
/// measurements are recorded with INSERT ... ON CONFLICT DO NOTHING, and leases expire in one
/// statement that locks the rows it returns to "pending". Text ordering is bytewise
/// (COLLATE "C"), as in SQLite, whatever the database's collation.
class PostgresDatabase final : public Database {
 public:
  /// Connects to `uri` ("postgresql://user:password@host:port/database?...") and applies
  /// pending migrations. UNAVAILABLE when the server cannot be reached or refuses the
  /// connection, FAILED_PRECONDITION when the schema is newer than this binary; messages name
  /// the URI without its password.
  static absl::StatusOr<std::unique_ptr<PostgresDatabase>> Open(const std::string& uri);

  absl::StatusOr<int> SchemaVersion() override;

  absl::Status PutWorkload(const WorkloadRow& row) override;
  absl::StatusOr<std::optional<WorkloadRow>> GetWorkload(const std::string& key) override;
  absl::Status PutWorker(const WorkerRow& row) override;
  absl::StatusOr<std::optional<WorkerRow>> GetWorker(const std::string& worker_id) override;

  absl::Status CreateJob(const JobRow& job, const std::vector<TaskRow>& tasks) override;
  absl::Status UpdateJobState(const std::string& job_id, const std::string& state,
                              const std::string& error, int64_t now_unix_ms) override;
  absl::Status UpdateTaskState(const std::string& task_id, const std::string& state) override;
  absl::StatusOr<JobRow> GetJob(const std::string& job_id) override;
  absl::StatusOr<std::vector<JobRow>> ListJobs(const std::string& team,
                                               const std::string& state) override;
  absl::StatusOr<std::vector<TaskRow>> ListTasks(const std::string& job_id) override;

  absl::Status PutCandidate(const CandidateRow& row) override;
  absl::StatusOr<std::optional<CandidateRow>> GetCandidate(
      const std::string& candidate_id) override;
  absl::Status LeaseCandidate(const std::string& candidate_id, const std::string& worker_id,
                              int64_t deadline_unix_ms) override;
  absl::StatusOr<std::vector<std::string>> ExpireLeases(int64_t now_unix_ms) override;
  absl::StatusOr<std::vector<CandidateRow>> ListCandidates(const std::string& task_id,
                                                           const std::string& state) override;

  absl::StatusOr<bool> RecordMeasurement(const MeasurementRow& row) override;
  absl::StatusOr<std::vector<MeasurementRow>> ListMeasurementsForTask(
      const std::string& task_id) override;
  absl::StatusOr<TaskProgress> GetTaskProgress(const std::string& task_id) override;
  absl::StatusOr<std::optional<MeasurementRow>> BestMeasurement(const std::string& workload_key,
                                                                const std::string& target) override;
  absl::StatusOr<std::vector<MeasurementRow>> RecentMeasurements(const std::string& target,
                                                                 int limit) override;
  absl::StatusOr<std::vector<MeasurementRow>> TopMeasurements(const std::string& workload_key,
                                                              const std::string& target,
                                                              int limit) override;
  absl::StatusOr<int64_t> CountMeasurements(const std::string& task_id) override;

  /// See database.h. Validation happens before any statement runs, with the same messages in
  /// every backend (CheckTeamRow, CheckTokenRow, CheckRevokePrefix in team_checks.h).
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
  explicit PostgresDatabase(std::unique_ptr<PostgresConnection> connection)
      : connection_(std::move(connection)) {}

  absl::Status ApplyMigrations();
  absl::Status ApplyMigrationScript(const std::string& script, const std::string& operation);
  absl::StatusOr<int> SchemaVersionLocked();

  std::mutex mu_;
  std::unique_ptr<PostgresConnection> connection_;  ///< guarded by mu_
};

}  // namespace gtco::db
