// The schedule database: every job, task, issued candidate and measurement, behind one small
// interface (SQLite is the embedded default, PostgreSQL lets several servers share one farm; both
// implement the same interface and share the migrations). All methods are thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

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
  std::string target;    ///< "cpu" | "cuda"
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
  std::string target;
  std::string state;  ///< "running" | "done" | "failed" | "cancelled"
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
  std::string target;
  int weight = 1;
  int64_t trials_allotted = 0;
  std::string state;  ///< "pending" | "running" | "done" | "from_database" | "cancelled"
};

struct CandidateRow {
  std::string candidate_id;  ///< unique, chosen by the server
  std::string task_id;
  std::string workload_key;
  std::string target;
  std::string trace;  ///< replayable schedule trace
  std::string program_hash;
  std::string state;  ///< "pending" | "leased" | "measured"
  std::string worker_id;          ///< holder of the lease ("" when pending)
  int64_t lease_deadline_unix_ms = 0;
  int64_t created_unix_ms = 0;
};

struct MeasurementRow {
  std::string candidate_id;  ///< primary key: recording is idempotent on it
  std::string task_id;
  std::string workload_key;
  std::string target;
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
};

/// Per-task aggregate over measurements.
struct TaskProgress {
  int64_t trials_done = 0;    ///< measurements recorded (ok or failed)
  int64_t trials_failed = 0;  ///< of which failed
  std::optional<double> best_seconds;  ///< best ok median
};

class Database {
 public:
  virtual ~Database() = default;

  /// Schema version after migrations (1, 2, ...).
  virtual absl::StatusOr<int> SchemaVersion() = 0;

  // Workloads and workers (upserts).
  virtual absl::Status PutWorkload(const WorkloadRow& row) = 0;
  virtual absl::StatusOr<std::optional<WorkloadRow>> GetWorkload(const std::string& key) = 0;
  virtual absl::Status PutWorker(const WorkerRow& row) = 0;
  virtual absl::StatusOr<std::optional<WorkerRow>> GetWorker(const std::string& worker_id) = 0;

  // Jobs and tasks.
  /// Creates the job and its tasks in one transaction. ALREADY_EXISTS if the job id is taken.
  virtual absl::Status CreateJob(const JobRow& job, const std::vector<TaskRow>& tasks) = 0;
  virtual absl::Status UpdateJobState(const std::string& job_id, const std::string& state,
                                      const std::string& error, int64_t now_unix_ms) = 0;
  virtual absl::Status UpdateTaskState(const std::string& task_id, const std::string& state) = 0;
  /// NOT_FOUND when unknown.
  virtual absl::StatusOr<JobRow> GetJob(const std::string& job_id) = 0;
  /// Newest first; `team` empty means every team; `state` empty means every state.
  virtual absl::StatusOr<std::vector<JobRow>> ListJobs(const std::string& team,
                                                       const std::string& state) = 0;
  virtual absl::StatusOr<std::vector<TaskRow>> ListTasks(const std::string& job_id) = 0;

  // Candidates (issued programs) and their leases.
  virtual absl::Status PutCandidate(const CandidateRow& row) = 0;
  virtual absl::StatusOr<std::optional<CandidateRow>> GetCandidate(
      const std::string& candidate_id) = 0;
  /// Sets state "leased", the holder and the deadline.
  virtual absl::Status LeaseCandidate(const std::string& candidate_id,
                                      const std::string& worker_id, int64_t deadline_unix_ms) = 0;
  /// Returns every "leased" candidate whose deadline is before `now` to "pending" (no holder)
  /// and returns their ids.
  virtual absl::StatusOr<std::vector<std::string>> ExpireLeases(int64_t now_unix_ms) = 0;
  /// Candidates of a task in a given state ("pending", "leased"), oldest first.
  virtual absl::StatusOr<std::vector<CandidateRow>> ListCandidates(const std::string& task_id,
                                                                   const std::string& state) = 0;

  // Measurements.
  /// Stores the measurement and marks its candidate "measured", in one transaction.
  /// Returns true when stored, false when a measurement for this candidate id already existed
  /// (the call is then a no-op).
  virtual absl::StatusOr<bool> RecordMeasurement(const MeasurementRow& row) = 0;
  virtual absl::StatusOr<std::vector<MeasurementRow>> ListMeasurementsForTask(
      const std::string& task_id) = 0;
  virtual absl::StatusOr<TaskProgress> GetTaskProgress(const std::string& task_id) = 0;
  /// Best ok measurement (lowest median) for a workload on a target, across all jobs.
  virtual absl::StatusOr<std::optional<MeasurementRow>> BestMeasurement(
      const std::string& workload_key, const std::string& target) = 0;
  /// The `limit` best ok measurements for (workload, target), lowest median first.
  virtual absl::StatusOr<std::vector<MeasurementRow>> TopMeasurements(
      const std::string& workload_key, const std::string& target, int limit) = 0;
  /// The newest `limit` ok measurements on `target` across all workloads (cost-model training).
  virtual absl::StatusOr<std::vector<MeasurementRow>> RecentMeasurements(const std::string& target,
                                                                         int limit) = 0;
  /// Counts of measurements grouped for metrics and tests.
  virtual absl::StatusOr<int64_t> CountMeasurements(const std::string& task_id) = 0;
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
