// The SQLite implementation of the schedule database (the embedded default backend).
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/db/database.h"
#include "common/db/sqlite_connection.h"

namespace gtco::db {

/// Connection settings applied when a SQLite database is opened.
struct SqliteOptions {
  /// How long a statement waits for another process's lock before failing with UNAVAILABLE.
  int busy_timeout_ms = 5000;
};

/// Database over one SQLite file in WAL mode (synchronous=NORMAL, foreign keys on).
/// Thread-safe: one connection guarded by a mutex; prepared statements are cached.
/// Several processes may open the same file; migrations are applied under a write lock.
class SqliteDatabase final : public Database {
 public:
  /// Opens (creating if needed) `path` and applies pending migrations. FAILED_PRECONDITION
  /// when the directory is missing or the schema is newer than this binary, INVALID_ARGUMENT
  /// when the file is not a SQLite database.
  static absl::StatusOr<std::unique_ptr<SqliteDatabase>> Open(const std::string& path,
                                                              const SqliteOptions& options = {});

  absl::StatusOr<int> SchemaVersion() override;

  absl::Status PutWorkload(const WorkloadRow& row) override;
  absl::StatusOr<std::optional<WorkloadRow>> GetWorkload(const std::string& key) override;
  absl::Status PutWorker(const WorkerRow& row) override;
  absl::StatusOr<std::optional<WorkerRow>> GetWorker(const std::string& worker_id) override;

  /// Tasks whose job_id is empty are given `job.job_id`; a different job id is
  /// INVALID_ARGUMENT.
  absl::Status CreateJob(const JobRow& job, const std::vector<TaskRow>& tasks) override;
  absl::Status UpdateJobState(const std::string& job_id, const std::string& state,
                              const std::string& error, int64_t now_unix_ms) override;
  absl::Status UpdateTaskState(const std::string& task_id, const std::string& state) override;
  /// NOT_FOUND "job 'X' not found" when unknown (also for UpdateJobState; tasks likewise).
  absl::StatusOr<JobRow> GetJob(const std::string& job_id) override;
  absl::StatusOr<std::vector<JobRow>> ListJobs(const std::string& team,
                                               const std::string& state) override;
  /// Ordered by ordinal; NOT_FOUND when the job is unknown.
  absl::StatusOr<std::vector<TaskRow>> ListTasks(const std::string& job_id) override;

  /// Upsert; the candidate's task must exist (FAILED_PRECONDITION otherwise).
  absl::Status PutCandidate(const CandidateRow& row) override;
  absl::StatusOr<std::optional<CandidateRow>> GetCandidate(
      const std::string& candidate_id) override;
  /// NOT_FOUND for an unknown candidate, FAILED_PRECONDITION for a measured one.
  absl::Status LeaseCandidate(const std::string& candidate_id, const std::string& worker_id,
                              int64_t deadline_unix_ms) override;
  absl::StatusOr<std::vector<std::string>> ExpireLeases(int64_t now_unix_ms) override;
  absl::StatusOr<std::vector<CandidateRow>> ListCandidates(const std::string& task_id,
                                                           const std::string& state) override;

  /// The measurement's task must exist (FAILED_PRECONDITION otherwise); its candidate row, when
  /// present, becomes "measured" with the measuring worker as holder.
  absl::StatusOr<bool> RecordMeasurement(const MeasurementRow& row) override;
  absl::StatusOr<std::vector<MeasurementRow>> ListMeasurementsForTask(
      const std::string& task_id) override;
  absl::StatusOr<TaskProgress> GetTaskProgress(const std::string& task_id) override;
  absl::StatusOr<std::optional<MeasurementRow>> BestMeasurement(const std::string& workload_key,
                                                                const std::string& target) override;
  /// `limit` must be >= 0 (INVALID_ARGUMENT otherwise).
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
  explicit SqliteDatabase(std::unique_ptr<SqliteConnection> connection)
      : connection_(std::move(connection)) {}

  absl::Status Configure();
  absl::Status ApplyMigrations();
  absl::StatusOr<int> SchemaVersionLocked();

  std::mutex mu_;
  std::unique_ptr<SqliteConnection> connection_;  ///< guarded by mu_
};

}  // namespace gtco::db
