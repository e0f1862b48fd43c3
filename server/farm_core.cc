// FarmCore: jobs, tasks and their status; resuming unfinished jobs from the database.
#include "server/farm_core.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <set>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/kernels/build_program.h"
#include "common/kernels/registry.h"
#include "common/onnx/model_analysis.h"
#include "common/verify/graph_check.h"
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

/// OK when this server can generate programs for `target`.
absl::Status CheckCanBuild(target::Target target) {
  if (!kernels::CanBuildFor(target)) {
    return absl::FailedPreconditionError(
        "this gtco-server was built without LLVM and cannot generate CPU programs; submit with "
        "--target cuda or use a server built with LLVM");
  }
  return absl::OkStatus();
}

/// UNIMPLEMENTED naming the first task that no mapping of `target` covers even on its most
/// capable machine (an sm_90 GPU; a CPU with every feature a mapping asks for), with the
/// mappings' verdicts, so the user learns at submission rather than from a job that never starts.
absl::Status CheckTargetCovers(const onnx::ModelAnalysis& analysis, target::Target target) {
  const bool cuda = target == target::Target::kCuda;
  target::HardwareInfo best = target::CudaArchPreset(90);
  if (!cuda) {
    best = target::HardwareInfo();
    best.cpu_features = {"avx512f", "avx512_bf16", "avx512_vnni", "amx_tile", "amx_bf16",
                         "amx_int8",  "avx2",        "fma",         "avx"};
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

ScheduleRecordInfo RecordFrom(const db::MeasurementRow& row, target::Target target,
                              const std::string& description, int64_t flops) {
  ScheduleRecordInfo record;
  record.workload_key = row.workload_key;
  record.description = description;
  record.target = target;
  record.trace = row.trace;
  record.program_hash = row.program_hash;
  record.median_seconds = row.median_seconds;
  record.min_seconds = row.min_seconds;
  record.max_seconds = row.max_seconds;
  record.stddev_seconds = row.stddev_seconds;
  record.repeats = row.repeats;
  record.measurements = row.measurements;
  if (row.median_seconds > 0) record.gflops = flops / row.median_seconds * 1e-9;
  record.worker_id = row.worker_id;
  record.hardware = row.hardware;
  record.measured_unix_seconds = row.measured_unix_ms / 1000.0;
  record.tuned = true;
  return record;
}

}  // namespace

FarmCore::FarmCore(std::unique_ptr<db::Database> database, FarmOptions options,
                   FarmMetrics* metrics)
    : db_(std::move(database)),
      options_(options),
      metrics_(metrics),
      models_(db_.get(), CostModelOptions{options.model_dir, options.model_update_every,
                                          options.model_growth_to_retrain}),
      workers_(db_.get(), options.heartbeat_seconds) {
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
  core->preparer_ = std::thread([raw = core.get()] { raw->PrepareLoop(); });
  return core;
}

int64_t FarmCore::NowMs() const {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string FarmCore::NewId(const std::string& prefix) {
  std::lock_guard<std::mutex> lock(ids_mutex_);
  return prefix + util::Hex64(rng_()).substr(0, 10);
}

uint64_t FarmCore::NewSeed() {
  std::lock_guard<std::mutex> lock(ids_mutex_);
  return rng_();
}

absl::Status FarmCore::ResumeJobs() {
  std::lock_guard<std::mutex> lock(mutex_);
  GTCO_ASSIGN_OR_RETURN(std::vector<db::JobRow> running, db_->ListJobs("", db::JobState::kRunning));
  for (const db::JobRow& job_row : running) {
    absl::Status loaded = LoadJobLocked(job_row);
    if (loaded.code() == absl::StatusCode::kDataLoss) {
      // A corrupt row (or one a newer server wrote) stops that job, not the whole farm.
      GTCO_LOG(kError, "job " << job_row.job_id << " not resumed: " << loaded);
      continue;
    }
    GTCO_RETURN_IF_ERROR(loaded);
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
  auto job = std::make_unique<Job>();
  job->row = job_row;
  job->resumed_ms = NowMs();
  if (!job_row.options.empty()) {
    absl::StatusOr<JobOptions> options = DecodeJobOptions(job_row.options);
    if (options.ok()) {
      job->options = *std::move(options);
    } else {
      GTCO_LOG(kWarning, "job " << job_row.job_id << ": unreadable options (" << options.status()
                                << "), using defaults");
    }
  }
  if (job->options.round_size <= 0) job->options.round_size = options_.default_round_size;
  absl::StatusOr<db::TeamRow> team = db_->GetTeam(job_row.team);
  if (team.ok()) {
    job->team_share = team->share;
    job->team_max_trials_per_day = team->max_trials_per_day;
  } else if (team.status().code() != absl::StatusCode::kNotFound) {
    return team.status();
  }
  ParseSchedulerKind(job->options.scheduler, &job->scheduler.kind);
  GTCO_ASSIGN_OR_RETURN(std::vector<db::TaskRow> task_rows, db_->ListTasks(job_row.job_id));
  for (const db::TaskRow& task_row : task_rows) {
    auto task = std::make_unique<Task>();
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
  Job& job_ref = *job;
  jobs_[job_row.job_id] = std::move(job);
  for (auto& task : job_ref.tasks) UpdateTaskCompletionLocked(job_ref, *task);
  UpdateJobCompletionLocked(job_ref);
  return absl::OkStatus();
}

absl::Status FarmCore::LoadTaskHistoryLocked(Task& task) {
  if (task.row.state == db::TaskState::kFromDatabase) {
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
    } else {
      task.means.Add(measurement.trace, measurement.median_seconds);
      task.best_seconds = task.means.best;
    }
    task.best_history.push_back(task.best_seconds);
  }
  for (db::CandidateState state : {db::CandidateState::kPending, db::CandidateState::kLeased}) {
    GTCO_ASSIGN_OR_RETURN(std::vector<db::CandidateRow> candidates,
                          db_->ListCandidates(task.row.task_id, state));
    for (const db::CandidateRow& candidate : candidates) {
      task.outstanding[candidate.candidate_id] = candidate.trace;
      if (candidate.state == db::CandidateState::kPending)
        task.pending.push_back(candidate.candidate_id);
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<JobInfo> FarmCore::Submit(const JobSpec& spec, const std::string& model_bytes) {
  const target::Target target = spec.target;
  GTCO_RETURN_IF_ERROR(CheckCanBuild(target));
  SchedulerKind scheduler_kind;
  if (!ParseSchedulerKind(spec.scheduler, &scheduler_kind)) {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown scheduler '", spec.scheduler, "'; expected 'gradient' or 'even'"));
  }
  if (spec.rounds < 0 || spec.rounds > 256) {
    return absl::InvalidArgumentError(
        absl::StrCat("--rounds must be between 1 and 256 candidates (got ", spec.rounds, ")"));
  }
  if (spec.budget <= 0 || spec.budget > kMaxBudget) {
    return absl::InvalidArgumentError(
        absl::StrCat("budget must be a positive number of trials, at most ", kMaxBudget, " (got ",
                     spec.budget, "); pass --budget N"));
  }
  if (model_bytes.empty()) return absl::InvalidArgumentError("the model is empty (0 bytes)");
  GTCO_ASSIGN_OR_RETURN(onnx::ModelAnalysis analysis,
                        onnx::AnalyzeOnnxModel(model_bytes, spec.shapes, graph::PlanOptionsFor(target)));
  if (analysis.tasks.empty()) {
    return absl::InvalidArgumentError("the model has no compute operations to tune");
  }
  GTCO_RETURN_IF_ERROR(CheckTargetCovers(analysis, target));
  // A wrong graph rewrite is caught here, before any trial is spent on its plan.
  GTCO_ASSIGN_OR_RETURN(const verify::GraphCheck graph_check,
                        verify::CheckGraphPasses(model_bytes, spec.shapes));

  std::lock_guard<std::mutex> lock(mutex_);
  GTCO_RETURN_IF_ERROR(CheckTeamQuotaLocked(spec.team.empty() ? "default" : spec.team));
  int64_t now = NowMs();
  db::JobRow job_row;
  job_row.job_id = NewId("j");
  job_row.team = spec.team.empty() ? "default" : spec.team;
  job_row.model_name = spec.model_name.empty() ? "model.onnx" : spec.model_name;
  job_row.model_sha = util::HexDigest128(model_bytes);
  job_row.target = target;
  job_row.state = db::JobState::kRunning;
  job_row.budget = spec.budget;
  job_row.created_unix_ms = job_row.updated_unix_ms = now;
  JobOptions job_options;
  job_options.round_size = spec.rounds > 0 ? spec.rounds : options_.default_round_size;
  job_options.scheduler = SchedulerKindName(scheduler_kind);
  job_options.shapes = spec.shapes;
  job_options.plan = analysis.plan_choices;
  job_options.fallbacks = analysis.fallbacks;
  job_options.graph_check =
      graph_check.checked
          ? absl::StrCat("the graph after GTCO's passes matches the ONNX graph on random inputs "
                         "(reference interpreter; worst output ",
                         absl::StrFormat("%.1e", graph_check.max_error), " off)")
          : absl::StrCat("the graph after GTCO's passes was not checked at submit: ",
                         graph_check.reason);
  job_row.options = EncodeJobOptions(job_options);

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
    task_row.target = job_row.target;
    task_row.weight = model_task.weight;
    GTCO_ASSIGN_OR_RETURN(auto best, db_->BestMeasurement(model_task.key, job_row.target));
    if (best) {
      task_row.state = db::TaskState::kFromDatabase;
    } else {
      task_row.state = db::TaskState::kPending;
      to_tune.push_back(index);
      shares.push_back(model_task.weight);
    }
    task_rows.push_back(task_row);
  }
  if (spec.budget < static_cast<int64_t>(to_tune.size())) {
    return absl::InvalidArgumentError(
        absl::StrCat("budget ", spec.budget, " is smaller than the ", to_tune.size(),
                     " tasks this model needs tuned; pass --budget ", to_tune.size(), " or more"));
  }
  std::vector<int64_t> allotted = SplitBudget(spec.budget, shares);
  for (size_t rank = 0; rank < to_tune.size(); ++rank) {
    task_rows[to_tune[rank]].trials_allotted = allotted[rank];
  }
  GTCO_RETURN_IF_ERROR(db_->CreateJob(job_row, task_rows));
  GTCO_RETURN_IF_ERROR(LoadJobLocked(job_row));
  GTCO_LOG(kInfo, "job " << job_row.job_id << " (" << job_row.model_name << ", team "
                         << job_row.team << "): " << task_rows.size() << " tasks, "
                         << to_tune.size() << " to tune, budget " << job_row.budget);
  changed_.notify_all();
  leases_.Demand();
  return JobInfoLocked(*jobs_.at(job_row.job_id));
}

absl::StatusOr<JobInfo> FarmCore::GetJob(const std::string& job_id) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto found = jobs_.find(job_id);
  if (found != jobs_.end()) return JobInfoLocked(*found->second);
  GTCO_ASSIGN_OR_RETURN(db::JobRow job_row, db_->GetJob(job_id));
  GTCO_RETURN_IF_ERROR(LoadJobLocked(job_row));  // finished job: load for display
  return JobInfoLocked(*jobs_.at(job_id));
}

absl::StatusOr<std::vector<JobInfo>> FarmCore::ListJobs(const std::string& team,
                                                        std::optional<db::JobState> state) {
  std::vector<db::JobRow> rows;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    GTCO_ASSIGN_OR_RETURN(rows, db_->ListJobs(team, state));
  }
  std::vector<JobInfo> jobs;
  for (const db::JobRow& row : rows) {
    GTCO_ASSIGN_OR_RETURN(JobInfo job, GetJob(row.job_id));
    jobs.push_back(std::move(job));
  }
  return jobs;
}

absl::StatusOr<JobInfo> FarmCore::CancelJob(const std::string& job_id) {
  GTCO_RETURN_IF_ERROR(GetJob(job_id).status());  // loads it, NOT_FOUND when unknown
  std::lock_guard<std::mutex> lock(mutex_);
  Job& job = *jobs_.at(job_id);
  if (job.Terminal()) {
    return absl::FailedPreconditionError(
        absl::StrCat("job ", job_id, " already ended (", db::JobStateName(job.row.state), ")"));
  }
  for (auto& task : job.tasks) {
    if (task->Finished()) continue;
    task->row.state = db::TaskState::kCancelled;
    task->pending.clear();
    for (auto& [key, state] : task->classes) {
      state.build->withdrawn = true;  // its ready candidates are not leased
    }
    GTCO_RETURN_IF_ERROR(db_->UpdateTaskState(task->row.task_id, db::TaskState::kCancelled));
  }
  job.row.state = db::JobState::kCancelled;
  job.row.updated_unix_ms = NowMs();
  GTCO_RETURN_IF_ERROR(
      db_->UpdateJobState(job_id, db::JobState::kCancelled, "", job.row.updated_unix_ms));
  TouchJobLocked(job);
  return JobInfoLocked(job);
}

absl::StatusOr<QueryResult> FarmCore::QueryModel(const JobSpec& spec,
                                                 const std::string& model_bytes) {
  const target::Target target = spec.target;
  GTCO_RETURN_IF_ERROR(CheckCanBuild(target));
  GTCO_ASSIGN_OR_RETURN(onnx::ModelAnalysis analysis,
                        onnx::AnalyzeOnnxModel(model_bytes, spec.shapes, graph::PlanOptionsFor(target)));
  std::lock_guard<std::mutex> lock(mutex_);
  QueryResult result;
  std::vector<std::pair<std::string, int>> weights;
  std::map<std::string, double> best_of_key;
  for (const onnx::ModelTask& model_task : analysis.tasks) {
    GTCO_ASSIGN_OR_RETURN(auto best, db_->BestMeasurement(model_task.key, target));
    weights.emplace_back(model_task.key, model_task.weight);
    ScheduleRecordInfo record;
    if (best) {
      record =
          RecordFrom(*best, target, model_task.workload.Description(), model_task.workload.Flops());
      best_of_key[model_task.key] = best->median_seconds;
    } else {
      record.workload_key = model_task.key;
      record.description = model_task.workload.Description();
      record.target = target;
    }
    record.weight = model_task.weight;
    result.records.push_back(std::move(record));
  }
  result.estimated_latency_seconds =
      onnx::CostPlan(weights, analysis.plan_choices, [&](const std::string& key) {
        auto it = best_of_key.find(key);
        return it == best_of_key.end() ? std::nullopt : std::optional<double>(it->second);
      }).latency_seconds;
  return result;
}

absl::StatusOr<QueryResult> FarmCore::QueryWorkload(const std::string& workload_key,
                                                    target::Target target, int limit) {
  GTCO_RETURN_IF_ERROR(CheckCanBuild(target));
  const std::string target_name = target::TargetName(target);
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
                                            "' has no successful measurement on target '",
                                            target_name, "' yet"));
  }
  QueryResult result;
  for (const db::MeasurementRow& row : rows) {
    result.records.push_back(RecordFrom(row, target, workload->description, workload->flops));
  }
  result.estimated_latency_seconds = rows.front().median_seconds;
  return result;
}

