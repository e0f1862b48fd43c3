// FarmCore: the server's state and logic with no gRPC types (the RPC services in service.cc only
// translate requests to these calls), split by concept: jobs and quotas with the scheduler's
// bookkeeping (FarmCore's own lock), the search (owned by the preparer thread), workers
// (WorkerRegistry), leases (LeaseQueue) and the cost models (CostModels), each with its own lock.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "common/db/database.h"
#include "common/ir/workload.h"
#include "common/onnx/model_analysis.h"
#include "common/search/search_strategy.h"
#include "common/target/target.h"
#include "server/cost_models.h"
#include "server/farm_metrics.h"
#include "server/farm_types.h"
#include "server/lease_queue.h"
#include "server/task_scheduler.h"
#include "server/worker_registry.h"

namespace gtco::server {

struct BuiltCandidate;
struct TaskClass;

struct FarmOptions {
  int lease_seconds = 60;      ///< a candidate not reported by then goes to another worker
  int heartbeat_seconds = 5;   ///< workers heartbeat this often (extends their leases)
  int default_round_size = 8;  ///< candidates proposed per search round
  int64_t max_model_bytes = int64_t{1} << 31;
  uint64_t seed = 0;      ///< 0: random
  std::string model_dir;  ///< where cost models are saved ("" = not saved)
  int model_update_every = 16;  ///< retrain after at least this many new samples
  /// ... and after the samples grew by this fraction since the last training.
  double model_growth_to_retrain = 0.25;
};

/// Thread-safe. Owns the database handle; every state change is written through to it first.
class FarmCore {
 public:
  /// Opens the farm on `database`, resuming every unfinished job recorded there.
  static absl::StatusOr<std::unique_ptr<FarmCore>> Create(std::unique_ptr<db::Database> database,
                                                          FarmOptions options,
                                                          FarmMetrics* metrics);
  ~FarmCore();

  // Client side.
  /// Analyzes the model, plans its tasks and starts tuning them. INVALID_ARGUMENT for a bad
  /// model or request, UNIMPLEMENTED when no mapping of the target covers a task,
  /// RESOURCE_EXHAUSTED at the team's quota.
  absl::StatusOr<JobInfo> Submit(const JobSpec& spec, const std::string& model_bytes);
  /// NOT_FOUND when unknown.
  absl::StatusOr<JobInfo> GetJob(const std::string& job_id);
  /// Jobs of `team` (every team when empty) in `state` (every state when none), newest first.
  absl::StatusOr<std::vector<JobInfo>> ListJobs(const std::string& team,
                                                std::optional<db::JobState> state);
  absl::StatusOr<JobInfo> CancelJob(const std::string& job_id);
  /// The best record of each task of the model on spec.target (nothing is tuned).
  absl::StatusOr<QueryResult> QueryModel(const JobSpec& spec, const std::string& model_bytes);
  /// The model's plan compiled into a runtime artifact for `export_target` (server/farm_export.cc):
  /// per workload the best ok record measured on the same CPU (CUDA: a GPU of the same
  /// architecture), else on a compatible one (never one whose mapping needs a feature the target
  /// lacks), else the default schedule with a warning. `progress` gets human-readable lines.
  /// FAILED_PRECONDITION when this server was built without LLVM, or for untuned workloads with
  /// require_tuned.
  absl::StatusOr<ExportOutcome> ExportModel(const JobSpec& spec, const ExportTarget& export_target,
                                            const std::string& model_bytes,
                                            const std::function<void(const std::string&)>& progress);
  /// Up to `limit` (at least 1) best records of the workload on `target`.
  absl::StatusOr<QueryResult> QueryWorkload(const std::string& workload_key, target::Target target,
                                            int limit);
  /// The stored measurements `filter` selects, with their workloads, in candidate-id order, in
  /// batches of up to `batch` (server/farm_records.cc); stops early when `emit` returns false.
  absl::Status ExportRecords(const db::RecordFilter& filter, int batch,
                             const std::function<bool(std::vector<PortableRecord>)>& emit);
  /// Merges records exported from another database. Every record is checked first (its workload
  /// parses and has the key it claims, its trace replays on that workload, its timings are
  /// plausible): one bad record refuses the whole import (INVALID_ARGUMENT naming it) and nothing
  /// is stored. Records whose candidate id is stored already are left as they are, so importing
  /// a file twice adds nothing the second time. New records go to one finished import job per
  /// target (team "", so no team's quota counts them), keeping worker, hardware and time.
  absl::StatusOr<ImportSummary> ImportRecords(std::vector<PortableRecord> records,
                                              const std::string& importer);
  /// Blocks until the job changed after `*version` or `timeout_ms` passed; updates `*version`.
  absl::StatusOr<JobInfo> WaitForJobChange(const std::string& job_id, int64_t* version,
                                           int timeout_ms);

