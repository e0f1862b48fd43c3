// WorkerRegistry: registered workers and their liveness.
#include "server/worker_registry.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/util/logging.h"
#include "common/util/status.h"

namespace gtco::server {

WorkerRegistry::WorkerRegistry(db::Database* database, int heartbeat_seconds)
    : db_(database), heartbeat_seconds_(heartbeat_seconds) {}

absl::StatusOr<std::shared_ptr<const RegisteredWorker>> WorkerRegistry::Register(
    const WorkerHello& hello, const std::string& worker_id, int64_t now_ms) {
  auto worker = std::make_shared<RegisteredWorker>();
  worker->row.worker_id = worker_id;
  worker->row.target = hello.hardware.target;
  worker->row.hostname = hello.hostname;
  worker->row.hardware = hello.hardware_text;
  worker->row.registered_unix_ms = worker->row.last_seen_unix_ms = now_ms;
  worker->hardware = hello.hardware;
  worker->hardware_class = HardwareClassOf(hello.hardware);
  worker->replays_traces =
      hello.hardware.target == target::Target::kCpu &&
      std::find(hello.languages.begin(), hello.languages.end(), "trace") != hello.languages.end();
  GTCO_RETURN_IF_ERROR(db_->PutWorker(worker->row));
  GTCO_LOG(kInfo, "worker " << worker_id << " registered from " << hello.hostname << ": "
                            << worker->hardware.Summary());
  std::lock_guard<std::mutex> lock(mutex_);
  workers_[worker_id] = Entry{worker, now_ms, 0, {}};
  return worker;
}

absl::StatusOr<std::shared_ptr<const RegisteredWorker>> WorkerRegistry::Touch(
    const std::string& worker_id, int64_t now_ms) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto found = workers_.find(worker_id);
  if (found == workers_.end()) {
    return absl::NotFoundError(
        absl::StrCat("worker '", worker_id, "' is not registered with this server; register"));
  }
  found->second.last_seen_ms = now_ms;
  return found->second.worker;
}

std::string HardwareClassOf(const target::HardwareInfo& hardware) {
  return HardwareClassOf(hardware.target, hardware.Summary());
}

std::string HardwareClassOf(target::Target target, const std::string& hardware_summary) {
  return absl::StrCat(target::TargetName(target), ": ", hardware_summary);
}

bool WorkerRegistry::AliveLocked(const Entry& entry, int64_t now_ms) const {
  return now_ms - entry.last_seen_ms < 3000LL * heartbeat_seconds_;
}

size_t WorkerRegistry::Alive(target::Target target, int64_t now_ms) const {
  std::lock_guard<std::mutex> lock(mutex_);
  size_t alive = 0;
  for (const auto& [worker_id, entry] : workers_) {
    if (entry.worker->row.target == target && AliveLocked(entry, now_ms)) ++alive;
  }
  return alive;
}

size_t WorkerRegistry::AliveInClass(const std::string& hardware_class, int64_t now_ms) const {
  std::lock_guard<std::mutex> lock(mutex_);
  size_t alive = 0;
  for (const auto& [worker_id, entry] : workers_) {
    if (entry.worker->hardware_class == hardware_class && AliveLocked(entry, now_ms)) ++alive;
  }
  return alive;
}

std::shared_ptr<const RegisteredWorker> WorkerRegistry::Reference(
    const std::string& hardware_class, int64_t now_ms) const {
  std::lock_guard<std::mutex> lock(mutex_);
  const Entry* newest = nullptr;
  for (const auto& [worker_id, entry] : workers_) {
    if (entry.worker->hardware_class != hardware_class || !AliveLocked(entry, now_ms)) continue;
    if (newest == nullptr || entry.last_seen_ms > newest->last_seen_ms) newest = &entry;
  }
  return newest == nullptr ? nullptr : newest->worker;
}

std::vector<std::string> WorkerRegistry::Classes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<std::string> classes;
  for (const auto& [worker_id, entry] : workers_) {
    if (std::find(classes.begin(), classes.end(), entry.worker->hardware_class) == classes.end()) {
      classes.push_back(entry.worker->hardware_class);
    }
  }
  return classes;
}

namespace {
constexpr int64_t kThroughputWindowMs = 60 * 1000;
}  // namespace

void WorkerRegistry::CountResults(const std::string& worker_id, int64_t count, int64_t now_ms) {
  if (count <= 0) return;
  std::lock_guard<std::mutex> lock(mutex_);
  auto found = workers_.find(worker_id);
  if (found == workers_.end()) return;
  Entry& entry = found->second;
  entry.results += count;
  entry.recent.emplace_back(now_ms, count);
  while (!entry.recent.empty() && entry.recent.front().first <= now_ms - kThroughputWindowMs) {
    entry.recent.pop_front();
  }
}

std::vector<WorkerSnapshot> WorkerRegistry::Snapshot(int64_t now_ms) const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<WorkerSnapshot> snapshot;
  for (const auto& [worker_id, entry] : workers_) {
    WorkerSnapshot worker{entry.worker, entry.last_seen_ms, AliveLocked(entry, now_ms),
                          entry.results, 0};
    for (const auto& [when, count] : entry.recent) {
      if (when > now_ms - kThroughputWindowMs) worker.results_last_minute += count;
    }
    snapshot.push_back(std::move(worker));
  }
  return snapshot;
}

}  // namespace gtco::server