absl::StatusOr<JobInfo> FarmCore::WaitForJobChange(const std::string& job_id, int64_t* version,
                                                   int timeout_ms) {
  GTCO_RETURN_IF_ERROR(GetJob(job_id).status());
  std::unique_lock<std::mutex> lock(mutex_);
  Job& job = *jobs_.at(job_id);
  changed_.wait_for(lock, std::chrono::milliseconds(timeout_ms),
                    [&] { return shutting_down_ || job.version != *version; });
  *version = job.version;
  return JobInfoLocked(job);
}

void FarmCore::Shutdown() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    shutting_down_ = true;
    changed_.notify_all();
  }
  leases_.Shutdown();
  if (preparer_.joinable() && preparer_.get_id() != std::this_thread::get_id()) preparer_.join();
}

void FarmCore::TouchJobLocked(Job& job) {
  ++job.version;
  changed_.notify_all();
}

int TaskClass::MappingOfTrace(const std::string& trace_text) const {
  std::string sketch = trace_text.substr(0, trace_text.find(';'));
  for (size_t index = 0; index < mappings.size(); ++index) {
    if (mappings[index].space->sketch_name() == sketch) return static_cast<int>(index);
  }
  return -1;
}

int64_t FarmCore::Job::TrialsSpent() const {
  int64_t spent = 0;
  for (const auto& task : tasks) {
    spent += task->trials_done + task->InFlight();
  }
  return spent;
}

