// FarmCore: jobs, tasks and their status; resuming unfinished jobs from the database.
#include "server/farm_core.h"

#include <google/protobuf/util/json_util.h>

#include <algorithm>
#include <chrono>
#include <cmath>

#include "absl/strings/str_join.h"
#include "common/kernels/build_program.h"
#include "common/kernels/registry.h"
#include "common/onnx/model_analysis.h"
#include "common/schedule/space.h"
#include "common/target/target.h"
#include "common/util/hash.h"
#include "common/util/logging.h"
#include "common/util/status.h"
#include "server/farm_state.h"

namespace gtco::server {
namespace {

/// Trials one job may ask for; far beyond any real budget, and small enough that budget
/// arithmetic (SplitBudget, budget left) cannot overflow.
constexpr int64_t kMaxBudget = int64_t{1} << 40;

/// The target named by a request, if this server can generate programs for it.
absl::StatusOr<target::Target> ValidateTarget(const std::string& name) {
  GTCO_ASSIGN_OR_RETURN(target::Target target, target::ParseTarget(name));
  if (!kernels::CanBuildFor(target)) {
    return absl::FailedPreconditionError(
        "this gtco-server was built without LLVM and cannot generate CPU programs; submit with "
        "--target cuda or use a server built with LLVM");
  }
  return target;
}

/// UNIMPLEMENTED naming the first task that no mapping of `target` covers even on its most
/// capable machine (an sm_90 GPU; a CPU with every feature a mapping asks for), with the
/// mappings' verdicts, so the user learns at submission rather than from a job that never starts.
absl::Status CheckTargetCovers(const onnx::ModelAnalysis& analysis, target::Target target) {
  const bool cuda = target == target::Target::kCuda;
  target::HardwareInfo best = target::CudaArchPreset(90);
  if (!cuda) {
    best = target::HardwareInfo();
    best.cpu_features = {"avx512f", "avx512_bf16", "avx512_vnni", "avx2", "fma", "avx"};
  }
  const char* other_target =
      target::TargetName(cuda ? target::Target::kCpu : target::Target::kCuda);
  for (const onnx::ModelTask& task : analysis.tasks) {
    std::vector<std::string> reasons;
    bool covered = false;
    for (const schedule::MappingVerdict& verdict : kernels::ExplainMappings(task.workload, best)) {
      covered |= verdict.applies;
      reasons.push_back(absl::StrCat(verdict.mapping, ": ", verdict.reason));
    }
    if (!covered) {
      return absl::UnimplementedError(absl::StrCat(
          "no ", target::TargetName(target), " mapping covers ", task.workload.Description(),
          " (node '", task.node_names.empty() ? "?" : task.node_names.front(), "')",
          reasons.empty() ? std::string() : absl::StrCat(": ", absl::StrJoin(reasons, "; ")),
          "; try --target ", other_target));
    }
  }
  return absl::OkStatus();
}

/// Planning for the job's target: CUDA jobs fuse attention into one workload.
graph::PlanOptions PlanOptionsFor(target::Target target) {
  graph::PlanOptions options;
  options.target = target;
  return options;
}

onnx::ShapeOverrides OverridesFrom(const gtco::v1::SubmitHeader& header) {
  onnx::ShapeOverrides overrides;
  for (const auto& shape : header.shapes()) {
    overrides[shape.input()] = std::vector<int64_t>(shape.dims().begin(), shape.dims().end());
  }
  return overrides;
}

/// Splits `budget` over tasks in proportion to their shares (largest remainder), at least one
/// trial each: the even split a job starts from; the dual-task scheduler then moves trials.
std::vector<int64_t> SplitBudget(int64_t budget, const std::vector<double>& shares) {
  std::vector<int64_t> allotted(shares.size(), 1);
  int64_t left = budget - static_cast<int64_t>(shares.size());
  double total = 0;
  for (double share : shares) total += share;
  if (left <= 0 || total <= 0) return allotted;
  std::vector<std::pair<double, size_t>> remainders;
  int64_t given = 0;
  for (size_t index = 0; index < shares.size(); ++index) {
    double exact = left * shares[index] / total;
    int64_t whole = static_cast<int64_t>(std::floor(exact));
    allotted[index] += whole;
    given += whole;
    remainders.push_back({exact - whole, index});
  }
  std::sort(remainders.rbegin(), remainders.rend());
  for (size_t rank = 0; rank < remainders.size() && given < left; ++rank, ++given) {
    ++allotted[remainders[rank].second];
  }
  return allotted;
}

gtco::v1::ScheduleRecord RecordFrom(const db::MeasurementRow& row, const std::string& description,
                                    int64_t flops) {
  gtco::v1::ScheduleRecord record;
  record.set_workload_key(row.workload_key);
  record.set_description(description);
  record.set_target(row.target);
  record.set_trace(row.trace);
  record.set_program_hash(row.program_hash);
  record.set_median_seconds(row.median_seconds);
  record.set_min_seconds(row.min_seconds);
  record.set_max_seconds(row.max_seconds);
  record.set_stddev_seconds(row.stddev_seconds);
  record.set_repeats(row.repeats);
  if (row.median_seconds > 0) record.set_gflops(flops / row.median_seconds * 1e-9);
  record.set_worker_id(row.worker_id);
  record.set_hardware(row.hardware);
  record.set_measured_unix_seconds(row.measured_unix_ms / 1000.0);
  record.set_tuned(true);
  return record;
}

}  // namespace

FarmCore::FarmCore(std::unique_ptr<db::Database> database, FarmOptions options,
                   FarmMetrics* metrics)
    : db_(std::move(database)), options_(options), metrics_(metrics) {
  uint64_t seed = options_.seed;
  if (seed == 0) seed = std::random_device{}() ^ static_cast<uint64_t>(NowMs());
  rng_.seed(seed);
}

FarmCore::~FarmCore() { Shutdown(); }

absl::StatusOr<std::unique_ptr<FarmCore>> FarmCore::Create(std::unique_ptr<db::Database> database,
                                                           FarmOptions options,
                                                           FarmMetrics* metrics) {
  std::unique_ptr<FarmCore> core(new FarmCore(std::move(database), options, metrics));
  GTCO_RETURN_IF_ERROR(core->ResumeJobs());
  if (core->options_.prepare_ahead) {
    core->preparer_ = std::thread([raw = core.get()] { raw->PrepareLoop(); });
  }
  return core;
}

int64_t FarmCore::NowMs() const {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string FarmCore::NewId(const std::string& prefix) {
  return prefix + util::Hex64(rng_()).substr(0, 10);
}

absl::Status FarmCore::ResumeJobs() {
  std::lock_guard<std::mutex> lock(mutex_);
  GTCO_ASSIGN_OR_RETURN(std::vector<db::JobRow> running, db_->ListJobs("", "running"));
  for (const db::JobRow& job_row : running) {
    GTCO_RETURN_IF_ERROR(LoadJobLocked(job_row));
    GTCO_LOG(kInfo, "resumed job " << job_row.job_id << " (" << job_row.model_name << ")");
  }
  return absl::OkStatus();
}

absl::Status FarmCore::CheckTeamQuotaLocked(const std::string& team_name) {
  absl::StatusOr<db::TeamRow> team = db_->GetTeam(team_name);
  if (!team.ok()) {
    return team.status().code() == absl::StatusCode::kNotFound ? absl::OkStatus() : team.status();
  }
  if (team->max_concurrent_jobs > 0) {
    GTCO_ASSIGN_OR_RETURN(int64_t running, db_->CountRunningJobs(team_name));
    if (running >= team->max_concurrent_jobs) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "team '", team_name, "' already runs ", running, " jobs, its limit (max-concurrent-jobs ",
          team->max_concurrent_jobs, "); wait for one to finish or cancel one"));
    }
  }
  if (team->max_trials_per_day > 0) {
    GTCO_ASSIGN_OR_RETURN(int64_t trials,
                          db_->CountTrialsSince(team_name, NowMs() - 24LL * 3600 * 1000));
    if (trials >= team->max_trials_per_day) {
      return absl::ResourceExhaustedError(
          absl::StrCat("team '", team_name, "' measured ", trials,
                       " trials in the last 24 hours, its limit (max-trials-per-day ",
                       team->max_trials_per_day, "); ask an admin to raise it or wait"));
    }
  }
  return absl::OkStatus();
}

