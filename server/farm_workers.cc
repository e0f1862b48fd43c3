// FarmCore, worker side: registration, recording results, heartbeats and lease expiry.
#include <algorithm>
#include <cmath>

#include "common/schedule/space.h"
#include "common/util/hash.h"
#include "common/util/logging.h"
#include "common/util/status.h"
#include "server/farm_core.h"
#include "server/farm_state.h"

namespace gtco::server {

const char* TrialErrorName(TrialError error) {
  switch (error) {
    case TrialError::kCompile:
      return "compile";
    case TrialError::kRuntime:
      return "runtime";
    case TrialError::kTimeout:
      return "timeout";
    case TrialError::kWrongResult:
      return "wrong_result";
    case TrialError::kCrash:
      return "crash";
    case TrialError::kNone:
      break;
  }
  return "";
}

absl::StatusOr<WorkerTerms> FarmCore::Register(const WorkerHello& hello) {
  const target::HardwareInfo& hardware = hello.hardware;
  if (hardware.target == target::Target::kCuda &&
      (hardware.sm_major <= 0 || hardware.sm_count <= 0)) {
    return absl::InvalidArgumentError(
        "a cuda worker must report its GPU's compute capability and SM count at registration");
  }
  const std::string worker_id = hello.worker_id.empty() ? NewId("w") : hello.worker_id;
  GTCO_ASSIGN_OR_RETURN(std::shared_ptr<const Worker> worker,
                        workers_.Register(hello, worker_id, NowMs()));
  if (metrics_) {
    metrics_->SetWorkerInfo(worker_id, hello.hostname, hardware.target,
                            worker->hardware.Summary());
  }
  WorkerTerms terms;
  terms.worker_id = worker_id;
  terms.lease_seconds = options_.lease_seconds;
  terms.heartbeat_seconds = options_.heartbeat_seconds;
  leases_.Demand();
  return terms;
}

absl::StatusOr<ReportTally> FarmCore::Report(const std::string& worker_id,
                                             const std::vector<TrialResult>& results) {
  GTCO_ASSIGN_OR_RETURN(std::shared_ptr<const Worker> worker, workers_.Touch(worker_id, NowMs()));
  ReportTally tally;
  for (const TrialResult& result : results) {
    absl::StatusOr<bool> stored = RecordResult(*worker, result);
    if (!stored.ok()) {
      const absl::StatusCode code = stored.status().code();
      if (code != absl::StatusCode::kNotFound && code != absl::StatusCode::kPermissionDenied) {
        return stored.status();
      }
      ++tally.rejected;
      GTCO_LOG(kWarning, "rejected a result from " << worker_id << ": "
                                                   << stored.status().message());
      if (metrics_) {
        metrics_->CountRejectedResult(code == absl::StatusCode::kNotFound ? "unknown_candidate"
                                                                          : "not_lease_holder");
      }
      continue;
    }
    if (*stored) {
      ++tally.stored;
    } else {
      ++tally.duplicates;
      if (metrics_) metrics_->CountRejectedResult("duplicate");
    }
  }
  workers_.CountResults(worker_id, tally.stored, NowMs());
  return tally;
}

absl::StatusOr<bool> FarmCore::RecordResult(const Worker& worker, const TrialResult& result) {
  // The database alone decides whether the result is new (it stores a candidate's measurement
  // once), so two reports of one candidate racing here store it once.
  GTCO_ASSIGN_OR_RETURN(std::optional<db::CandidateRow> candidate,
                        db_->GetCandidate(result.candidate_id));
  if (!candidate) {
    return absl::NotFoundError(absl::StrCat("unknown candidate '", result.candidate_id, "'"));
  }
  // Only the lease holder may report a candidate, and only for its own target; a measured
  // candidate falls through to the duplicate check.
  if (candidate->state != db::CandidateState::kMeasured &&
      (candidate->state != db::CandidateState::kLeased ||
       candidate->worker_id != worker.row.worker_id)) {
    return absl::PermissionDeniedError(absl::StrCat("candidate '", result.candidate_id,
                                                    "' is not leased to worker '",
                                                    worker.row.worker_id, "'"));
  }
  if (candidate->target != worker.row.target) {
    return absl::PermissionDeniedError(absl::StrCat("candidate '", result.candidate_id,
                                                    "' is for target ",
                                                    target::TargetName(candidate->target)));
  }
  // Timings a worker could not have measured (NaN, infinite, negative) make a failed trial and
  // are stored as 0: the database refuses NaN, and the cost model must never learn from them.
  const bool finite_times =
      std::isfinite(result.median_seconds) && std::isfinite(result.min_seconds) &&
      std::isfinite(result.max_seconds) && std::isfinite(result.stddev_seconds) &&
      std::isfinite(result.compile_seconds);
  bool ok = result.ok && result.verified && finite_times && result.median_seconds > 0;
  db::MeasurementRow row;
  row.candidate_id = candidate->candidate_id;
  row.task_id = candidate->task_id;
  row.workload_key = candidate->workload_key;
  row.target = candidate->target;
  row.trace = candidate->trace;
  row.program_hash = candidate->program_hash;
  row.ok = ok;
  row.error_kind = ok ? "" : TrialErrorName(result.error_kind);
  if (!ok && row.error_kind.empty()) row.error_kind = "runtime";
  row.error = ok ? "" : (result.error.empty() ? "result not verified" : result.error);
  if (result.ok && !finite_times) row.error = "the worker reported a timing that is not finite";
  auto timing = [finite_times](double seconds) { return finite_times ? seconds : 0.0; };
  row.median_seconds = timing(result.median_seconds);
  row.min_seconds = timing(result.min_seconds);
  row.max_seconds = timing(result.max_seconds);
  row.stddev_seconds = timing(result.stddev_seconds);
  row.repeats = result.repeats;
  row.compile_seconds = timing(result.compile_seconds);
  row.worker_id = worker.row.worker_id;
  row.hardware = worker.hardware.Summary();
  row.measured_unix_ms = NowMs();
  GTCO_ASSIGN_OR_RETURN(bool stored, db_->RecordMeasurement(row));
  if (!stored) return false;
  if (metrics_) metrics_->CountTrial(row.target, ok ? "ok" : row.error_kind);
  std::optional<int64_t> leased_at = leases_.TakeLeasedAt(row.candidate_id);
  if (metrics_ && leased_at) {
    metrics_->ObserveMeasurementSeconds(row.target, (NowMs() - *leased_at) / 1e3);
  }

  std::optional<costmodel::Sample> sample;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto task_found = tasks_.find(row.task_id);
    if (task_found == tasks_.end()) return true;  // job not driven by this server
    Task& task = *task_found->second;
    task.outstanding.erase(row.candidate_id);
    task.pending.erase(std::remove(task.pending.begin(), task.pending.end(), row.candidate_id),
                       task.pending.end());
    ++task.trials_done;
    if (!ok) {
      ++task.trials_failed;
      if (task.first_error.empty()) task.first_error = row.error;
    }
    // A new best of the task (not merely of one of its mappings) is what its siblings try.
    const bool task_best = ok && task.means.Add(row.trace, row.median_seconds);
    if (ok) task.best_seconds = task.means.best;
    task.best_history.push_back(task.best_seconds);
    auto features = task.features.find(row.candidate_id);
    if (features != task.features.end()) {
      if (ok) {
        sample = costmodel::Sample{std::move(features->second), row.workload_key,
                                   row.median_seconds};
      }
      task.features.erase(features);
    }
    // The class whose search proposed it (the measuring worker's, for one proposed before a
    // restart and not lowered since).
    std::string hardware_class = worker.hardware_class;
    if (auto owner = task.candidate_class.find(row.candidate_id);
        owner != task.candidate_class.end()) {
      if (!owner->second.empty()) hardware_class = owner->second;
      task.candidate_class.erase(owner);
    }
    TaskClass* state = task.Class(hardware_class);
    const int mapping_index = state == nullptr ? -1 : state->MappingOfTrace(row.trace);
    if (mapping_index >= 0) {
      MappingState& mapping = state->mappings[mapping_index];
      ++mapping.trials;
      mapping.in_flight = std::max<int64_t>(0, mapping.in_flight - 1);
      if (ok) {
        mapping.means.Add(row.trace, row.median_seconds);
        mapping.best_seconds = mapping.means.best;
      }
      if (task_best) {
        // Transfer within the job: the other tasks' searches on this hardware try the nearest
        // schedule of their own (same sketch only; a model's matmuls differ in a size or two).
        for (const auto& sibling : jobs_.at(task.row.job_id)->tasks) {
          if (sibling.get() == &task || sibling->Finished() ||
              sibling->Class(hardware_class) == nullptr) {
            continue;
          }
          sibling->inbox.push_back(
              Observation{hardware_class, -1, row.trace, true, row.median_seconds, true});
        }
      }
      // The search belongs to the preparer, which feeds it before its next proposal.
      task.inbox.push_back(
          Observation{hardware_class, mapping_index, row.trace, ok, row.median_seconds});
    } else if (state == nullptr) {
      task.history.push_back(row);  // replayed when this class's spaces are created
    }
    Job& job = *jobs_.at(task.row.job_id);
    if (metrics_) metrics_->CountTeamTrial(job.row.team);
    UpdateTaskCompletionLocked(job, task);
    UpdateJobCompletionLocked(job);
    TouchJobLocked(job);
  }
  if (sample) models_.AddSample(worker.hardware.target, std::move(*sample));
  return true;
}