void FarmCore::UpdateTaskCompletionLocked(Job& job, Task& task) {
  if (task.Finished() || job.row.state != db::JobState::kRunning) return;
  bool no_more = job.BudgetLeft() <= 0 || task.Exhausted();
  bool nothing_left = task.InFlight() == 0 && no_more;
  const db::TaskState state = nothing_left           ? db::TaskState::kDone
                              : task.trials_done > 0 ? db::TaskState::kRunning
                                                     : db::TaskState::kPending;
  if (state == task.row.state) return;
  task.row.state = state;
  if (task.Finished()) {
    for (auto& [key, task_class] : task.classes) task_class.build->withdrawn = true;
  }
  absl::Status status = db_->UpdateTaskState(task.row.task_id, state);
  if (!status.ok()) GTCO_LOG(kError, "task " << task.row.task_id << ": " << status);
}

void FarmCore::UpdateJobCompletionLocked(Job& job) {
  if (job.row.state != db::JobState::kRunning) return;
  for (auto& task : job.tasks) UpdateTaskCompletionLocked(job, *task);
  // Workloads of plan alternatives (attention fused or not): one no mapping can schedule on any
  // class leaves its region to the other alternative instead of failing the job.
  std::set<std::string> alternative_keys;
  for (const onnx::PlanChoice& choice : job.options.plan) {
    for (const onnx::PlanChoice::Alternative& alternative : choice.alternatives) {
      for (const auto& [key, count] : alternative.workloads) alternative_keys.insert(key);
    }
  }
  auto unschedulable = [](const Task& task) {
    if (task.classes.empty() || task.trials_done > 0) return false;
    for (const auto& [key, task_class] : task.classes) {
      if (!task_class.mappings.empty()) return false;
    }
    return true;
  };
  std::string failed_tasks;
  for (const auto& task : job.tasks) {
    if (!task->Finished()) return;
    if (alternative_keys.count(task->row.workload_key) && unschedulable(*task)) continue;
    if (task->row.state == db::TaskState::kDone && task->best_seconds == 0) {
      absl::StrAppend(&failed_tasks, failed_tasks.empty() ? "" : "; ", task->row.task_id, " (",
                      task->description, "): ",
                      task->trials_done == 0 ? "no trial was run"
                                             : "every candidate failed: " + task->first_error);
    }
  }
  job.row.state = failed_tasks.empty() ? db::JobState::kDone : db::JobState::kFailed;
  job.row.error = failed_tasks;
  job.row.updated_unix_ms = NowMs();
  absl::Status status =
      db_->UpdateJobState(job.row.job_id, job.row.state, job.row.error, job.row.updated_unix_ms);
  if (!status.ok()) GTCO_LOG(kError, "job " << job.row.job_id << ": " << status);
  GTCO_LOG(kInfo, "job " << job.row.job_id << " " << db::JobStateName(job.row.state));
  TouchJobLocked(job);
}

