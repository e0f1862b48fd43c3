// The schedule database: every job, task, issued candidate and measurement, and the farm's teams
// and access tokens, behind small interfaces by concern (SQLite is the embedded default,
// PostgreSQL lets several servers share one farm; one SQL implementation serves both, with the
// same statements, migrations, codes and messages). All methods are thread-safe. On every backend
// a text value with a NUL byte or a NaN number is refused with INVALID_ARGUMENT.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/db/states.h"
#include "common/target/target.h"

namespace gtco::db {

struct WorkloadRow {
  std::string key;
  std::string kind;         ///< anchor kind name ("matmul", ...)
  std::string canonical;    ///< ir::Workload::CanonicalString()
  std::string description;  ///< human summary
  int64_t flops = 0;
};

struct WorkerRow {
  std::string worker_id;
  target::Target target = target::Target::kCpu;
  std::string hostname;
  std::string hardware;  ///< target::HardwareInfo serialized (JSON text)
  int64_t registered_unix_ms = 0;
  int64_t last_seen_unix_ms = 0;
};

struct JobRow {
  std::string job_id;
  std::string team;
  std::string model_name;
  std::string model_sha;  ///< hex digest of the model bytes
  target::Target target = target::Target::kCpu;
  JobState state = JobState::kRunning;
  std::string error;
  int64_t budget = 0;
  std::string options;  ///< free-form JSON (shape overrides, search settings)
  int64_t created_unix_ms = 0;
  int64_t updated_unix_ms = 0;
};

struct TaskRow {
  std::string task_id;  ///< unique across jobs, e.g. "<job_id>.t3"
  std::string job_id;
  int ordinal = 0;  ///< position within the job
  std::string workload_key;
  target::Target target = target::Target::kCpu;
  int weight = 1;
  int64_t trials_allotted = 0;
  TaskState state = TaskState::kPending;
};

struct CandidateRow {
  std::string candidate_id;  ///< unique, chosen by the server
  std::string task_id;
  std::string workload_key;
  target::Target target = target::Target::kCpu;
  std::string trace;  ///< replayable schedule trace
  std::string program_hash;
  CandidateState state = CandidateState::kPending;
  std::string worker_id;  ///< holder of the lease ("" when pending)
  int64_t lease_deadline_unix_ms = 0;
  int64_t created_unix_ms = 0;
};

struct MeasurementRow {
  std::string candidate_id;  ///< primary key: recording is idempotent on it
  std::string task_id;
  std::string workload_key;
  target::Target target = target::Target::kCpu;
  std::string trace;
  std::string program_hash;
  bool ok = false;
  std::string error_kind;  ///< "" | "compile" | "runtime" | "timeout" | "wrong_result" | "crash"
  std::string error;
  double median_seconds = 0, min_seconds = 0, max_seconds = 0, stddev_seconds = 0;
  int repeats = 0;
  double compile_seconds = 0;
  std::string worker_id;
  std::string hardware;  ///< the worker's hardware summary at measurement time
  int64_t measured_unix_ms = 0;
  /// BestMeasurement / TopMeasurements: how many measurements of this trace on this hardware
  /// the row stands for (its median is then their medians' mean); 1 elsewhere.
  int measurements = 1;
};

/// A team sharing the farm, with its limits. Created and changed by admins.
struct TeamRow {
  std::string name;                 ///< primary key, as in JobRow::team
  int64_t max_concurrent_jobs = 0;  ///< running jobs at once; 0 = no limit
  int64_t max_trials_per_day = 0;   ///< measurements per rolling 24 hours; 0 = no limit
  double share = 1.0;               ///< relative weight when workers are contended (> 0)
  int64_t created_unix_ms = 0;
};

/// An access token. Only a salted hash of the secret is stored; the plaintext token exists
/// only in the output of `issue-token` (see common/auth/token.h for the format).
struct TokenRow {
  std::string token_id;  ///< primary key: the token's public prefix ("gtco_s_0123456789ab")
  std::string team;      ///< the submitter's team; "" for worker and admin tokens
  std::string role;      ///< "submitter" | "worker" | "admin"
  std::string salt;      ///< hex of the random salt
  std::string hash;      ///< hex of SHA-256(salt || secret)
  int64_t created_unix_ms = 0;
  int64_t revoked_unix_ms = 0;  ///< 0 while the token is live
};

/// Shortest prefix RevokeTokens() accepts, so that a typo cannot revoke every token of a role
/// (auth's ids are "gtco_" + role letter + "_" + 12 hex: 11 characters fix 4 of the hex digits).
inline constexpr int kMinTokenPrefixLength = 11;

/// Per-task aggregate over measurements.
struct TaskProgress {
  int64_t trials_done = 0;             ///< measurements recorded (ok or failed)
  int64_t trials_failed = 0;           ///< of which failed
  std::optional<double> best_seconds;  ///< best ok median
};

/// The server that drives the farm's jobs, and until when its lease runs.
struct LeaderRow {
  std::string holder;   ///< server instance id ("" when nobody ever led)
  std::string address;  ///< where its clients reach it, e.g. "10.0.0.5:7070"
  int64_t expires_unix_ms = 0;
};

/// Workloads, workers, jobs and their tasks.
class JobStore {
 public:
  virtual ~JobStore() = default;