absl::Status FarmCore::RecordLoweringFailure(const Worker& worker, const std::string& candidate_id,
                                             const absl::Status& error) {
  TrialResult failed;
  failed.candidate_id = candidate_id;
  failed.error_kind = TrialError::kCompile;
  failed.error = absl::StrCat("lowering failed: ", error.message());
  // Recorded as this worker's result, so it takes the lease first.
  GTCO_RETURN_IF_ERROR(db_->LeaseCandidate(candidate_id, worker.row.worker_id,
                                           NowMs() + options_.lease_seconds * 1000LL));
  return RecordResult(worker, failed).status();
}

absl::Status FarmCore::Heartbeat(const std::string& worker_id,
                                 const std::vector<std::string>& held) {
  GTCO_RETURN_IF_ERROR(workers_.Touch(worker_id, NowMs()).status());
  int64_t deadline = NowMs() + options_.lease_seconds * 1000LL;
  for (const std::string& candidate_id : held) {
    GTCO_ASSIGN_OR_RETURN(auto candidate, db_->GetCandidate(candidate_id));
    if (candidate && candidate->state == db::CandidateState::kLeased &&
        candidate->worker_id == worker_id) {
      GTCO_RETURN_IF_ERROR(db_->LeaseCandidate(candidate_id, worker_id, deadline));
    }
  }
  return absl::OkStatus();
}

