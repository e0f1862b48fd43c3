// FarmCore, preparation ahead of leases: a background thread runs the scheduler and the search
// and lowers the chosen schedules to programs (without the farm's lock) into a ready queue per
// target, so a worker's Lease is a pop from that queue and a database write.
#include <algorithm>
#include <thread>

#include "common/util/logging.h"
#include "common/util/status.h"
#include "server/farm_core.h"
#include "server/farm_state.h"

namespace gtco::server {
namespace {
/// Candidates taken from the search per batch: lowering them is what runs without the lock.
constexpr int kMaxBatch = 16;
/// Ready queue bounds per target (two per live worker in between).
constexpr size_t kMinReady = 2;
constexpr size_t kMaxReady = 256;
/// How often the preparer looks for work when nobody woke it (new jobs, expired leases).
constexpr auto kPreparerPoll = std::chrono::milliseconds(20);
/// Threads that lower one batch: one per core, at least one.
size_t LoweringThreads() { return std::max(1u, std::thread::hardware_concurrency()); }
/// How long it waits after an error (the database down or full) before it tries again.
constexpr auto kPreparerBackoff = std::chrono::milliseconds(500);
}  // namespace

bool FarmCore::WorkerAliveLocked(const Worker& worker, int64_t now_ms) const {
  return now_ms - worker.last_seen_ms < 3000LL * options_.heartbeat_seconds;
}

const FarmCore::Worker* FarmCore::ReferenceWorkerLocked(target::Target target) const {
  const Worker* newest = nullptr;
  const int64_t now = NowMs();
  for (const auto& [worker_id, worker] : workers_) {
    if (worker->row.target != target || !WorkerAliveLocked(*worker, now)) continue;
    if (newest == nullptr || worker->last_seen_ms > newest->last_seen_ms) newest = worker.get();
  }
  return newest;
}

size_t FarmCore::ReadyWantLocked(target::Target target) const {
  size_t alive = 0;
  const int64_t now = NowMs();
  for (const auto& [worker_id, worker] : workers_) {
    if (worker->row.target == target && WorkerAliveLocked(*worker, now)) ++alive;
  }
  return std::clamp(2 * alive, kMinReady, kMaxReady);
}

void FarmCore::PrepareLoop() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (!shutting_down_) {
    bool worked = false, failed = false;
    std::vector<target::Target> targets;
    for (const auto& [worker_id, worker] : workers_) {
      if (std::find(targets.begin(), targets.end(), worker->row.target) == targets.end()) {
        targets.push_back(worker->row.target);
      }
    }
    for (target::Target target : targets) {
      const Worker* worker = ReferenceWorkerLocked(target);
      if (worker == nullptr) continue;
      const size_t want = ReadyWantLocked(target);
      const size_t have = ready_[target].size();
      if (have >= want) continue;
      absl::StatusOr<int> taken = PrepareBatchLocked(
          lock, *worker, static_cast<int>(std::min<size_t>(want - have, kMaxBatch)));
      if (!taken.ok()) {
        GTCO_LOG(kError,
                 "preparing " << target::TargetName(target) << " candidates: " << taken.status());
        failed = true;
        continue;
      }
      worked |= *taken > 0;
      if (shutting_down_) return;
    }
    if (failed) {
      prepare_cv_.wait_for(lock, kPreparerBackoff, [this] { return shutting_down_; });
    } else if (!worked) {
      prepare_cv_.wait_for(lock, kPreparerPoll);
    }
  }
}

