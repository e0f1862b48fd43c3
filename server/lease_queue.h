// The farm's leases: candidates lowered ahead of their lease wait in a ready queue per hardware
// class (the class their task's spaces were made for);
// a worker's Lease pops them, and the time each was leased is kept until its result arrives.
// One of the farm core's concepts, with its own lock; it never calls back into FarmCore.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "common/ir/workload.h"
#include "common/target/target.h"
#include "server/farm_types.h"

namespace gtco::server {

/// What lowering a task's candidates reads: fixed once the task's search spaces exist, and
/// shared by the task with its ready candidates, so the preparer and the Lease path read it
/// without the farm's lock.
struct TaskBuild {
  std::string task_id;
  std::string workload_key;
  ir::Workload workload;
  target::HardwareInfo hardware;  ///< the machine the task's spaces were made for
  std::string hardware_class;     ///< HardwareClassOf(hardware): the queue its candidates join
  /// Set when the task finished or was cancelled: its ready candidates are dropped, not leased.
  std::atomic<bool> withdrawn{false};
};

/// A candidate lowered ahead of its lease.
struct ReadyCandidate {
  std::shared_ptr<const TaskBuild> task;
  LeasedCandidate candidate;
};

/// Thread-safe. Lock order: a caller may hold FarmCore's lock when it calls in, never the reverse.
class LeaseQueue {
 public:
  using Clock = std::chrono::steady_clock;

  /// Appends `ready` to its hardware class's queue and wakes the waiting Leases.
  void Push(ReadyCandidate ready);
  /// Puts candidates a Lease popped but could not hand out back at the front, in order.
  void Requeue(const std::string& hardware_class, std::vector<ReadyCandidate> ready);
  /// Pops up to `max_candidates` candidates of `hardware_class` whose task still takes trials;
  /// waits until `deadline` while there are none. Empty at the deadline or at shutdown.
  std::vector<ReadyCandidate> Pop(const std::string& hardware_class, int max_candidates,
                                  Clock::time_point deadline);
  /// Candidates waiting in `hardware_class`'s queue.
  size_t Size(const std::string& hardware_class) const;

  /// Remembers when `candidate_id` of `target` was leased (for the measurement-time metric).
  void MarkLeased(const std::string& candidate_id, target::Target target, int64_t now_ms);
  /// When `candidate_id` was leased, forgetting it; nullopt when it is not held.
  std::optional<int64_t> TakeLeasedAt(const std::string& candidate_id);
  /// Candidates of `target` leased and not yet reported or expired.
  size_t Outstanding(target::Target target) const;

  // The preparer's side.
  /// Wakes the preparer (a queue ran low, a job arrived, a lease expired).
  void Demand();
  /// The preparer waits here between passes until Demand() or `timeout`; its next pass starts
  /// when this returns.
  void WaitForDemand(Clock::duration timeout);
  /// The preparer finished a pass over every target.
  void PassDone();
  /// Asks for a preparer pass and waits until one that started after this call finished, a
  /// candidate of `hardware_class` is ready, `deadline` passes or the queue shuts down (a Lease
  /// that cannot wait still gets the work that exists).
  void AwaitPass(const std::string& hardware_class, Clock::time_point deadline);

  /// Wakes every waiter; later Pops return at once.
  void Shutdown();
  bool shutting_down() const;

 private:
  mutable std::mutex mutex_;
  std::condition_variable demand_cv_;  ///< the preparer waits here
  struct Queue {
    std::deque<ReadyCandidate> items;  ///< oldest first
    std::condition_variable ready_cv;  ///< a candidate was queued, or a pass finished
  };
  std::map<std::string, Queue> ready_;  ///< by hardware class (nodes never move)
  /// Wakes every waiter of every class (a pass finished, shutdown). mutex_ held.
  void NotifyAllLocked();
  struct Held {
    target::Target target;
    int64_t leased_at_ms;
  };
  std::map<std::string, Held> leased_;  ///< by candidate id
  bool demanded_ = false;
  int64_t passes_ = 0;   ///< passes the preparer finished
  bool in_pass_ = true;  ///< the preparer is in a pass (it starts with one)
  bool shutting_down_ = false;
};

}  // namespace gtco::server