absl::Status FarmCore::LoadJobLocked(const db::JobRow& job_row) {
  auto job = std::make_unique<JobState>();
  job->row = job_row;
  job->resumed_ms = NowMs();
  if (!job_row.options.empty() &&
      !google::protobuf::util::JsonStringToMessage(job_row.options, &job->options).ok()) {
    GTCO_LOG(kWarning, "job " << job_row.job_id << ": unreadable options, using defaults");
  }
  if (job->options.round_size() <= 0) job->options.set_round_size(options_.default_round_size);
  absl::StatusOr<db::TeamRow> team = db_->GetTeam(job_row.team);
  if (team.ok()) {
    job->team_share = team->share;
    job->team_max_trials_per_day = team->max_trials_per_day;
  } else if (team.status().code() != absl::StatusCode::kNotFound) {
    return team.status();
  }
  ParseSchedulerKind(job->options.scheduler(), &job->scheduler.kind);
  GTCO_ASSIGN_OR_RETURN(std::vector<db::TaskRow> task_rows, db_->ListTasks(job_row.job_id));
  for (const db::TaskRow& task_row : task_rows) {
    auto task = std::make_unique<TaskState>();
    task->row = task_row;
    GTCO_ASSIGN_OR_RETURN(std::optional<db::WorkloadRow> workload_row,
                          db_->GetWorkload(task_row.workload_key));
    if (!workload_row) {
      return absl::DataLossError(absl::StrCat("workload ", task_row.workload_key, " of task ",
                                              task_row.task_id, " is missing"));
    }
    GTCO_ASSIGN_OR_RETURN(task->workload, ir::ParseWorkload(workload_row->canonical));
    task->description = workload_row->description;
    task->flops = workload_row->flops;
    GTCO_RETURN_IF_ERROR(LoadTaskHistoryLocked(*task));
    job->trials_at_resume += task->trials_done;
    tasks_[task_row.task_id] = task.get();
    job->tasks.push_back(std::move(task));
  }
  JobState& job_ref = *job;
  jobs_[job_row.job_id] = std::move(job);
  for (auto& task : job_ref.tasks) UpdateTaskCompletionLocked(job_ref, *task);
  UpdateJobCompletionLocked(job_ref);
  return absl::OkStatus();
}

