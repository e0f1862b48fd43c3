// FarmCore, worker side: registration, leasing candidates, recording results, lease expiry.
#include <google/protobuf/util/json_util.h>

#include <algorithm>

#include "common/codegen/llvm/llvm_codegen.h"
#include "common/schedule/space.h"
#include "common/util/hash.h"
#include "common/util/logging.h"
#include "common/util/status.h"
#include "server/farm_core.h"
#include "server/farm_state.h"

namespace gtco::server {
namespace {

constexpr const char* kKernelName = "gtco_kernel";

target::HardwareInfo HardwareFrom(const gtco::v1::Hardware& proto) {
  target::HardwareInfo info;
  info.target = proto.target().empty() ? "cpu" : proto.target();
  info.cpu_model = proto.cpu_model();
  info.cpu_features.assign(proto.cpu_features().begin(), proto.cpu_features().end());
  info.cores = std::max(1, proto.cores());
  if (proto.l1d_bytes() > 0) info.l1d_bytes = proto.l1d_bytes();
  if (proto.l2_bytes() > 0) info.l2_bytes = proto.l2_bytes();
  if (proto.l3_bytes() > 0) info.l3_bytes = proto.l3_bytes();
  info.memory_bytes = proto.memory_bytes();
  return info;
}

const char* ErrorKindName(gtco::v1::ErrorKind kind) {
  switch (kind) {
    case gtco::v1::ERROR_KIND_COMPILE: return "compile";
    case gtco::v1::ERROR_KIND_RUNTIME: return "runtime";
    case gtco::v1::ERROR_KIND_TIMEOUT: return "timeout";
    case gtco::v1::ERROR_KIND_WRONG_RESULT: return "wrong_result";
    case gtco::v1::ERROR_KIND_CRASH: return "crash";
    default: return "";
  }
}

}  // namespace

absl::StatusOr<gtco::v1::RegisterReply> FarmCore::Register(
    const gtco::v1::RegisterRequest& request) {
  const std::string& target = request.hardware().target();
  if (target != "cpu" && target != "cuda") {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown worker target '", target, "'; expected 'cpu' or 'cuda'"));
  }
  std::lock_guard<std::mutex> lock(mutex_);
  auto worker = std::make_unique<WorkerState>();
  worker->row.worker_id = request.worker_id().empty() ? NewId("w") : request.worker_id();
  worker->row.target = target;
  worker->row.hostname = request.hostname();
  std::string hardware_json;
  (void)google::protobuf::util::MessageToJsonString(request.hardware(), &hardware_json);
  worker->row.hardware = hardware_json;
  worker->row.registered_unix_ms = worker->row.last_seen_unix_ms = NowMs();
  worker->hardware = HardwareFrom(request.hardware());
  worker->last_seen_ms = NowMs();
  GTCO_RETURN_IF_ERROR(db_->PutWorker(worker->row));
  GTCO_LOG(kInfo, "worker " << worker->row.worker_id << " registered from "
                            << request.hostname() << ": " << worker->hardware.Summary());
  gtco::v1::RegisterReply reply;
  reply.set_worker_id(worker->row.worker_id);
  reply.set_lease_seconds(options_.lease_seconds);
  reply.set_heartbeat_seconds(options_.heartbeat_seconds);
  workers_[worker->row.worker_id] = std::move(worker);
  changed_.notify_all();
  return reply;
}

absl::StatusOr<gtco::v1::LeaseReply> FarmCore::Lease(const gtco::v1::LeaseRequest& request) {
  std::unique_lock<std::mutex> lock(mutex_);
  auto found = workers_.find(request.worker_id());
  if (found == workers_.end()) {
    return absl::NotFoundError(absl::StrCat("worker '", request.worker_id(),
                                            "' is not registered with this server; register"));
  }
  WorkerState& worker = *found->second;
  int max_candidates = std::clamp(request.max_candidates(), 1, 64);
  auto deadline = std::chrono::steady_clock::now() +
                  std::chrono::milliseconds(std::clamp(request.wait_ms(), 0, 30000));
  gtco::v1::LeaseReply reply;
  while (true) {
    worker.last_seen_ms = NowMs();
    GTCO_ASSIGN_OR_RETURN(std::vector<gtco::v1::Candidate> candidates,
                          TakeCandidatesLocked(worker, max_candidates));
    for (auto& candidate : candidates) *reply.add_candidates() = std::move(candidate);
    if (reply.candidates_size() > 0 || shutting_down_) break;
    if (changed_.wait_until(lock, deadline) == std::cv_status::timeout) break;
  }
  return reply;
}

FarmCore::TaskState* FarmCore::PickTaskLocked(const WorkerState& worker) {
  TaskState* best = nullptr;
  double best_progress = 0;
  for (auto& [job_id, job] : jobs_) {
    if (job->row.state != "running" || job->row.target != worker.row.target) continue;
    for (auto& task : job->tasks) {
      if (task->Finished()) continue;
      bool has_work = !task->pending.empty() || (task->Remaining() > 0 && !task->exhausted);
      if (!has_work) continue;
      // Least progress first (done + in flight over allotted): an even pace across tasks.
      double progress = static_cast<double>(task->trials_done + task->outstanding.size() -
                                            task->pending.size()) /
                        std::max<int64_t>(1, task->row.trials_allotted);
      if (best == nullptr || progress < best_progress) {
        best = task.get();
        best_progress = progress;
      }
    }
  }
  return best;
}

absl::Status FarmCore::ProposeLocked(TaskState& task, const WorkerState& worker) {
  if (!task.search) {
    GTCO_ASSIGN_OR_RETURN(schedule::SearchSpace space,
                          schedule::SearchSpace::Create(task.workload, worker.hardware));
    search::EvolutionaryOptions search_options;
    search_options.seed = rng_();
    task.search = std::make_unique<search::EvolutionarySearch>(std::move(space), search_options);
    for (const db::MeasurementRow& measurement : task.history) {
      auto trace = schedule::Trace::Parse(measurement.trace);
      if (trace.ok()) task.search->Observe(*trace, measurement.ok, measurement.median_seconds);
    }
    task.history.clear();
  }
  int64_t count = std::min<int64_t>(options_.default_round_size, task.Remaining());
  std::vector<schedule::Trace> traces = task.search->Propose(static_cast<int>(count));
  if (traces.empty()) {
    task.exhausted = true;
    return absl::OkStatus();
  }
  int64_t now = NowMs();
  for (const schedule::Trace& trace : traces) {
    db::CandidateRow row;
    row.candidate_id = NewId(task.row.task_id + ".c");
    row.task_id = task.row.task_id;
    row.workload_key = task.row.workload_key;
    row.target = task.row.target;
    row.trace = trace.ToString();
    row.state = "pending";
    row.created_unix_ms = now;
    GTCO_RETURN_IF_ERROR(db_->PutCandidate(row));
    task.outstanding[row.candidate_id] = row.trace;
    task.pending.push_back(row.candidate_id);
  }
  if (task.row.state == "pending") {
    task.row.state = "running";
    GTCO_RETURN_IF_ERROR(db_->UpdateTaskState(task.row.task_id, "running"));
  }
  return absl::OkStatus();
}

absl::StatusOr<gtco::v1::Candidate> FarmCore::MakeCandidateLocked(TaskState& task,
                                                                  const std::string& candidate_id,
                                                                  const std::string& trace_text) {
  GTCO_ASSIGN_OR_RETURN(schedule::Trace trace, schedule::Trace::Parse(trace_text));
  GTCO_ASSIGN_OR_RETURN(ir::LoweredFunc func,
                        schedule::LowerSchedule(task.workload, trace, kKernelName));
  GTCO_ASSIGN_OR_RETURN(std::string program, codegen::EmitLlvmIr(func));
  gtco::v1::Candidate candidate;
  candidate.set_candidate_id(candidate_id);
  candidate.set_task_id(task.row.task_id);
  candidate.set_workload_key(task.row.workload_key);
  candidate.set_workload(task.workload.CanonicalString());
  candidate.set_trace(trace_text);
  candidate.set_entry(kKernelName);
  candidate.set_program_hash(util::HexDigest128(program));
  candidate.set_program(std::move(program));
  return candidate;
}

absl::StatusOr<std::vector<gtco::v1::Candidate>> FarmCore::TakeCandidatesLocked(
    const WorkerState& worker, int max_candidates) {
  std::vector<gtco::v1::Candidate> taken;
  int64_t now = NowMs();
  int64_t deadline = now + options_.lease_seconds * 1000LL;
  while (static_cast<int>(taken.size()) < max_candidates) {
    TaskState* task = PickTaskLocked(worker);
    if (task == nullptr) break;
    if (task->pending.empty()) {
      GTCO_RETURN_IF_ERROR(ProposeLocked(*task, worker));
      if (task->pending.empty()) {
        UpdateTaskCompletionLocked(*jobs_.at(task->row.job_id), *task);
        UpdateJobCompletionLocked(*jobs_.at(task->row.job_id));
        continue;
      }
    }
    std::string candidate_id = task->pending.front();
    task->pending.pop_front();
    const std::string& trace_text = task->outstanding.at(candidate_id);
    absl::StatusOr<gtco::v1::Candidate> candidate =
        MakeCandidateLocked(*task, candidate_id, trace_text);
    if (!candidate.ok()) {
      // A schedule the generator cannot lower is a failed trial, recorded like any other.
      gtco::v1::MeasureResult failed;
      failed.set_candidate_id(candidate_id);
      failed.set_error_kind(gtco::v1::ERROR_KIND_COMPILE);
      failed.set_error(absl::StrCat("lowering failed: ", candidate.status().message()));
      GTCO_RETURN_IF_ERROR(RecordResultLocked(worker, failed).status());
      continue;
    }
    GTCO_RETURN_IF_ERROR(db_->LeaseCandidate(candidate_id, worker.row.worker_id, deadline));
    task->leased_at_ms[candidate_id] = now;
    candidate->set_lease_deadline_unix_ms(deadline);
    taken.push_back(std::move(*candidate));
  }
  return taken;
}

absl::StatusOr<gtco::v1::ReportReply> FarmCore::Report(const gtco::v1::ReportRequest& request) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto found = workers_.find(request.worker_id());
  if (found == workers_.end()) {
    return absl::NotFoundError(absl::StrCat("worker '", request.worker_id(),
                                            "' is not registered with this server; register"));
  }
  WorkerState& worker = *found->second;
  worker.last_seen_ms = NowMs();
  gtco::v1::ReportReply reply;
  for (const gtco::v1::MeasureResult& result : request.results()) {
    absl::StatusOr<bool> stored = RecordResultLocked(worker, result);
    if (!stored.ok()) {
      if (stored.status().code() != absl::StatusCode::kNotFound) return stored.status();
      reply.set_rejected(reply.rejected() + 1);
      if (metrics_) metrics_->CountRejectedResult("unknown_candidate");
      continue;
    }
    if (*stored) {
      reply.set_stored(reply.stored() + 1);
    } else {
      reply.set_duplicates(reply.duplicates() + 1);
      if (metrics_) metrics_->CountRejectedResult("duplicate");
    }
  }
  return reply;
}