  // Workloads and workers (upserts).
  virtual absl::Status PutWorkload(const WorkloadRow& row) = 0;
  virtual absl::StatusOr<std::optional<WorkloadRow>> GetWorkload(const std::string& key) = 0;
  virtual absl::Status PutWorker(const WorkerRow& row) = 0;
  virtual absl::StatusOr<std::optional<WorkerRow>> GetWorker(const std::string& worker_id) = 0;

  // Jobs and tasks.
  /// Creates the job and its tasks in one transaction. ALREADY_EXISTS "job 'X' already exists"
  /// if the job id is taken. Tasks whose job_id is empty are given `job.job_id`; a different
  /// job id is INVALID_ARGUMENT.
  virtual absl::Status CreateJob(const JobRow& job, const std::vector<TaskRow>& tasks) = 0;
  /// NOT_FOUND "job 'X' not found" when unknown.
  virtual absl::Status UpdateJobState(const std::string& job_id, JobState state,
                                      const std::string& error, int64_t now_unix_ms) = 0;
  /// NOT_FOUND "task 'X' not found" when unknown.
  virtual absl::Status UpdateTaskState(const std::string& task_id, TaskState state) = 0;
  /// NOT_FOUND "job 'X' not found" when unknown.
  virtual absl::StatusOr<JobRow> GetJob(const std::string& job_id) = 0;
  /// Newest first; `team` empty means every team; no `state` means every state.
  virtual absl::StatusOr<std::vector<JobRow>> ListJobs(const std::string& team,
                                                       std::optional<JobState> state) = 0;
  /// Ordered by ordinal; NOT_FOUND when the job is unknown.
  virtual absl::StatusOr<std::vector<TaskRow>> ListTasks(const std::string& job_id) = 0;
};

/// Candidates (issued programs) and their leases.
class LeaseStore {
 public:
  virtual ~LeaseStore() = default;

  /// Upserts `rows` in one transaction: all of them or none. Each candidate's task must exist
  /// (FAILED_PRECONDITION otherwise).
  virtual absl::Status PutCandidates(const std::vector<CandidateRow>& rows) = 0;
  virtual absl::StatusOr<std::optional<CandidateRow>> GetCandidate(
      const std::string& candidate_id) = 0;
  /// Sets state "leased", the holder and the deadline. NOT_FOUND for an unknown candidate,
  /// FAILED_PRECONDITION for a measured one.
  virtual absl::Status LeaseCandidate(const std::string& candidate_id, const std::string& worker_id,
                                      int64_t deadline_unix_ms) = 0;
  /// Returns every "leased" candidate whose deadline is before `now` to "pending" (no holder)
  /// and returns their ids, earliest deadline first.
  virtual absl::StatusOr<std::vector<std::string>> ExpireLeases(int64_t now_unix_ms) = 0;
  /// Candidates of a task in `state`, oldest first.
  virtual absl::StatusOr<std::vector<CandidateRow>> ListCandidates(const std::string& task_id,
                                                                   CandidateState state) = 0;
};

/// Which measurements ListRecords returns.
struct RecordFilter {
  std::optional<target::Target> target;  ///< unset: every target
  std::string workload_key;              ///< "": every workload
  bool include_failed = false;           ///< false: ok measurements only
};

/// Measurements: the tuning records.
class RecordStore {
 public:
  virtual ~RecordStore() = default;