absl::Status FarmCore::LoadTaskHistoryLocked(TaskState& task) {
  if (task.row.state == "from_database") {
    GTCO_ASSIGN_OR_RETURN(auto best, db_->BestMeasurement(task.row.workload_key, task.row.target));
    if (best) task.best_seconds = best->median_seconds;
    return absl::OkStatus();
  }
  GTCO_ASSIGN_OR_RETURN(task.history, db_->ListMeasurementsForTask(task.row.task_id));
  for (const db::MeasurementRow& measurement : task.history) {
    ++task.trials_done;
    if (!measurement.ok) {
      ++task.trials_failed;
      if (task.first_error.empty()) task.first_error = measurement.error;
    } else if (task.best_seconds == 0 || measurement.median_seconds < task.best_seconds) {
      task.best_seconds = measurement.median_seconds;
    }
    task.best_history.push_back(task.best_seconds);
  }
  for (const char* state : {"pending", "leased"}) {
    GTCO_ASSIGN_OR_RETURN(std::vector<db::CandidateRow> candidates,
                          db_->ListCandidates(task.row.task_id, state));
    for (const db::CandidateRow& candidate : candidates) {
      task.outstanding[candidate.candidate_id] = candidate.trace;
      if (candidate.state == "pending") task.pending.push_back(candidate.candidate_id);
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<gtco::v1::JobStatus> FarmCore::Submit(const gtco::v1::SubmitHeader& header,
                                                     const std::string& model_bytes) {
  GTCO_ASSIGN_OR_RETURN(const target::Target target, ValidateTarget(header.target()));
  SchedulerKind scheduler_kind;
  if (!ParseSchedulerKind(header.scheduler(), &scheduler_kind)) {
    return absl::InvalidArgumentError(absl::StrCat("unknown scheduler '", header.scheduler(),
                                                   "'; expected 'gradient' or 'even'"));
  }
  if (header.rounds() < 0 || header.rounds() > 256) {
    return absl::InvalidArgumentError(
        absl::StrCat("--rounds must be between 1 and 256 candidates (got ", header.rounds(), ")"));
  }
  if (header.budget() <= 0 || header.budget() > kMaxBudget) {
    return absl::InvalidArgumentError(
        absl::StrCat("budget must be a positive number of trials, at most ", kMaxBudget, " (got ",
                     header.budget(), "); pass --budget N"));
  }
  if (model_bytes.empty()) return absl::InvalidArgumentError("the model is empty (0 bytes)");
  GTCO_ASSIGN_OR_RETURN(
      onnx::ModelAnalysis analysis,
      onnx::AnalyzeOnnxModel(model_bytes, OverridesFrom(header), PlanOptionsFor(target)));
  if (analysis.tasks.empty()) {
    return absl::InvalidArgumentError("the model has no compute operations to tune");
  }
  GTCO_RETURN_IF_ERROR(CheckTargetCovers(analysis, target));

  std::lock_guard<std::mutex> lock(mutex_);
  GTCO_RETURN_IF_ERROR(CheckTeamQuotaLocked(header.team().empty() ? "default" : header.team()));
  int64_t now = NowMs();
  db::JobRow job_row;
  job_row.job_id = NewId("j");
  job_row.team = header.team().empty() ? "default" : header.team();
  job_row.model_name = header.model_name().empty() ? "model.onnx" : header.model_name();
  job_row.model_sha = util::HexDigest128(model_bytes);
  job_row.target = header.target();
  job_row.state = "running";
  job_row.budget = header.budget();
  job_row.created_unix_ms = job_row.updated_unix_ms = now;
  gtco::v1::JobOptions job_options;
  job_options.set_round_size(header.rounds() > 0 ? header.rounds() : options_.default_round_size);
  job_options.set_scheduler(SchedulerKindName(scheduler_kind));
  *job_options.mutable_shapes() = header.shapes();
  (void)google::protobuf::util::MessageToJsonString(job_options, &job_row.options);

  std::vector<db::TaskRow> task_rows;
  std::vector<double> shares;
  std::vector<size_t> to_tune;
  for (size_t index = 0; index < analysis.tasks.size(); ++index) {
    const onnx::ModelTask& model_task = analysis.tasks[index];
    db::WorkloadRow workload_row{model_task.key, ir::AnchorKindName(model_task.workload.anchor),
                                 model_task.workload.CanonicalString(),
                                 model_task.workload.Description(), model_task.workload.Flops()};
    GTCO_RETURN_IF_ERROR(db_->PutWorkload(workload_row));
    db::TaskRow task_row;
    task_row.task_id = absl::StrCat(job_row.job_id, ".t", index);
    task_row.job_id = job_row.job_id;
    task_row.ordinal = static_cast<int>(index);
    task_row.workload_key = model_task.key;
    task_row.target = header.target();
    task_row.weight = model_task.weight;
    GTCO_ASSIGN_OR_RETURN(auto best, db_->BestMeasurement(model_task.key, header.target()));
    if (best) {
      task_row.state = "from_database";
    } else {
      task_row.state = "pending";
      to_tune.push_back(index);
      shares.push_back(model_task.weight);
    }
    task_rows.push_back(task_row);
  }
  if (header.budget() < static_cast<int64_t>(to_tune.size())) {
    return absl::InvalidArgumentError(
        absl::StrCat("budget ", header.budget(), " is smaller than the ", to_tune.size(),
                     " tasks this model needs tuned; pass --budget ", to_tune.size(), " or more"));
  }
  std::vector<int64_t> allotted = SplitBudget(header.budget(), shares);
  for (size_t rank = 0; rank < to_tune.size(); ++rank) {
    task_rows[to_tune[rank]].trials_allotted = allotted[rank];
  }
  GTCO_RETURN_IF_ERROR(db_->CreateJob(job_row, task_rows));
  GTCO_RETURN_IF_ERROR(LoadJobLocked(job_row));
  GTCO_LOG(kInfo, "job " << job_row.job_id << " (" << job_row.model_name << ", team "
                         << job_row.team << "): " << task_rows.size() << " tasks, "
                         << to_tune.size() << " to tune, budget " << job_row.budget);
  changed_.notify_all();
  return JobStatusLocked(*jobs_.at(job_row.job_id));
}

absl::StatusOr<gtco::v1::JobStatus> FarmCore::GetJob(const std::string& job_id) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto found = jobs_.find(job_id);
  if (found != jobs_.end()) return JobStatusLocked(*found->second);
  GTCO_ASSIGN_OR_RETURN(db::JobRow job_row, db_->GetJob(job_id));
  GTCO_RETURN_IF_ERROR(LoadJobLocked(job_row));  // finished job: load for display
  return JobStatusLocked(*jobs_.at(job_id));
}

absl::StatusOr<gtco::v1::ListJobsReply> FarmCore::ListJobs(const std::string& team,
                                                           const std::string& state) {
  std::vector<db::JobRow> rows;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    GTCO_ASSIGN_OR_RETURN(rows, db_->ListJobs(team, state));
  }
  gtco::v1::ListJobsReply reply;
  for (const db::JobRow& row : rows) {
    GTCO_ASSIGN_OR_RETURN(*reply.add_jobs(), GetJob(row.job_id));
  }
  return reply;
}

absl::StatusOr<gtco::v1::JobStatus> FarmCore::CancelJob(const std::string& job_id) {
  GTCO_RETURN_IF_ERROR(GetJob(job_id).status());  // loads it, NOT_FOUND when unknown
  std::lock_guard<std::mutex> lock(mutex_);
  JobState& job = *jobs_.at(job_id);
  if (job.Terminal()) {
    return absl::FailedPreconditionError(
        absl::StrCat("job ", job_id, " already ended (", job.row.state, ")"));
  }
  for (auto& task : job.tasks) {
    if (task->Finished()) continue;
    task->row.state = "cancelled";
    task->pending.clear();
    GTCO_RETURN_IF_ERROR(db_->UpdateTaskState(task->row.task_id, "cancelled"));
  }
  job.row.state = "cancelled";
  job.row.updated_unix_ms = NowMs();
  GTCO_RETURN_IF_ERROR(db_->UpdateJobState(job_id, "cancelled", "", job.row.updated_unix_ms));
  TouchJobLocked(job);
  return JobStatusLocked(job);
}

absl::StatusOr<gtco::v1::QueryReply> FarmCore::QueryModel(const gtco::v1::SubmitHeader& header,
                                                          const std::string& model_bytes) {
  GTCO_ASSIGN_OR_RETURN(const target::Target target, ValidateTarget(header.target()));
  GTCO_ASSIGN_OR_RETURN(
      onnx::ModelAnalysis analysis,
      onnx::AnalyzeOnnxModel(model_bytes, OverridesFrom(header), PlanOptionsFor(target)));
  std::lock_guard<std::mutex> lock(mutex_);
  gtco::v1::QueryReply reply;
  double total = 0;
  for (const onnx::ModelTask& model_task : analysis.tasks) {
    GTCO_ASSIGN_OR_RETURN(auto best, db_->BestMeasurement(model_task.key, header.target()));
    gtco::v1::ScheduleRecord record;
    if (best) {
      record = RecordFrom(*best, model_task.workload.Description(), model_task.workload.Flops());
      total += model_task.weight * best->median_seconds;
    } else {
      record.set_workload_key(model_task.key);
      record.set_description(model_task.workload.Description());
      record.set_target(header.target());
    }
    record.set_weight(model_task.weight);
    *reply.add_records() = record;
  }
  reply.set_estimated_latency_seconds(total);
  return reply;
}

absl::StatusOr<gtco::v1::QueryReply> FarmCore::QueryWorkload(const std::string& workload_key,
                                                             const std::string& target, int limit) {
  GTCO_RETURN_IF_ERROR(ValidateTarget(target).status());
  std::lock_guard<std::mutex> lock(mutex_);
  GTCO_ASSIGN_OR_RETURN(std::optional<db::WorkloadRow> workload, db_->GetWorkload(workload_key));
  if (!workload) {
    return absl::NotFoundError(
        absl::StrCat("workload '", workload_key, "' is not in the schedule database"));
  }
  GTCO_ASSIGN_OR_RETURN(std::vector<db::MeasurementRow> rows,
                        db_->TopMeasurements(workload_key, target, std::max(1, limit)));
  if (rows.empty()) {
    return absl::NotFoundError(absl::StrCat("workload '", workload_key,
                                            "' has no successful measurement on target '", target,
                                            "' yet"));
  }
  gtco::v1::QueryReply reply;
  for (const db::MeasurementRow& row : rows) {
    *reply.add_records() = RecordFrom(row, workload->description, workload->flops);
  }
  reply.set_estimated_latency_seconds(rows.front().median_seconds);
  return reply;
}

absl::StatusOr<gtco::v1::JobStatus> FarmCore::WaitForJobChange(const std::string& job_id,
                                                               int64_t* version, int timeout_ms) {
  GTCO_RETURN_IF_ERROR(GetJob(job_id).status());
  std::unique_lock<std::mutex> lock(mutex_);
  JobState& job = *jobs_.at(job_id);
  changed_.wait_for(lock, std::chrono::milliseconds(timeout_ms),
                    [&] { return shutting_down_ || job.version != *version; });
  *version = job.version;
  return JobStatusLocked(job);
}

void FarmCore::Shutdown() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    shutting_down_ = true;
    changed_.notify_all();
    ready_cv_.notify_all();
    prepare_cv_.notify_all();
    batch_lowered_.notify_all();
  }
  if (preparer_.joinable() && preparer_.get_id() != std::this_thread::get_id()) preparer_.join();
}