absl::StatusOr<bool> FarmCore::RecordResultLocked(const WorkerState& worker,
                                                  const gtco::v1::MeasureResult& result) {
  GTCO_ASSIGN_OR_RETURN(std::optional<db::CandidateRow> candidate,
                        db_->GetCandidate(result.candidate_id()));
  if (!candidate) {
    return absl::NotFoundError(absl::StrCat("unknown candidate '", result.candidate_id(), "'"));
  }
  bool ok = result.ok() && result.verified() && result.median_seconds() > 0;
  db::MeasurementRow row;
  row.candidate_id = candidate->candidate_id;
  row.task_id = candidate->task_id;
  row.workload_key = candidate->workload_key;
  row.target = candidate->target;
  row.trace = candidate->trace;
  row.program_hash = candidate->program_hash;
  row.ok = ok;
  row.error_kind = ok ? "" : ErrorKindName(result.error_kind());
  if (!ok && row.error_kind.empty()) row.error_kind = "runtime";
  row.error = ok ? "" : (result.error().empty() ? "result not verified" : result.error());
  row.median_seconds = result.median_seconds();
  row.min_seconds = result.min_seconds();
  row.max_seconds = result.max_seconds();
  row.stddev_seconds = result.stddev_seconds();
  row.repeats = result.repeats();
  row.compile_seconds = result.compile_seconds();
  row.worker_id = worker.row.worker_id;
  row.hardware = worker.hardware.Summary();
  row.measured_unix_ms = NowMs();
  GTCO_ASSIGN_OR_RETURN(bool stored, db_->RecordMeasurement(row));
  if (!stored) return false;
  if (metrics_) metrics_->CountTrial(row.target, ok ? "ok" : row.error_kind);

  auto task_found = tasks_.find(row.task_id);
  if (task_found == tasks_.end()) return true;  // job not driven by this server
  TaskState& task = *task_found->second;
  task.outstanding.erase(row.candidate_id);
  task.pending.erase(std::remove(task.pending.begin(), task.pending.end(), row.candidate_id),
                     task.pending.end());
  auto leased = task.leased_at_ms.find(row.candidate_id);
  if (leased != task.leased_at_ms.end()) {
    if (metrics_) metrics_->ObserveMeasurementSeconds(row.target, (NowMs() - leased->second) / 1e3);
    task.leased_at_ms.erase(leased);
  }
  ++task.trials_done;
  if (!ok) {
    ++task.trials_failed;
    if (task.first_error.empty()) task.first_error = row.error;
  } else if (task.best_seconds == 0 || row.median_seconds < task.best_seconds) {
    task.best_seconds = row.median_seconds;
  }
  auto trace = schedule::Trace::Parse(row.trace);
  if (task.search && trace.ok()) task.search->Observe(*trace, ok, row.median_seconds);
  if (!task.search) task.history.push_back(row);
  JobState& job = *jobs_.at(task.row.job_id);
  UpdateTaskCompletionLocked(job, task);
  UpdateJobCompletionLocked(job);
  TouchJobLocked(job);
  return true;
}

