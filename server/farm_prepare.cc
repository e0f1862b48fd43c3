// FarmCore, preparation ahead of leases: a background thread runs the scheduler (under the farm's
// lock, cheap), the search (off the lock: the searches belong to this thread) and lowers the
// chosen schedules to programs (off the lock, on every core) into the lease queue, so a worker's
// Lease is a pop from that queue and a database write.
#include <algorithm>
#include <thread>

#include "absl/strings/str_cat.h"
#include "common/util/logging.h"
#include "common/util/status.h"
#include "common/util/thread_priority.h"
#include "server/farm_core.h"
#include "server/farm_state.h"

namespace gtco::server {
namespace {
/// Candidates taken per batch: lowering them is what runs on every core.
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
/// How long a Lease that may not wait waits for the preparer's pass.
constexpr auto kMaxPassWait = std::chrono::seconds(30);
}  // namespace

size_t FarmCore::ReadyWant(const std::string& hardware_class) const {
  return std::clamp(2 * workers_.AliveInClass(hardware_class, NowMs()), kMinReady, kMaxReady);
}

void FarmCore::PrepareLoop() {
  while (!leases_.shutting_down()) {
    bool worked = false, failed = false;
    for (const std::string& hardware_class : workers_.Classes()) {
      std::shared_ptr<const Worker> worker = workers_.Reference(hardware_class, NowMs());
      if (worker == nullptr) continue;
      const size_t want = ReadyWant(hardware_class);
      const size_t have = leases_.Size(hardware_class);
      if (have >= want) continue;
      absl::StatusOr<int> taken =
          PrepareBatch(*worker, static_cast<int>(std::min<size_t>(want - have, kMaxBatch)));
      if (!taken.ok()) {
        GTCO_LOG(kError, "preparing candidates for " << hardware_class << ": " << taken.status());
        failed = true;
        continue;
      }
      worked |= *taken > 0;
    }
    leases_.PassDone();
    if (failed) std::this_thread::sleep_for(kPreparerBackoff);
    leases_.WaitForDemand(worked || failed ? std::chrono::milliseconds(0) : kPreparerPoll);
  }
}

void FarmCore::ApplyObservations(Task& task, std::vector<Observation> observations) {
  for (const Observation& observation : observations) {
    absl::StatusOr<schedule::Trace> trace = schedule::Trace::Parse(observation.trace);
    TaskClass* state = task.Class(observation.hardware_class);
    if (!trace.ok() || state == nullptr) continue;
    if (observation.suggestion) {
      for (MappingState& mapping : state->mappings) mapping.search->Suggest(*trace);
      continue;
    }
    state->mappings[observation.mapping_index].search->Observe(*trace, observation.ok,
                                                               observation.seconds);
  }
}

absl::Status FarmCore::ProposePlacements(const std::vector<Placement>& placements,
                                         std::vector<BatchItem>* batch) {
  struct Proposed {
    std::vector<db::CandidateRow> rows;
    bool searched = false;
    bool exhausted = false;
    schedule::PruneStats prune_stats;
  };
  std::vector<Proposed> proposed(placements.size());
  absl::Status written;  // the first database error; later placements are released unproposed
  const int64_t now = NowMs();
  for (size_t index = 0; index < placements.size() && written.ok(); ++index) {
    const Placement& placement = placements[index];
    MappingState& mapping = placement.state->mappings[placement.mapping_index];
    std::vector<schedule::Trace> traces = mapping.search->Propose(static_cast<int>(placement.count));
    proposed[index].searched = true;
    proposed[index].exhausted = traces.empty();
    proposed[index].prune_stats = mapping.space->prune_stats();
    std::vector<db::CandidateRow> rows;
    for (const schedule::Trace& trace : traces) {
      db::CandidateRow row;
      row.candidate_id = NewId(placement.task->row.task_id + ".c");
      row.task_id = placement.task->row.task_id;
      row.workload_key = placement.task->row.workload_key;
      row.target = placement.task->row.target;
      row.trace = trace.ToString();
      row.state = db::CandidateState::kPending;
      row.created_unix_ms = now;
      rows.push_back(std::move(row));
    }
    written = db_->PutCandidates(rows);  // one transaction per placement
    if (written.ok()) proposed[index].rows = std::move(rows);
  }
  std::lock_guard<std::mutex> lock(mutex_);
  for (size_t index = 0; index < placements.size(); ++index) {
    const Placement& placement = placements[index];
    Task& task = *placement.task;
    Job& job = *placement.job;
    TaskClass& state = *placement.state;
    MappingState& mapping = state.mappings[placement.mapping_index];
    const int64_t created = static_cast<int64_t>(proposed[index].rows.size());
    task.reserved -= placement.count;
    mapping.in_flight -= placement.count - created;
    if (proposed[index].searched) mapping.prune_stats = proposed[index].prune_stats;
    if (proposed[index].exhausted) {
      mapping.exhausted = true;
      LogDecisionLocked(job, absl::StrCat(task.row.task_id, ": mapping ", mapping.space->mapping(),
                                          " has no untried schedule left"));
    }
    for (db::CandidateRow& row : proposed[index].rows) {
      task.outstanding[row.candidate_id] = row.trace;
      task.candidate_class[row.candidate_id] = state.key;
      batch->push_back(
          BatchItem{&task, state.build, std::move(row.candidate_id), std::move(row.trace)});
    }
    if (created > 0 && task.row.state == db::TaskState::kPending) {
      // Only the state column: a failure is logged (a restart recomputes the state from the
      // measurements) and every placement is still settled.
      task.row.state = db::TaskState::kRunning;
      absl::Status state = db_->UpdateTaskState(task.row.task_id, db::TaskState::kRunning);
      if (!state.ok()) GTCO_LOG(kError, "task " << task.row.task_id << ": " << state);
    }
    UpdateTaskCompletionLocked(job, task);
    UpdateJobCompletionLocked(job);
  }
  return written;
}

absl::StatusOr<int> FarmCore::PrepareBatch(const Worker& worker, int count) {
  WarmStartCostModel(worker);
  std::vector<BatchItem> batch;
  std::vector<Placement> placements;
  std::vector<std::pair<Task*, std::vector<Observation>>> observations;
  absl::Status scheduled;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto& [task_id, task] : tasks_) {
      if (task->inbox.empty()) continue;
      observations.emplace_back(task, std::move(task->inbox));
      task->inbox.clear();
    }
    int64_t planned = 0;
    while (static_cast<int64_t>(batch.size()) + planned < count) {
      std::string candidate_id;
      TaskClass* state = nullptr;
      absl::StatusOr<Task*> waiting = TaskWithPendingLocked(worker, &candidate_id, &state);
      if (!waiting.ok()) {
        scheduled = waiting.status();
        break;
      }
      if (Task* task = *waiting) {
        task->pending.erase(std::find(task->pending.begin(), task->pending.end(), candidate_id));
        task->candidate_class[candidate_id] = state->key;
        batch.push_back(
            BatchItem{task, state->build, candidate_id, task->outstanding.at(candidate_id)});
        continue;
      }
      absl::StatusOr<std::vector<Placement>> round = ScheduleRoundLocked(worker);
      if (!round.ok()) {
        scheduled = round.status();
        break;
      }
      if (round->empty()) break;
      for (const Placement& placement : *round) planned += placement.count;
      placements.insert(placements.end(), round->begin(), round->end());
    }
  }
  // The searches (and the cost model's scoring inside them) run without the farm's lock, and at
  // the lowest CPU priority like the lowering below: a busy thread of normal priority beside a
  // kernel a worker on this host was timing slowed it 6 % (240 -> 254 µs; at nice 19, 243).
  absl::Status proposed = absl::OkStatus();
  util::RunInBackground([&] {
    for (auto& [task, measured] : observations) ApplyObservations(*task, std::move(measured));
    proposed = ProposePlacements(placements, &batch);
  });
  if (batch.empty()) {
    GTCO_RETURN_IF_ERROR(scheduled);
    GTCO_RETURN_IF_ERROR(proposed);
    return 0;
  }

  // Lowering reads only the tasks' build contexts, fixed once their spaces exist.
  std::vector<absl::StatusOr<BuiltCandidate>> built(batch.size(),
                                                    absl::UnknownError("not lowered"));
  // As the reference worker takes programs; a worker that does not replay traces gets a "trace"
  // candidate lowered to bitcode when it leases it.
  const bool as_trace = worker.replays_traces;
  const size_t lanes = std::min<size_t>(batch.size(), LoweringThreads());
  auto lower = [&](size_t lane) {
    // Lowering can wait; a worker timing candidates on this host cannot: the helpers run at the
    // lowest CPU priority (util/thread_priority.h). They hold no lock, so no RPC waits on them.
    util::MakeCurrentThreadBackground();
    for (size_t index = lane; index < batch.size(); index += lanes) {
      built[index] =
          BuildCandidate(*batch[index].build, batch[index].candidate_id, batch[index].trace,
                         as_trace);
    }
  };
  std::vector<std::thread> helpers;
  for (size_t lane = 0; lane < lanes; ++lane) helpers.emplace_back(lower, lane);
  for (std::thread& helper : helpers) helper.join();

  struct Failure {
    Task* task;
    std::string candidate_id;
    absl::Status error;
  };
  std::vector<Failure> failures;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (size_t index = 0; index < batch.size(); ++index) {
      Task& task = *batch[index].task;
      const std::string& candidate_id = batch[index].candidate_id;
      // Cancelled, or its job ended, while it was being lowered.
      if (task.Finished() || !task.outstanding.count(candidate_id)) continue;
      if (!built[index].ok()) {
        failures.push_back(Failure{&task, candidate_id, built[index].status()});
        continue;
      }
      task.features[candidate_id] = std::move(built[index]->features);
      leases_.Push(ReadyCandidate{batch[index].build, std::move(built[index]->candidate)});
    }
  }
  // A schedule the generator cannot lower is a failed trial (the reference worker's); one the
  // database could not record waits to be lowered again.
  absl::Status recorded;
  for (const Failure& failure : failures) {
    absl::Status status = RecordLoweringFailure(worker, failure.candidate_id, failure.error);
    if (status.ok()) continue;
    if (recorded.ok()) recorded = status;
    std::lock_guard<std::mutex> lock(mutex_);
    if (failure.task->outstanding.count(failure.candidate_id)) {
      failure.task->pending.push_back(failure.candidate_id);
    }
  }
  GTCO_RETURN_IF_ERROR(recorded);
  GTCO_RETURN_IF_ERROR(scheduled);
  GTCO_RETURN_IF_ERROR(proposed);
  return static_cast<int>(batch.size());
}