onnx::PlanCost FarmCore::PlanCostLocked(const Job& job) const {
  std::vector<std::pair<std::string, int>> weights;
  std::map<std::string, double> best_of_key;
  for (const auto& task : job.tasks) {
    weights.emplace_back(task->row.workload_key, task->row.weight);
    if (task->best_seconds > 0) best_of_key[task->row.workload_key] = task->best_seconds;
  }
  return onnx::CostPlan(weights, job.options.plan,
                        [&](const std::string& key) -> std::optional<double> {
                          auto it = best_of_key.find(key);
                          if (it == best_of_key.end()) return std::nullopt;
                          return it->second;
                        });
}

std::vector<TaskCurve> FarmCore::CurvesLocked(const Job& job,
                                              const onnx::PlanCost* plan_cost) const {
  // The gradient scheduler weighs a job's tasks by their runs in the plan as measured so far
  // (onnx::PlanCost::tuning_weight): an alternative that has fallen behind stops drawing budget.
  // The even split, a baseline, keeps the occurrence weights.
  const bool replan = !job.options.plan.empty() && job.scheduler.kind == SchedulerKind::kGradient;
  std::map<std::string, int64_t> tuning_weight;
  if (replan) {
    tuning_weight = plan_cost ? plan_cost->tuning_weight : PlanCostLocked(job).tuning_weight;
  }
  std::vector<TaskCurve> curves;
  for (const auto& task : job.tasks) {
    TaskCurve curve;
    curve.weight = task->row.weight;
    if (replan) {
      auto it = tuning_weight.find(task->row.workload_key);
      curve.weight = it == tuning_weight.end() ? 0 : static_cast<double>(it->second);
    }
    curve.best_history = task->best_history;
    curve.in_flight = task->InFlight();
    curve.exhausted = task->Exhausted();
    curve.finished = task->Finished();
    curves.push_back(std::move(curve));
  }
  return curves;
}