void FarmCore::Tick() {
  models_.TrainDue();
  const int64_t now = NowMs();
  absl::StatusOr<std::vector<std::string>> expired = db_->ExpireLeases(now);
  std::lock_guard<std::mutex> lock(mutex_);
  if (!expired.ok()) {
    GTCO_LOG(kError, "lease expiry: " << expired.status());
  } else {
    for (const std::string& candidate_id : *expired) {
      leases_.TakeLeasedAt(candidate_id);
      std::string task_id = candidate_id.substr(0, candidate_id.rfind(".c"));
      auto found = tasks_.find(task_id);
      if (found == tasks_.end()) continue;
      Task& task = *found->second;
      if (task.Finished() || !task.outstanding.count(candidate_id)) continue;
      if (metrics_) metrics_->CountLeaseExpired(task.row.target);
      task.pending.push_front(candidate_id);
      GTCO_LOG(kWarning, "lease of " << candidate_id << " expired; handing it to another worker");
    }
    if (!expired->empty()) leases_.Demand();
  }
  if (!metrics_) return;
  std::map<db::JobState, int64_t> jobs_by_state;
  std::map<target::Target, int64_t> queue_by_target;
  for (auto& [job_id, job] : jobs_) {
    ++jobs_by_state[job->row.state];
    if (job->row.state == db::JobState::kRunning) {
      queue_by_target[job->row.target] += std::max<int64_t>(0, job->BudgetLeft());
    }
    for (auto& task : job->tasks) {
      if (!task->Finished()) queue_by_target[task->row.target] += task->pending.size();
    }
  }
  metrics_->SetJobsByState(jobs_by_state);
  for (const target::Target target : {target::Target::kCpu, target::Target::kCuda}) {
    metrics_->SetQueueDepth(target, queue_by_target[target]);
    metrics_->SetConnectedWorkers(target, static_cast<int64_t>(workers_.Alive(target, now)));
    metrics_->SetLeasesOutstanding(target, static_cast<int64_t>(leases_.Outstanding(target)));
  }
}

}  // namespace gtco::server