  /// Stores the measurement and marks its candidate "measured", in one transaction.
  /// Returns true when stored, false when a measurement for this candidate id already existed
  /// (the call is then a no-op). The measurement's task must exist (FAILED_PRECONDITION
  /// otherwise); its candidate row, when present, becomes "measured" with the measuring worker
  /// as holder.
  virtual absl::StatusOr<bool> RecordMeasurement(const MeasurementRow& row) = 0;
  virtual absl::StatusOr<std::vector<MeasurementRow>> ListMeasurementsForTask(
      const std::string& task_id) = 0;
  virtual absl::StatusOr<TaskProgress> GetTaskProgress(const std::string& task_id) = 0;
  /// Best ok measurement (lowest median) for a workload on a target, across all jobs: the first
  /// of TopMeasurements.
  virtual absl::StatusOr<std::optional<MeasurementRow>> BestMeasurement(
      const std::string& workload_key, target::Target target) = 0;
  /// The `limit` best schedules for (workload, target), lowest median first, from the ok
  /// measurements across all jobs: one row per (trace, hardware), that of its fastest
  /// measurement with `median_seconds` the mean of all its measurements' medians, `max_seconds`
  /// and `repeats` theirs (the highest, the sum) and `measurements` their number. A trace measured
  /// again (the search confirms its best, search::EvolutionaryOptions::confirmations) ranks by
  /// what it measured each time, not by its luckiest run. INVALID_ARGUMENT when `limit` < 0.
  virtual absl::StatusOr<std::vector<MeasurementRow>> TopMeasurements(
      const std::string& workload_key, target::Target target, int limit) = 0;
  /// The newest `limit` ok measurements on `target` across all workloads (cost-model training).
  /// INVALID_ARGUMENT when `limit` < 0.
  virtual absl::StatusOr<std::vector<MeasurementRow>> RecentMeasurements(target::Target target,
                                                                         int limit) = 0;
  /// Counts of measurements grouped for metrics and tests.
  virtual absl::StatusOr<int64_t> CountMeasurements(const std::string& task_id) = 0;

  /// Measurements in candidate-id order, after `after_candidate_id` ("" = from the first), at
  /// most `limit` (paging through a whole database for `records export`).
  virtual absl::StatusOr<std::vector<MeasurementRow>> ListRecords(
      const RecordFilter& filter, const std::string& after_candidate_id, int limit) = 0;
  /// Of `candidate_ids`, those that have a measurement already, sorted.
  virtual absl::StatusOr<std::vector<std::string>> ExistingMeasurements(
      const std::vector<std::string>& candidate_ids) = 0;
  /// Merges records from another database in one transaction: the workloads (an existing row is
  /// kept), the jobs and tasks that hold the records, then each measurement unless its candidate
  /// id is stored already. Returns how many measurements were new; nothing is written on error.
  virtual absl::StatusOr<int64_t> ImportRecords(const std::vector<WorkloadRow>& workloads,
                                                const std::vector<JobRow>& jobs,
                                                const std::vector<TaskRow>& tasks,
                                                const std::vector<MeasurementRow>& rows) = 0;
};

/// Teams, access tokens, and the counts behind team quotas. Arguments are checked before any
/// statement runs, with the same codes and messages in every backend.
class TeamStore {
 public:
  virtual ~TeamStore() = default;