void FarmCore::TouchJobLocked(JobState& job) {
  ++job.version;
  changed_.notify_all();
}

int FarmCore::TaskState::MappingOfTrace(const std::string& trace_text) const {
  std::string sketch = trace_text.substr(0, trace_text.find(';'));
  for (size_t index = 0; index < mappings.size(); ++index) {
    if (mappings[index].space->sketch_name() == sketch) return static_cast<int>(index);
  }
  return -1;
}

int64_t FarmCore::JobState::TrialsSpent() const {
  int64_t spent = 0;
  for (const auto& task : tasks) {
    spent += task->trials_done + static_cast<int64_t>(task->outstanding.size());
  }
  return spent;
}

void FarmCore::UpdateTaskCompletionLocked(JobState& job, TaskState& task) {
  if (task.Finished() || job.row.state != "running") return;
  bool no_more = job.BudgetLeft() <= 0 || task.Exhausted();
  bool nothing_left = task.outstanding.empty() && no_more;
  std::string state = nothing_left ? "done" : (task.trials_done > 0 ? "running" : "pending");
  if (state == task.row.state) return;
  task.row.state = state;
  absl::Status status = db_->UpdateTaskState(task.row.task_id, state);
  if (!status.ok()) GTCO_LOG(kError, "task " << task.row.task_id << ": " << status);
}