TaskInfo FarmCore::TaskInfoLocked(const Job& job, const Task& task) const {
  TaskInfo info;
  info.task_id = task.row.task_id;
  info.workload_key = task.row.workload_key;
  info.kind = ir::AnchorKindName(task.workload.anchor);
  info.description = task.description;
  info.weight = task.row.weight;
  info.trials_allotted = task.row.trials_allotted;
  info.trials_done = task.trials_done;
  info.trials_failed = task.trials_failed;
  info.best_seconds = task.best_seconds;
  if (task.best_seconds > 0) info.gflops = task.flops / task.best_seconds * 1e-9;
  info.state = task.row.state;
  info.eta_seconds = -1;
  info.expected_gain_seconds = task.last_gain;
  // Per hardware class of the workers measuring the task: each has its own spaces and pruning.
  for (const auto& [key, task_class] : task.classes) {
    for (const schedule::MappingVerdict& verdict : task_class.verdicts) {
      MappingInfo mapping;
      mapping.name = verdict.mapping;
      mapping.hardware = key;
      mapping.applies = verdict.applies;
      mapping.reason = verdict.reason;
      for (const MappingState& state : task_class.mappings) {
        if (state.space->mapping() != verdict.mapping) continue;
        mapping.trials = state.trials;
        mapping.in_flight = state.in_flight;
        mapping.best_seconds = state.best_seconds;
        const schedule::PruneStats& stats = state.prune_stats;
        mapping.considered = stats.considered;
        mapping.admitted = stats.admitted;
        for (const auto& [rule, count] : stats.pruned_by_rule) {
          mapping.pruned_by_rule[rule] += count;
          info.pruned += count;
        }
      }
      info.mappings.push_back(std::move(mapping));
    }
  }
  return info;
}