  // Worker side.
  absl::StatusOr<WorkerTerms> Register(const WorkerHello& hello);
  /// Hands out up to `max_candidates` (1..64) under a lease; waits up to `wait_ms` (0..30000)
  /// when nothing is ready. NOT_FOUND for a worker that has not registered.
  absl::StatusOr<std::vector<LeasedCandidate>> Lease(const std::string& worker_id,
                                                     int max_candidates, int wait_ms);
  /// Stores the results (idempotently on the candidate id); results for candidates the worker
  /// does not hold are counted as rejected.
  absl::StatusOr<ReportTally> Report(const std::string& worker_id,
                                     const std::vector<TrialResult>& results);
  /// Marks the worker alive and extends the leases of the candidates it holds among `held`.
  absl::Status Heartbeat(const std::string& worker_id, const std::vector<std::string>& held);
  /// Every worker registered with this server: hardware, liveness, throughput (the dashboard).
  std::vector<WorkerSnapshot> Workers() const { return workers_.Snapshot(NowMs()); }

  /// Periodic housekeeping: expires leases, refreshes gauges. Called by the server's ticker.
  void Tick();
  /// Wakes every waiter so they can return (server shutdown).
  void Shutdown();

 private:
  struct Task;
  struct Job;
  using Worker = RegisteredWorker;
  /// A candidate taken for lowering: a new proposal or one waiting to be leased again.
  struct BatchItem {
    Task* task;
    std::shared_ptr<TaskBuild> build;  ///< the task's, taken with the item (under the lock)
    std::string candidate_id;
    std::string trace;
  };
  /// Trials of one mapping the scheduler placed in a round; the search proposes them off the lock.
  struct Placement {
    Job* job;
    Task* task;
    TaskClass* state;  ///< the task's class whose search proposes them
    int mapping_index;
    int64_t count;
  };
  /// A measurement that reached the task while the preparer owned its search; or, with
  /// `suggestion` (and no mapping), a new best schedule of another task of the job, measured on
  /// the same hardware class, which the task's searches of the same sketch try near their own.
  struct Observation {
    std::string hardware_class;
    int mapping_index;
    std::string trace;
    bool ok;
    double seconds;
    bool suggestion = false;
  };

  FarmCore(std::unique_ptr<db::Database> database, FarmOptions options, FarmMetrics* metrics);
  absl::Status ResumeJobs();
  absl::Status LoadJobLocked(const db::JobRow& job_row);
  /// RESOURCE_EXHAUSTED when `team` is at its concurrent-jobs or trials-per-day limit.
  absl::Status CheckTeamQuotaLocked(const std::string& team);
  /// Trials the job's team may still start under its trials-per-day limit: the limit less what
  /// it measured in the last 24 hours and what it has in flight (max int64 without a limit).
  absl::StatusOr<int64_t> TeamTrialsLeftLocked(const Job& job);
  /// Running jobs with budget left on `target`, in weighted-fair-share order: the team with the
  /// least trials per unit of share first, then its job with the fewest trials proposed.
  std::vector<Job*> FairShareOrderLocked(target::Target target);
  absl::Status LoadTaskHistoryLocked(Task& task);
  JobInfo JobInfoLocked(const Job& job) const;
  TaskInfo TaskInfoLocked(const Job& job, const Task& task) const;
  /// The job's plan costed from its tasks' best seconds (onnx::CostPlan).
  onnx::PlanCost PlanCostLocked(const Job& job) const;
  /// The scheduler's view of the job's tasks; `plan_cost`: the job's PlanCostLocked when the
  /// caller has it already (else costed here when the budget follows the plan).
  std::vector<TaskCurve> CurvesLocked(const Job& job,
                                      const onnx::PlanCost* plan_cost = nullptr) const;