void FarmCore::UpdateJobCompletionLocked(JobState& job) {
  if (job.row.state != "running") return;
  for (auto& task : job.tasks) UpdateTaskCompletionLocked(job, *task);
  std::string failed_tasks;
  for (const auto& task : job.tasks) {
    if (!task->Finished()) return;
    if (task->row.state == "done" && task->best_seconds == 0) {
      absl::StrAppend(&failed_tasks, failed_tasks.empty() ? "" : "; ", task->row.task_id, " (",
                      task->description, "): ",
                      task->trials_done == 0 ? "no trial was run"
                                             : "every candidate failed: " + task->first_error);
    }
  }
  job.row.state = failed_tasks.empty() ? "done" : "failed";
  job.row.error = failed_tasks;
  job.row.updated_unix_ms = NowMs();
  absl::Status status =
      db_->UpdateJobState(job.row.job_id, job.row.state, job.row.error, job.row.updated_unix_ms);
  if (!status.ok()) GTCO_LOG(kError, "job " << job.row.job_id << ": " << status);
  GTCO_LOG(kInfo, "job " << job.row.job_id << " " << job.row.state);
  TouchJobLocked(job);
}

std::vector<TaskCurve> FarmCore::CurvesLocked(const JobState& job) const {
  std::vector<TaskCurve> curves;
  for (const auto& task : job.tasks) {
    TaskCurve curve;
    curve.weight = task->row.weight;
    curve.best_history = task->best_history;
    curve.in_flight = static_cast<int64_t>(task->outstanding.size());
    curve.exhausted = task->Exhausted();
    curve.finished = task->Finished();
    curves.push_back(std::move(curve));
  }
  return curves;
}