JobInfo FarmCore::JobInfoLocked(const Job& job) const {
  JobInfo info;
  info.job_id = job.row.job_id;
  info.team = job.row.team;
  info.model_name = job.row.model_name;
  info.target = job.row.target;
  info.state = job.row.state;
  info.error = job.row.error;
  info.budget = job.row.budget;
  info.created_unix_seconds = job.row.created_unix_ms / 1000.0;
  info.updated_unix_seconds = job.row.updated_unix_ms / 1000.0;
  info.scheduler = SchedulerKindName(job.scheduler.kind);
  info.round_size = job.options.round_size;
  info.decisions.assign(job.decisions.begin(), job.decisions.end());
  std::map<std::string, const Task*> task_of_key;
  for (const auto& task : job.tasks) {
    info.trials_done += task->trials_done;
    info.trials_failed += task->trials_failed;
    task_of_key.emplace(task->row.workload_key, task.get());
  }
  const onnx::PlanCost plan_cost = PlanCostLocked(job);
  info.estimated_latency_seconds = plan_cost.latency_seconds;
  info.fallbacks = job.options.fallbacks;
  info.graph_check = job.options.graph_check;
  for (size_t c = 0; c < job.options.plan.size(); ++c) {
    const onnx::PlanChoice& choice = job.options.plan[c];
    PlanChoiceInfo out{choice.description, choice.instances, {}};
    for (size_t alt = 0; alt < choice.alternatives.size(); ++alt) {
      PlanChoiceInfo::Alternative alternative;
      alternative.name = choice.alternatives[alt].name;
      alternative.measured = plan_cost.costs[c][alt].has_value();
      alternative.chosen = plan_cost.chosen[c] == static_cast<int>(alt);
      alternative.left_behind = !plan_cost.in_play[c][alt];
      alternative.seconds = plan_cost.measured_seconds[c][alt];
      for (const auto& [key, count] : choice.alternatives[alt].workloads) {
        auto it = task_of_key.find(key);
        alternative.tasks.emplace_back(it == task_of_key.end() ? key : it->second->row.task_id,
                                       count);
      }
      out.alternatives.push_back(std::move(alternative));
    }
    info.plan.push_back(std::move(out));
  }
  // ETA from this server's throughput on the job since it started driving it.
  const int64_t done = info.trials_done;
  double elapsed = (NowMs() - job.resumed_ms) / 1000.0;
  int64_t progressed = done - job.trials_at_resume;
  double rate = (elapsed > 0.5 && progressed > 0) ? progressed / elapsed : 0;
  int64_t budget_left = std::max<int64_t>(0, job.BudgetLeft());
  double job_eta = rate > 0 ? (budget_left + job.TrialsSpent() - done) / rate : -1;
  info.eta_seconds = job.Terminal() ? 0 : job_eta;
  // Each task's allotment: what it has spent plus its share of the budget left, in proportion
  // to the scheduler's current expected gains (evenly while they are unknown).
  std::vector<TaskCurve> curves = CurvesLocked(job, &plan_cost);
  std::vector<double> shares;
  double share_total = 0;
  for (size_t index = 0; index < job.tasks.size(); ++index) {
    const Task& task = *job.tasks[index];
    double share = 0;
    if (!task.Finished() && !task.Exhausted()) {
      share = job.scheduler.kind == SchedulerKind::kEven || task.trials_done < 2
                  ? curves[index].weight
                  : ExpectedGain(curves[index], job.scheduler);
    }
    shares.push_back(share);
    share_total += share;
  }
  for (size_t index = 0; index < job.tasks.size(); ++index) {
    const Task& task = *job.tasks[index];
    TaskInfo task_info = TaskInfoLocked(job, task);
    auto runs = plan_cost.runs.find(task.row.workload_key);
    task_info.runs = runs == plan_cost.runs.end() ? 0 : runs->second;
    int64_t spent = task.trials_done + task.InFlight();
    if (task.row.state != db::TaskState::kFromDatabase) {
      int64_t projected =
          share_total > 0
              ? static_cast<int64_t>(std::llround(budget_left * shares[index] / share_total))
              : 0;
      task_info.trials_allotted = job.Terminal() ? task.trials_done : spent + projected;
      if (task.Finished()) {
        task_info.eta_seconds = 0;
      } else if (!job.Terminal()) {
        task_info.eta_seconds = projected > 0 ? job_eta : (rate > 0 ? 0 : -1);
      }
    }
    info.tasks.push_back(std::move(task_info));
  }
  return info;
}

}  // namespace gtco::server
