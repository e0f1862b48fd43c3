// The farm's workers: who registered, with which hardware, and when each was last seen. One of
// the farm core's concepts, with its own lock; it never calls back into FarmCore.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/db/database.h"
#include "common/target/target.h"
#include "server/farm_types.h"

namespace gtco::server {

/// A registered worker; immutable (registering again replaces it).
struct RegisteredWorker {
  db::WorkerRow row;
  target::HardwareInfo hardware;
  /// HardwareClassOf(hardware): workers of one class share the tasks' search spaces and ready
  /// queues, and measure each other's candidates.
  std::string hardware_class;
  /// A CPU worker that replays traces itself: it gets "trace" candidates, and the server skips
  /// emitting their LLVM bitcode.
  bool replays_traces = false;
};

/// A registered worker's liveness and recent throughput (the dashboard's workers page).
struct WorkerSnapshot {
  std::shared_ptr<const RegisteredWorker> worker;
  int64_t last_seen_ms = 0;
  bool alive = false;               ///< seen within three heartbeats
  int64_t results = 0;              ///< results stored since it registered with this server
  int64_t results_last_minute = 0;  ///< of which in the last 60 s
};

/// Thread-safe. Lock order: a caller may hold FarmCore's lock when it calls in, never the reverse.
class WorkerRegistry {
 public:
  /// `database` must outlive this object; a worker counts as alive for three heartbeats.
  WorkerRegistry(db::Database* database, int heartbeat_seconds);

  /// Records the worker (as `worker_id`) in the database and here.
  absl::StatusOr<std::shared_ptr<const RegisteredWorker>> Register(const WorkerHello& hello,
                                                                   const std::string& worker_id,
                                                                   int64_t now_ms);
  /// The worker, marked seen at `now_ms`; NOT_FOUND (telling it to register) when unknown.
  absl::StatusOr<std::shared_ptr<const RegisteredWorker>> Touch(const std::string& worker_id,
                                                                int64_t now_ms);
  /// Workers of `target` seen within three heartbeats of `now_ms`.
  size_t Alive(target::Target target, int64_t now_ms) const;
  /// Live workers of the hardware class `hardware_class`.
  size_t AliveInClass(const std::string& hardware_class, int64_t now_ms) const;
  /// The live worker of `hardware_class` seen last (it stands for its class when the preparer
  /// lowers candidates); nullptr when none is alive.
  std::shared_ptr<const RegisteredWorker> Reference(const std::string& hardware_class,
                                                    int64_t now_ms) const;
  /// The hardware classes of every registered worker, alive or not.
  std::vector<std::string> Classes() const;
  /// Counts `count` results of `worker_id` stored at `now_ms` (unknown workers are ignored).
  void CountResults(const std::string& worker_id, int64_t count, int64_t now_ms);
  /// Every registered worker, by id, as of `now_ms`.
  std::vector<WorkerSnapshot> Snapshot(int64_t now_ms) const;

 private:
  struct Entry {
    std::shared_ptr<const RegisteredWorker> worker;
    int64_t last_seen_ms = 0;
    int64_t results = 0;
    std::deque<std::pair<int64_t, int64_t>> recent;  ///< (when, results) of the last minute
  };
  bool AliveLocked(const Entry& entry, int64_t now_ms) const;

  db::Database* const db_;
  const int heartbeat_seconds_;
  mutable std::mutex mutex_;
  std::map<std::string, Entry> workers_;
};

}  // namespace gtco::server