  /// Creates the team, or updates the limits (max_concurrent_jobs, max_trials_per_day, share)
  /// of an existing one, keeping its created_unix_ms. INVALID_ARGUMENT for an empty name,
  /// negative limits or a share that is not a positive finite number.
  virtual absl::Status PutTeam(const TeamRow& row) = 0;
  /// NOT_FOUND "team 'X' not found" when unknown.
  virtual absl::StatusOr<TeamRow> GetTeam(const std::string& name) = 0;
  /// Every team, by name (bytewise).
  virtual absl::StatusOr<std::vector<TeamRow>> ListTeams() = 0;
  /// Stores a new token. ALREADY_EXISTS when the token id is taken (tokens are never
  /// overwritten), FAILED_PRECONDITION when `row.team` is not empty and names no team,
  /// INVALID_ARGUMENT for an empty token id.
  virtual absl::Status PutToken(const TokenRow& row) = 0;
  /// The token with this exact id, or nullopt.
  virtual absl::StatusOr<std::optional<TokenRow>> GetToken(const std::string& token_id) = 0;
  /// Tokens of `team` (every token, worker and admin ones included, when `team` is empty),
  /// oldest first; revoked ones too.
  virtual absl::StatusOr<std::vector<TokenRow>> ListTokens(const std::string& team) = 0;
  /// Revokes (revoked_unix_ms = now) every live token whose id starts with `prefix` and returns
  /// how many. Prefixes match literally ('_' and '%' are no wildcards). INVALID_ARGUMENT when
  /// the prefix is shorter than kMinTokenPrefixLength.
  virtual absl::StatusOr<int64_t> RevokeTokens(const std::string& prefix, int64_t now_unix_ms) = 0;
  /// Jobs of `team` in state "running".
  virtual absl::StatusOr<int64_t> CountRunningJobs(const std::string& team) = 0;
  /// Measurements (ok or failed) of the tasks of `team`'s jobs with
  /// measured_unix_ms >= since_unix_ms: the trials charged against max_trials_per_day.
  virtual absl::StatusOr<int64_t> CountTrialsSince(const std::string& team,
                                                   int64_t since_unix_ms) = 0;
};

/// The leader lease: one active server per database; the others wait as standbys.
class LeaderStore {
 public:
  virtual ~LeaderStore() = default;

  /// Claims or renews the leader lease for `holder` (a server instance id) until
  /// now_unix_ms + lease_ms when it is free, expired or already `holder`'s; returns the leader
  /// after the attempt (its holder is `holder` when the claim succeeded). Atomic across servers.
  virtual absl::StatusOr<LeaderRow> ClaimLeadership(const std::string& holder,
                                                    const std::string& address, int64_t now_unix_ms,
                                                    int64_t lease_ms) = 0;
  /// Gives the lease up at once (orderly shutdown) when `holder` holds it.
  virtual absl::Status ReleaseLeadership(const std::string& holder) = 0;
};

/// The whole schedule database: every store above over one connection, plus the schema
/// version. Implemented once over SQL (SqlDatabase, common/db/sql_database.h) for SQLite and
/// PostgreSQL.
class Database : public JobStore,
                 public LeaseStore,
                 public RecordStore,
                 public TeamStore,
                 public LeaderStore {
 public:
  ~Database() override = default;

  /// Schema version after migrations (1, 2, ...).
  virtual absl::StatusOr<int> SchemaVersion() = 0;

  /// Called after every statement (and transaction begin/commit) with its wall time in seconds
  /// and its outcome (OK or the error's code), from the calling thread, with the database's
  /// lock held: it must be quick and must not call back into the database. For metrics.
  using StatementObserver = std::function<void(double seconds, absl::StatusCode code)>;
  virtual void SetStatementObserver(StatementObserver observer) = 0;
};

/// Opens (creating if needed) a SQLite database file in WAL mode and applies pending
/// migrations. INVALID_ARGUMENT/INTERNAL with the path on failure.
absl::StatusOr<std::unique_ptr<Database>> OpenSqliteDatabase(const std::string& path);

/// Connects to a PostgreSQL database given as a libpq URI
/// ("postgresql://user:password@host:port/database?sslmode=...") and applies pending migrations
/// (the same ones as SQLite). The database must exist; the user needs CREATE on it the first
/// time. UNAVAILABLE when the server cannot be reached or refuses the connection,
/// FAILED_PRECONDITION when the schema is newer than this binary; messages name the URI
/// without its password and say what to check.
absl::StatusOr<std::unique_ptr<Database>> OpenPostgresDatabase(const std::string& uri);

/// Opens the schedule database named by `location`: a "postgresql://..." or "postgres://..."
/// URI opens PostgreSQL (OpenPostgresDatabase), anything else is a SQLite file path
/// (OpenSqliteDatabase; ":memory:" for a private in-memory database).
absl::StatusOr<std::unique_ptr<Database>> OpenDatabase(const std::string& location);

}  // namespace gtco::db