absl::StatusOr<std::vector<LeasedCandidate>> FarmCore::Lease(const std::string& worker_id,
                                                             int max_candidates, int wait_ms) {
  GTCO_ASSIGN_OR_RETURN(std::shared_ptr<const Worker> worker, workers_.Touch(worker_id, NowMs()));
  const target::Target target = worker->row.target;
  const std::string& hardware_class = worker->hardware_class;
  max_candidates = std::clamp(max_candidates, 1, 64);
  const auto start = LeaseQueue::Clock::now();
  const auto deadline = start + std::chrono::milliseconds(std::clamp(wait_ms, 0, 30000));
  std::vector<LeasedCandidate> leased;
  bool awaited_pass = false;
  while (leased.empty()) {
    std::vector<ReadyCandidate> ready =
        leases_.Pop(hardware_class, max_candidates, wait_ms > 0 ? deadline : start);
    if (ready.empty()) {
      if (wait_ms > 0 || awaited_pass || leases_.shutting_down()) break;
      // A caller that cannot wait still gets the work there is: the preparer makes one pass.
      leases_.AwaitPass(hardware_class, start + kMaxPassWait);
      awaited_pass = true;
      continue;
    }
    const int64_t now = NowMs();
    const int64_t lease_deadline = now + options_.lease_seconds * 1000LL;
    for (size_t index = 0; index < ready.size(); ++index) {
      ReadyCandidate& item = ready[index];
      const std::string candidate_id = item.candidate.candidate_id;
      if (item.candidate.language == "trace" && !worker->replays_traces) {
        // Prepared for a worker that replays traces; this one takes the program itself.
        absl::StatusOr<BuiltCandidate> program =
            BuildCandidate(*item.task, candidate_id, item.candidate.trace, /*as_trace=*/false);
        if (!program.ok()) {
          absl::Status recorded = RecordLoweringFailure(*worker, candidate_id, program.status());
          if (!recorded.ok()) {
            // The database failed: this one and the rest go back to the queue.
            leases_.Requeue(hardware_class, {std::make_move_iterator(ready.begin() + index),
                                             std::make_move_iterator(ready.end())});
            if (leased.empty()) return recorded;
            break;
          }
          continue;
        }
        item.candidate = std::move(program->candidate);
      }
      absl::Status written = db_->LeaseCandidate(candidate_id, worker->row.worker_id,
                                                 lease_deadline);
      if (!written.ok()) {
        // The database failed: the candidates go back to the queue for the next Lease.
        leases_.Requeue(hardware_class, {std::make_move_iterator(ready.begin() + index),
                                         std::make_move_iterator(ready.end())});
        if (leased.empty()) return written;
        break;
      }
      leases_.MarkLeased(candidate_id, target, now);
      item.candidate.lease_deadline_unix_ms = lease_deadline;
      leased.push_back(std::move(item.candidate));
    }
    if (wait_ms > 0 && LeaseQueue::Clock::now() >= deadline) break;
  }
  if (leases_.Size(hardware_class) < ReadyWant(hardware_class)) leases_.Demand();
  if (metrics_ && !leased.empty()) {
    metrics_->CountLeasesGranted(target, static_cast<int64_t>(leased.size()));
  }
  return leased;
}

}  // namespace gtco::server