absl::Status FarmCore::Heartbeat(const gtco::v1::HeartbeatRequest& request) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto found = workers_.find(request.worker_id());
  if (found == workers_.end()) {
    return absl::NotFoundError(absl::StrCat("worker '", request.worker_id(),
                                            "' is not registered with this server; register"));
  }
  found->second->last_seen_ms = NowMs();
  int64_t deadline = NowMs() + options_.lease_seconds * 1000LL;
  for (const std::string& candidate_id : request.candidate_ids()) {
    GTCO_ASSIGN_OR_RETURN(auto candidate, db_->GetCandidate(candidate_id));
    if (candidate && candidate->state == "leased" && candidate->worker_id == request.worker_id()) {
      GTCO_RETURN_IF_ERROR(db_->LeaseCandidate(candidate_id, request.worker_id(), deadline));
    }
  }
  return absl::OkStatus();
}

void FarmCore::Tick() {
  std::lock_guard<std::mutex> lock(mutex_);
  int64_t now = NowMs();
  absl::StatusOr<std::vector<std::string>> expired = db_->ExpireLeases(now);
  if (!expired.ok()) {
    GTCO_LOG(kError, "lease expiry: " << expired.status());
  } else {
    for (const std::string& candidate_id : *expired) {
      std::string task_id = candidate_id.substr(0, candidate_id.rfind(".c"));
      auto found = tasks_.find(task_id);
      if (found == tasks_.end()) continue;
      TaskState& task = *found->second;
      if (task.Finished() || !task.outstanding.count(candidate_id)) continue;
      task.pending.push_front(candidate_id);
      task.leased_at_ms.erase(candidate_id);
      GTCO_LOG(kWarning, "lease of " << candidate_id << " expired; handing it to another worker");
    }
    if (!expired->empty()) changed_.notify_all();
  }
  if (!metrics_) return;
  std::map<std::string, int64_t> jobs_by_state;
  std::map<std::string, int64_t> queue_by_target;
  for (auto& [job_id, job] : jobs_) {
    ++jobs_by_state[job->row.state];
    for (auto& task : job->tasks) {
      if (!task->Finished()) {
        queue_by_target[task->row.target] += task->pending.size() + std::max<int64_t>(0, task->Remaining());
      }
    }
  }
  metrics_->SetJobsByState(jobs_by_state);
  for (const char* target : {"cpu", "cuda"}) {
    metrics_->SetQueueDepth(target, queue_by_target[target]);
    int64_t alive = 0;
    for (auto& [worker_id, worker] : workers_) {
      if (worker->row.target == target &&
          now - worker->last_seen_ms < 3000LL * options_.heartbeat_seconds) {
        ++alive;
      }
    }
    metrics_->SetConnectedWorkers(target, alive);
  }
}

}  // namespace gtco::server