gtco::v1::TaskStatus FarmCore::TaskStatusLocked(const JobState& job, const TaskState& task) const {
  gtco::v1::TaskStatus status;
  status.set_task_id(task.row.task_id);
  status.set_workload_key(task.row.workload_key);
  status.set_kind(ir::AnchorKindName(task.workload.anchor));
  status.set_description(task.description);
  status.set_weight(task.row.weight);
  status.set_trials_allotted(task.row.trials_allotted);
  status.set_trials_done(task.trials_done);
  status.set_trials_failed(task.trials_failed);
  status.set_best_seconds(task.best_seconds);
  if (task.best_seconds > 0) status.set_gflops(task.flops / task.best_seconds * 1e-9);
  status.set_state(task.row.state);
  status.set_eta_seconds(-1);
  status.set_expected_gain_seconds(task.last_gain);
  int64_t pruned = 0;
  for (const schedule::MappingVerdict& verdict : task.verdicts) {
    gtco::v1::MappingStatus* mapping = status.add_mappings();
    mapping->set_name(verdict.mapping);
    mapping->set_applies(verdict.applies);
    mapping->set_reason(verdict.reason);
    for (const MappingState& state : task.mappings) {
      if (state.space->mapping() != verdict.mapping) continue;
      mapping->set_trials(state.trials);
      mapping->set_in_flight(state.in_flight);
      mapping->set_best_seconds(state.best_seconds);
      const schedule::PruneStats& stats = state.space->prune_stats();
      mapping->set_considered(stats.considered);
      mapping->set_admitted(stats.admitted);
      for (const auto& [rule, count] : stats.pruned_by_rule) {
        gtco::v1::PrunedRule* pruned_rule = mapping->add_pruned();
        pruned_rule->set_rule(rule);
        pruned_rule->set_count(count);
        pruned += count;
      }
    }
  }
  status.set_pruned(pruned);
  return status;
}