absl::StatusOr<int> FarmCore::PrepareBatchLocked(std::unique_lock<std::mutex>& lock,
                                                 const Worker& worker, int count) {
  struct Item {
    Task* task;
    std::string candidate_id;
    std::string trace;
  };
  WarmStartCostModelLocked(worker);
  std::vector<Item> batch;
  while (static_cast<int>(batch.size()) < count) {
    GTCO_ASSIGN_OR_RETURN(Task * task, NextPendingLocked(worker));
    if (task == nullptr) break;
    std::string candidate_id = task->pending.front();
    task->pending.pop_front();
    batch.push_back(Item{task, candidate_id, task->outstanding.at(candidate_id)});
  }
  if (batch.empty()) return 0;

  // Lowering reads only what does not change once a task's spaces exist (its workload, its
  // hardware and its ids), and jobs are never dropped while the server runs.
  // Lowered on every core: with many workers, lowering is most of the server's work.
  std::vector<absl::StatusOr<BuiltCandidate>> built(batch.size(),
                                                    absl::UnknownError("not lowered"));
  // As the reference worker takes programs; a worker that does not replay traces gets a "trace"
  // candidate lowered to bitcode when it leases it (LeaseReadyLocked).
  const bool as_trace = worker.replays_traces;
  preparing_ += static_cast<int64_t>(batch.size());
  lock.unlock();
  const size_t lanes = std::min<size_t>(batch.size(), LoweringThreads());
  auto lower = [&](size_t lane) {
    for (size_t index = lane; index < batch.size(); index += lanes) {
      built[index] = BuildCandidate(*batch[index].task, batch[index].candidate_id,
                                    batch[index].trace, as_trace);
    }
  };
  std::vector<std::thread> helpers;
  for (size_t lane = 1; lane < lanes; ++lane) helpers.emplace_back(lower, lane);
  lower(0);
  for (std::thread& helper : helpers) helper.join();
  lock.lock();
  preparing_ -= static_cast<int64_t>(batch.size());
  batch_lowered_.notify_all();  // they run once the lock is released, after the queueing below

  std::deque<Prepared>& queue = ready_[worker.row.target];
  for (size_t index = 0; index < batch.size(); ++index) {
    Task& task = *batch[index].task;
    const std::string& candidate_id = batch[index].candidate_id;
    // Cancelled, or its job ended, while it was being lowered.
    if (task.Finished() || !task.outstanding.count(candidate_id)) continue;
    if (!built[index].ok()) {
      // A schedule the generator cannot lower is a failed trial (the reference worker's).
      GTCO_RETURN_IF_ERROR(
          RecordLoweringFailureLocked(worker, candidate_id, built[index].status()));
      continue;
    }
    task.features[candidate_id] = std::move(built[index]->features);
    queue.push_back(Prepared{&task, std::move(built[index]->candidate)});
    ready_cv_.notify_one();
  }
  return static_cast<int>(batch.size());
}

absl::StatusOr<std::vector<LeasedCandidate>> FarmCore::LeaseReadyLocked(const Worker& worker,
                                                                        int max_candidates) {
  std::vector<LeasedCandidate> taken;
  std::deque<Prepared>& queue = ready_[worker.row.target];
  const int64_t now = NowMs();
  const int64_t deadline = now + options_.lease_seconds * 1000LL;
  while (static_cast<int>(taken.size()) < max_candidates && !queue.empty()) {
    Prepared item = std::move(queue.front());
    queue.pop_front();
    Task& task = *item.task;
    const std::string& candidate_id = item.candidate.candidate_id;
    if (task.Finished() || !task.outstanding.count(candidate_id)) continue;
    if (item.candidate.language == "trace" && !worker.replays_traces) {
      // Prepared for a worker that replays traces; this one takes the program itself.
      absl::StatusOr<BuiltCandidate> program =
          BuildCandidate(task, candidate_id, item.candidate.trace, /*as_trace=*/false);
      if (!program.ok()) {
        GTCO_RETURN_IF_ERROR(RecordLoweringFailureLocked(worker, candidate_id, program.status()));
        continue;
      }
      item.candidate = std::move(program->candidate);
    }
    absl::Status leased = db_->LeaseCandidate(candidate_id, worker.row.worker_id, deadline);
    if (!leased.ok()) {
      task.pending.push_front(candidate_id);  // lowered again by whoever takes it next
      if (taken.empty()) return leased;
      break;
    }
    task.leased_at_ms[candidate_id] = now;
    item.candidate.lease_deadline_unix_ms = deadline;
    taken.push_back(std::move(item.candidate));
  }
  if (queue.size() < ReadyWantLocked(worker.row.target)) prepare_cv_.notify_one();
  return taken;
}

}  // namespace gtco::server