  // Scheduling (farm_scheduling.cc): under mutex_, cheap; the search runs off the lock.
  /// A task of `worker`'s target with a candidate of its hardware class (or of no class yet,
  /// from before a restart, whose mapping the class has) waiting to be leased again; nullptr if
  /// none. `*candidate_id` gets the candidate and `*state` the task's state for the class.
  absl::StatusOr<Task*> TaskWithPendingLocked(const Worker& worker, std::string* candidate_id,
                                              TaskClass** state);
  /// Runs the dual-task scheduler on the next job with budget left and reserves one round of
  /// trials there (the placements, searched later off the lock). Empty when no job can take
  /// trials now.
  absl::StatusOr<std::vector<Placement>> ScheduleRoundLocked(const Worker& worker);
  /// The task's spaces for `worker`'s hardware class, created (pruned for that hardware, with
  /// the class's earlier measurements replayed) the first time the class needs them; a class no
  /// mapping applies to gets its verdicts and no spaces.
  absl::StatusOr<TaskClass*> SpacesForLocked(Task& task, const Worker& worker);
  /// The cost model's scores of `traces` (empty while it is untrained). Preparer thread only.
  std::vector<double> ScoreTraces(const Task& task, TaskClass& state,
                                  const std::vector<schedule::Trace>& traces) const;
  /// Lowers `trace_text` of `task` to its candidate program (LLVM bitcode for CPU, CUDA C with
  /// its launch for CUDA) with its features on the task's hardware; with `as_trace`, a CPU
  /// candidate carries no program (language "trace": the worker replays it) and only its
  /// features are computed. Reads only the task's immutable build context: no lock.
  static absl::StatusOr<BuiltCandidate> BuildCandidate(const TaskBuild& task,
                                                       const std::string& candidate_id,
                                                       const std::string& trace_text,
                                                       bool as_trace);
  void LogDecisionLocked(Job& job, const std::string& decision);
  /// Warm-starts the cost model of `worker`'s target; a failure is logged and the farm tunes on
  /// without it (CostModels retries later).
  void WarmStartCostModel(const Worker& worker);

  // Preparation ahead of leases (farm_prepare.cc).
  /// The preparer thread: keeps each hardware class's ready queue at ReadyWant() candidates. It alone
  /// runs the searches (they need no lock).
  void PrepareLoop();
  /// Takes up to `count` candidates for `worker`'s hardware class (waiting ones first, then new rounds
  /// of the scheduler and the search), lowers them and queues them in leases_. Takes mutex_
  /// only for the bookkeeping. Returns how many it took.
  absl::StatusOr<int> PrepareBatch(const Worker& worker, int count);
  /// Runs the searches of `placements` (off the lock) and records their candidates in the
  /// database; appends them to `batch`.
  absl::Status ProposePlacements(const std::vector<Placement>& placements,
                                 std::vector<BatchItem>* batch);
  /// Feeds the measurements queued in `task`'s inbox to its searches. Preparer thread only.
  void ApplyObservations(Task& task, std::vector<Observation> observations);
  /// Ready candidates wanted for `hardware_class`: two per live worker of it (the pipeline
  /// depth).
  size_t ReadyWant(const std::string& hardware_class) const;

  // Leases and results (farm_workers.cc).
  /// Records a candidate the generator could not lower as a failed trial of `worker`. No lock.
  absl::Status RecordLoweringFailure(const Worker& worker, const std::string& candidate_id,
                                     const absl::Status& error);
  /// Stores one result (the database write, no lock) and updates the task (under mutex_).
  /// Returns false for a duplicate.
  absl::StatusOr<bool> RecordResult(const Worker& worker, const TrialResult& result);
  void UpdateTaskCompletionLocked(Job& job, Task& task);
  void UpdateJobCompletionLocked(Job& job);
  void TouchJobLocked(Job& job);

  /// A new id; thread-safe.
  std::string NewId(const std::string& prefix);
  uint64_t NewSeed();
  int64_t NowMs() const;

  std::unique_ptr<db::Database> db_;
  FarmOptions options_;
  FarmMetrics* metrics_;
  // The farm's concepts, each with its own lock; mutex_ (jobs, tasks, quotas, fair share and
  // the scheduler's bookkeeping) comes first when a thread takes two.
  CostModels models_;
  WorkerRegistry workers_;
  /// The architecture ("sm_90") of a registered CUDA worker, else sm_90 (said through
  /// `progress`).
  std::string CudaWorkersArch(const std::function<void(const std::string&)>& progress);
  LeaseQueue leases_;
  mutable std::mutex mutex_;
  std::condition_variable changed_;  ///< a job changed (WaitForJobChange waits here)
  std::thread preparer_;
  bool shutting_down_ = false;
  std::mutex ids_mutex_;
  std::mt19937_64 rng_;  ///< under ids_mutex_
  std::map<std::string, std::unique_ptr<Job>> jobs_;
  std::map<std::string, Task*> tasks_;  ///< task id -> task (owned by its job)
  /// Trials proposed per team since start, divided by the team's share (fair-share clock).
  std::map<std::string, double> team_clock_;
};

}  // namespace gtco::server