gtco::v1::JobStatus FarmCore::JobStatusLocked(const JobState& job) const {
  gtco::v1::JobStatus status;
  status.set_job_id(job.row.job_id);
  status.set_team(job.row.team);
  status.set_model_name(job.row.model_name);
  status.set_target(job.row.target);
  status.set_state(job.row.state);
  status.set_error(job.row.error);
  status.set_budget(job.row.budget);
  status.set_created_unix_seconds(job.row.created_unix_ms / 1000.0);
  status.set_updated_unix_seconds(job.row.updated_unix_ms / 1000.0);
  status.set_scheduler(SchedulerKindName(job.scheduler.kind));
  status.set_round_size(job.options.round_size());
  for (const std::string& decision : job.decisions) status.add_decisions(decision);
  int64_t done = 0, failed = 0;
  double latency = 0;
  for (const auto& task : job.tasks) {
    done += task->trials_done;
    failed += task->trials_failed;
    latency += task->row.weight * task->best_seconds;
  }
  status.set_trials_done(done);
  status.set_trials_failed(failed);
  status.set_estimated_latency_seconds(latency);
  // ETA from this server's throughput on the job since it started driving it.
  double elapsed = (NowMs() - job.resumed_ms) / 1000.0;
  int64_t progressed = done - job.trials_at_resume;
  double rate = (elapsed > 0.5 && progressed > 0) ? progressed / elapsed : 0;
  int64_t budget_left = std::max<int64_t>(0, job.BudgetLeft());
  double job_eta = rate > 0 ? (budget_left + job.TrialsSpent() - done) / rate : -1;
  status.set_eta_seconds(job.Terminal() ? 0 : job_eta);
  // Each task's allotment: what it has spent plus its share of the budget left, in proportion
  // to the scheduler's current expected gains (evenly while they are unknown).
  std::vector<TaskCurve> curves = CurvesLocked(job);
  std::vector<double> shares;
  double share_total = 0;
  for (size_t index = 0; index < job.tasks.size(); ++index) {
    const TaskState& task = *job.tasks[index];
    double share = 0;
    if (!task.Finished() && !task.Exhausted()) {
      share = job.scheduler.kind == SchedulerKind::kEven || task.trials_done < 2
                  ? task.row.weight
                  : ExpectedGain(curves[index], job.scheduler);
    }
    shares.push_back(share);
    share_total += share;
  }
  for (size_t index = 0; index < job.tasks.size(); ++index) {
    const TaskState& task = *job.tasks[index];
    gtco::v1::TaskStatus* task_status = status.add_tasks();
    *task_status = TaskStatusLocked(job, task);
    int64_t spent = task.trials_done + static_cast<int64_t>(task.outstanding.size());
    if (task.row.state == "from_database") continue;
    int64_t projected =
        share_total > 0
            ? static_cast<int64_t>(std::llround(budget_left * shares[index] / share_total))
            : 0;
    task_status->set_trials_allotted(job.Terminal() ? task.trials_done : spent + projected);
    if (task.Finished()) {
      task_status->set_eta_seconds(0);
    } else if (!job.Terminal()) {
      task_status->set_eta_seconds(projected > 0 ? job_eta : (rate > 0 ? 0 : -1));
    }
  }
  return status;
}

}  // namespace gtco::server
